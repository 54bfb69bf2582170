"""Where the text layers find a preset's vocabulary and casing.

The text layers sit below the preset registry (row 1 and row 2 of DESIGN.md), so they never
import it. `keras_bert.presets` registers its loader here when it is imported, which importing
any part of `keras_bert` does (the package's ``__init__`` imports it).
"""

_loader = None


def register(loader):
    """Called by `keras_bert.presets`: ``loader(name_or_path)`` returns an object with
    ``vocab_path`` and ``do_lower_case``."""
    global _loader
    _loader = loader


def load(preset):
    """The resolved preset (``.vocab_path``, ``.do_lower_case``) for a name or a path."""
    if _loader is None:
        raise RuntimeError(
            "No preset loader is registered; import keras_bert (which registers "
            "keras_bert.presets.load_preset) before calling from_preset."
        )
    # Text layers need the vocabulary and casing only: a directory without weights will do.
    return _loader(preset, require_weights=False, require_vocab=True)
