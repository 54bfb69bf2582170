"""keras_bert/data/pretraining/data_options.py, PretrainingDataOptions: the original script's
defaults, and checks that name the flag (each alone, and the two that go together)."""

import pytest

from keras_bert.data.pretraining.data_options import PretrainingDataOptions
from keras_bert.data.pretraining.text_files import PretrainingDataError


def test_the_original_defaults():
    options = PretrainingDataOptions()
    assert (options.max_seq_length, options.max_predictions_per_seq, options.masked_lm_prob,
            options.short_seq_prob, options.dupe_factor, options.do_whole_word_mask,
            options.random_seed) == (128, 20, 0.15, 0.1, 10, False, 12345)
    assert options.check() == options


@pytest.mark.parametrize("changes, message", [
    (dict(max_seq_length=4), "--max_seq_length must be an integer >= 5"),
    (dict(max_seq_length=16, max_predictions_per_seq=14),
     r"--max_predictions_per_seq=14 is more than a sequence of --max_seq_length=16 can hold "
     r"\(at most 13 tokens besides \[CLS\] and the two \[SEP\]\)"),
    (dict(max_predictions_per_seq=0), "--max_predictions_per_seq must be"),
    (dict(masked_lm_prob=0.0), r"--masked_lm_prob must be a probability in \(0, 1\]"),
    (dict(short_seq_prob=1.5), r"--short_seq_prob must be a probability in \[0, 1\]"),
    (dict(dupe_factor=0), "--dupe_factor must be an integer >= 1"),
    (dict(random_seed=-1), "--random_seed must be an integer >= 0"),
])
def test_bad_values_name_the_flag(changes, message):
    with pytest.raises(PretrainingDataError, match=message):
        PretrainingDataOptions(**changes).check()
