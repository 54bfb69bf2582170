"""BERT encoder and task models."""

from keras_bert.models.classifier import BertClassifier
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.masked_lm import BertMaskedLM
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.models.multiple_choice import BertMultipleChoice
from keras_bert.models.ranking_loss import MultipleNegativesRankingLoss
from keras_bert.models.span_labeler import BertSpanLabeler
from keras_bert.models.task import Task
from keras_bert.models.text_embedder import BertTextEmbedder
from keras_bert.models.token_classifier import BertTokenClassifier

__all__ = [
    "BertClassifier",
    "BertEncoder",
    "BertMaskedLM",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTextEmbedder",
    "BertTokenClassifier",
    "MultipleNegativesRankingLoss",
    "Task",
]
