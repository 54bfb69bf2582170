"""Fine-tuning data: SQuAD reading, windowing, post-processing and the official metrics."""

from keras_bert.data.squad_examples import SquadExample, read_squad_examples
from keras_bert.data.squad_features import SquadFeatures, convert_examples_to_features
from keras_bert.data.squad_metrics import (
    compute_exact,
    compute_f1,
    evaluate_v1,
    evaluate_v2,
    exact_match_score,
    f1_score,
    normalize_answer,
)
from keras_bert.data.squad_predictions import SquadPredictions, compute_predictions

__all__ = [
    "SquadExample",
    "SquadFeatures",
    "SquadPredictions",
    "compute_exact",
    "compute_f1",
    "compute_predictions",
    "convert_examples_to_features",
    "evaluate_v1",
    "evaluate_v2",
    "exact_match_score",
    "f1_score",
    "normalize_answer",
    "read_squad_examples",
]
