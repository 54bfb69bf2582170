"""Fine-tuning data: example files (TSV/CSV/JSONL), TFDS tasks, the movie-review demo set,
Wikipedia retrieval pairs, SQuAD reading, windowing, post-processing and the official metrics;
pre-training data: text files to the original BERT TFRecords (`create_pretraining_data`)."""

from keras_bert.data import movie_reviews, tfds_tasks, wikipedia_pairs
from keras_bert.data.files import (
    DataFileError,
    Examples,
    read_choice_examples,
    read_examples,
    read_tagging_examples,
)
from keras_bert.data.pretraining.data_options import PretrainingDataOptions
from keras_bert.data.pretraining.create import PretrainingDataStats, create_pretraining_data
from keras_bert.data.pretraining.records import feature_spec as pretraining_feature_spec
from keras_bert.data.pretraining.text_files import PretrainingDataError
from keras_bert.data.sources import load_splits
from keras_bert.data.squad.examples import SquadExample, read_squad_examples
from keras_bert.data.squad.features import SquadFeatures, convert_examples_to_features
from keras_bert.data.squad.metrics import (
    compute_exact,
    compute_f1,
    evaluate_v1,
    evaluate_v2,
    exact_match_score,
    f1_score,
    normalize_answer,
)
from keras_bert.data.squad.predictions import SquadPredictions, compute_predictions

__all__ = [
    "DataFileError",
    "Examples",
    "load_splits",
    "PretrainingDataError",
    "PretrainingDataStats",
    "PretrainingDataOptions",
    "create_pretraining_data",
    "pretraining_feature_spec",
    "movie_reviews",
    "read_choice_examples",
    "read_examples",
    "read_tagging_examples",
    "tfds_tasks",
    "wikipedia_pairs",
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
