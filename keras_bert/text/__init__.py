"""In-graph text preprocessing: tokenizer, packer, masked-LM masker, preprocessor."""

from keras_bert.text.masker import MaskedLMMasker
from keras_bert.text.packer import BertPackInputs
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import BertTokenizer

__all__ = ["BertPackInputs", "BertPreprocessor", "BertTokenizer", "MaskedLMMasker"]
