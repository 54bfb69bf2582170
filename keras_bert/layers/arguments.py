"""Unknown keyword arguments: one `TypeError` that names them and lists what is accepted.

Keras layers refuse unknown keyword arguments with a bare ``ValueError`` and functional
models drop them silently; a misspelled ``dropuot=0.2`` or ``nme="x"`` should instead fail at
once, say which name is wrong, suggest the close one and list the accepted names.
"""

import difflib
import inspect

import keras


def keyword_parameters(function, skip=()):
    """Names a function takes as keyword arguments (not ``self``, ``*args``, ``**kwargs``)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind in kinds and name != "self" and name not in skip
    )


def check_kwargs(owner, kwargs, accepted):
    """Raises `TypeError` if ``kwargs`` holds a name that no group of ``accepted`` has.

    Args:
        owner: what was called, for the message (``"TransformerBlock()"``).
        kwargs: the keyword arguments given.
        accepted: ``{description: names}``, e.g. ``{"BertConfig fields": (...), ...}``; the
            message lists each group.
    """
    known = [name for names in accepted.values() for name in names]
    unknown = [name for name in kwargs if name not in known]
    if not unknown:
        return
    described = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        described.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    plural = "s" if len(unknown) > 1 else ""
    groups = "; ".join(f"{what}: {', '.join(names)}" for what, names in accepted.items() if names)
    raise TypeError(
        f"{owner} got unknown keyword argument{plural} {', '.join(described)}. "
        f"It accepts {groups}."
    )


def check_layer_kwargs(layer, kwargs):
    """`check_kwargs` for a keras_bert layer's constructor, called with the ``**kwargs`` it
    passes on to ``keras.layers.Layer``: its own arguments and Keras' are accepted."""
    cls = type(layer)
    check_kwargs(
        f"{cls.__name__}()",
        kwargs,
        {
            f"{cls.__name__} arguments": keyword_parameters(cls.__init__),
            "Keras layer arguments": keyword_parameters(keras.layers.Layer.__init__),
        },
    )
