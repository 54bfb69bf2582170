"""In-graph text preprocessing: tokenizer, packer, masked-LM masker, preprocessors."""

from keras_bert.text.masked_lm_preprocessor import (BertMaskedLMPreprocessor,
                                                    BertPretrainerPreprocessor)
from keras_bert.text.masker import MaskedLMMasker
from keras_bert.text.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert.text.packer import BertPackInputs
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.text_embedder_preprocessor import BertTextEmbedderPreprocessor
from keras_bert.text.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert.text.tokenizer import BertTokenizer

__all__ = [
    "BertMaskedLMPreprocessor",
    "BertMultipleChoicePreprocessor",
    "BertPackInputs",
    "BertPreprocessor",
    "BertPretrainerPreprocessor",
    "BertTextEmbedderPreprocessor",
    "BertTokenClassifierPreprocessor",
    "BertTokenizer",
    "MaskedLMMasker",
]
