"""The original BERT optimizer recipe: AdamW and LAMB with weight decay off for LayerNorm and
biases, linear warm-up then linear decay (`LinearWarmupDecay`), `create_optimizer`."""

from keras_bert.optimizers.optimization import AdamW, Lamb, LinearWarmupDecay, create_optimizer

__all__ = ["AdamW", "Lamb", "LinearWarmupDecay", "create_optimizer"]
