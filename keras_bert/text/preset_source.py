"""Where the text layers find a preset's vocabulary and casing: the one preset loader
(`keras_bert.presets.preset_loader`), as every ``from_preset`` of keras_bert."""

from keras_bert import vocab
from keras_bert.presets.preset_loader import text_preset


def load(preset):
    """The resolved preset (``.vocab_path``, ``.do_lower_case``) for a name or a path.

    Text layers need the vocabulary and casing only: a directory without weights will do; one
    without a vocabulary is a `CheckpointError` naming the file looked for.
    """
    return text_preset(preset)


def vocabulary(preset):
    """The preset's vocabulary (a list of tokens), read and checked by the tokenizer's reader."""
    tokens = vocab.load_vocabulary(load(preset).vocab_path)
    vocab.check_vocabulary(tokens)
    return tokens
