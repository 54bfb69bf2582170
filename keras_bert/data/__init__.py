"""Fine-tuning data: SQuAD reading, windowing, post-processing and the official metrics."""

from keras_bert.data.squad_examples import SquadExample, read_squad_examples
from keras_bert.data.squad_features import SquadFeatures, convert_examples_to_features

__all__ = [
    "SquadExample",
    "SquadFeatures",
    "convert_examples_to_features",
    "read_squad_examples",
]
