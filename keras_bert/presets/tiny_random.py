"""``tiny_random``: a built-in preset with random weights, for examples and tests.

A 1-layer BERT (hidden size 16, 2 heads) on a 92-token English vocabulary
(``tiny_random_vocab.txt`` beside this module: BERT's special tokens, punctuation, a few
dozen common words such as "a great movie", "dull", "paris is big", "he ran home", and some
``##`` suffixes), uncased. It ships with the package: nothing is downloaded, and its
weights are generated at load, the same numbers on every call (`weights`), in
milliseconds. It has no knowledge of language; it is there so that an example or a test
reads ``BertClassifier.from_preset("tiny_random", num_classes=2)`` instead of building a
config and a vocabulary by hand, and goes through the same loader, saver and exporters as
a real preset.

Its weights are drawn with a spread of 0.2 (ten times BERT's ``initializer_range``, 0.02),
and its config records that ``initializer_range``, so that the heads a task adds start as
spread: a model's outputs then differ across texts by tenths (at BERT's 0.02 they would
differ by ~1e-5, too little for a test to tell a text from another). The encoder has
Google's pre-training heads (``cls/``) too, as Google's checkpoints do.

>>> preset = tiny_random_preset()
>>> preset.config.num_hidden_layers, preset.config.hidden_size, preset.do_lower_case
(1, 16, True)
>>> import numpy as np
>>> np.array_equal(weights()["bert/pooler/dense/bias"], preset.weights()["bert/pooler/dense/bias"])
True
"""

import os

import numpy as np

from keras_bert.checkpoints.common import encoder_shapes, head_shapes
from keras_bert.checkpoints.formats import Preset
from keras_bert.presets.registry import PRESETS

NAME = "tiny_random"
VOCAB_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_random_vocab.txt")
SEED = 27
SOURCE = "keras_bert (built in: random weights)"
CONFIG = PRESETS[NAME].config  # the registry's entry: L1/H16/A2, initializer_range 0.2


def weights(config=CONFIG, seed=SEED):
    """The canonical weights (Google's names; the encoder and the ``cls/`` pre-training
    heads) of ``config``, drawn from a generator seeded with ``seed``: the same arrays on
    every call. Matrices and embeddings are uniform with standard deviation
    ``config.initializer_range``; biases and LayerNorm offsets a tenth of that; LayerNorm
    scales around 1."""
    rng = np.random.default_rng(seed)
    spread = config.initializer_range
    shapes = {**encoder_shapes(config), **head_shapes(config)}
    out = {}
    for name in sorted(shapes):  # a fixed order: the same draws for the same name
        shape = shapes[name]
        scale = spread if len(shape) == 2 else spread / 10
        value = rng.uniform(-1.0, 1.0, size=shape) * scale * np.sqrt(3.0)  # std = scale
        if name.endswith("LayerNorm/gamma"):
            value = 1.0 + value
        out[name] = value.astype(np.float32)
    return out


def tiny_random_preset():
    """The preset as a `Preset` (weights in memory, the vocabulary file of the package);
    a new one on every call, for the resolver to name and the loader to build from."""
    return Preset(CONFIG, name=NAME, source=SOURCE, vocab_path=VOCAB_FILE,
                  vocab_file=VOCAB_FILE, do_lower_case=True, weights=weights())
