"""BERT encoder and task models."""

from keras_bert.models.encoder import BertEncoder

__all__ = ["BertEncoder"]
