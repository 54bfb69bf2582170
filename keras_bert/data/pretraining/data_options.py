"""`PretrainingDataOptions`: the knobs of ``create_pretraining_data`` (the original script's
flag names and defaults) and their checks."""

import dataclasses

from keras_bert import options as options_lib
from keras_bert.data.pretraining.text_files import PretrainingDataError


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions(options_lib.Options):
    """The original script's knobs (same names, same defaults) and checks on them.

    `check()` raises `PretrainingDataError` naming the flag: ``max_seq_length`` below 5 (no
    room for ``[CLS] a [SEP] b [SEP]``), ``max_predictions_per_seq`` outside [1,
    max_seq_length - 3] (more predictions than a sequence has maskable tokens),
    ``masked_lm_prob`` outside (0, 1], ``short_seq_prob`` outside [0, 1], ``dupe_factor``
    below 1. `keras_bert.options.define_flags` makes the flags of
    ``tools/create_pretraining_data.py`` from these declarations.

    >>> options = PretrainingDataOptions(max_seq_length=128, max_predictions_per_seq=20).check()
    >>> PretrainingDataOptions(max_seq_length=16, max_predictions_per_seq=20).check()
    Traceback (most recent call last):
    ...
    keras_bert...PretrainingDataError: --max_predictions_per_seq=20 is more than a sequence
    of --max_seq_length=16 can hold (at most 13 tokens besides [CLS] and the two [SEP])
    """

    error = PretrainingDataError

    max_seq_length: int = options_lib.MAX_SEQ_LENGTH.field()
    max_predictions_per_seq: int = options_lib.MAX_PREDICTIONS_PER_SEQ.field()
    masked_lm_prob: float = options_lib.MASKED_LM_PROB.field()
    short_seq_prob: float = options_lib.SHORT_SEQ_PROB.field()
    dupe_factor: int = options_lib.Option(
        10, "Passes over the input (with different masks).", options_lib.integer(1)).field()
    do_whole_word_mask: bool = options_lib.DO_WHOLE_WORD_MASK.field()
    random_seed: int = options_lib.Option(12345, "Random seed for data generation.",
                                          options_lib.integer(0)).field()

    def check_together(self):
        room = self.max_seq_length - 3
        if self.max_predictions_per_seq > room:
            raise PretrainingDataError(
                f"--max_predictions_per_seq={self.max_predictions_per_seq} is more than a "
                f"sequence of --max_seq_length={self.max_seq_length} can hold (at most {room} "
                "tokens besides [CLS] and the two [SEP])")
