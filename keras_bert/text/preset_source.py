"""Where the text layers find a preset's vocabulary and casing: the one preset loader.

Every ``from_preset`` of keras_bert resolves its argument through
`keras_bert.presets.load_preset` (row 2). The text layers sit in row 1, below it, so they reach
it at call time, as `Task.compile` reaches the optimizers of row 4: importing a text layer
never imports the registry, and ``from_preset`` needs no set-up by anyone else.
"""


def load(preset):
    """The resolved preset (``.vocab_path``, ``.do_lower_case``) for a name or a path.

    Text layers need the vocabulary and casing only: a directory without weights will do; one
    without a vocabulary is a `CheckpointError` naming the file looked for.
    """
    from keras_bert.presets import load_preset  # row 2, reached at call time (see above)

    return load_preset(preset, require_weights=False, require_vocab=True)


def vocabulary(preset):
    """The preset's vocabulary (a list of tokens), read and checked by the tokenizer's reader."""
    from keras_bert.text import vocab

    tokens = vocab.load_vocabulary(load(preset).vocab_path)
    vocab.check_vocabulary(tokens)
    return tokens
