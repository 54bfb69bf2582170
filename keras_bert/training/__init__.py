"""Training: the BERT optimizers and schedules (more to come: strategies, input pipelines)."""

from keras_bert.training.optimization import (
    AdamW,
    Lamb,
    LinearWarmupDecay,
    create_optimizer,
)

__all__ = ["AdamW", "Lamb", "LinearWarmupDecay", "create_optimizer"]
