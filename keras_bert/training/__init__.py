"""Training: the BERT optimizers and schedules, the strategy from flags, pre-training."""

from keras_bert.optimizers import (
    AdamW,
    Lamb,
    LinearWarmupDecay,
    create_optimizer,
)
from keras_bert.training.pretraining_loop import PretrainingLoop
from keras_bert.training.pretraining_run import PretrainingOptions, pretrain

__all__ = ["AdamW", "Lamb", "LinearWarmupDecay", "PretrainingLoop", "PretrainingOptions",
           "create_optimizer", "pretrain"]
