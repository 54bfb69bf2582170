"""keras_bert: BERT on TensorFlow and Keras 3."""

from keras_bert import backend as _backend  # noqa: F401  (selects the TensorFlow backend first)
from keras_bert import checkpoints, export, presets  # `keras_bert.presets()` lists presets
from keras_bert.config import BertConfig
from keras_bert.models import (
    BertClassifier,
    BertEncoder,
    BertMaskedLM,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTextEmbedder,
    BertTokenClassifier,
    MultipleNegativesRankingLoss,
)
from keras_bert.presets import list_presets, load_preset
from keras_bert.text import (
    BertMaskedLMPreprocessor,
    BertMultipleChoicePreprocessor,
    BertPackInputs,
    BertPreprocessor,
    BertPretrainerPreprocessor,
    BertTextEmbedderPreprocessor,
    BertTokenClassifierPreprocessor,
    BertTokenizer,
    MaskedLMMasker,
)

__version__ = "0.1.0"

__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertMaskedLM",
    "BertMaskedLMPreprocessor",
    "BertMultipleChoice",
    "BertMultipleChoicePreprocessor",
    "BertPackInputs",
    "BertPreprocessor",
    "BertPretrainer",
    "BertPretrainerPreprocessor",
    "BertSpanLabeler",
    "BertTextEmbedder",
    "BertTextEmbedderPreprocessor",
    "BertTokenClassifier",
    "BertTokenClassifierPreprocessor",
    "BertTokenizer",
    "MaskedLMMasker",
    "MultipleNegativesRankingLoss",
    "__version__",
    "checkpoints",
    "export",
    "list_presets",
    "load_preset",
    "presets",
]
