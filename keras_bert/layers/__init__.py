"""Keras layers of the BERT encoder and its heads."""

from keras_bert.layers.dense import Dense
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.pooler import Pooler
from keras_bert.layers.saved_model_encoder import SavedModelEncoder
from keras_bert.layers.sentence_pooling import SentencePooling
from keras_bert.layers.transformer_block import TransformerBlock

__all__ = [
    "BertEmbeddings", "Dense", "MaskedLMHead", "Pooler", "SavedModelEncoder", "SentencePooling",
    "TransformerBlock",
]
