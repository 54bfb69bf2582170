"""Named BERT presets; resolving, loading and saving them.

``keras_bert.presets()`` (this module is callable) and ``keras_bert.presets.list_presets()``
list the registry (`registry`; ``tiny_random``, random weights built in for examples and
tests, loads offline: `tiny_random`); `load_preset` (`resolver`) resolves a name, hub handle
(``hf://``, ``kaggle://``), directory or zip to a `Preset`; `PresetLoader` (`preset_loader`)
builds models and text layers from it and `PresetSaver` (`preset_saver`), beside it,
writes them back.

>>> import keras_bert
>>> [row["name"] for row in keras_bert.presets()][:3]
['tiny', 'mini', 'small']
"""

import sys
import types

from keras_bert.checkpoints.formats import Preset
from keras_bert.presets.resolver import UnknownPresetError, load_preset
from keras_bert.presets.preset_loader import PresetLoader
from keras_bert.presets.preset_saver import PresetSaver
from keras_bert.presets.registry import PRESETS, PresetSpec

_COLUMNS = ("name", "layers", "hidden_size", "heads", "parameters", "casing", "source")


class PresetTable(list):
    """A list of dict rows that prints as a table.

    >>> table = list_presets()
    >>> isinstance(table, PresetTable), table[0]["name"], table[0]["layers"]
    (True, 'tiny', 2)
    >>> print(str(table).splitlines()[0])
    name  layers  hidden_size  heads  parameters  casing  source
    """

    def __str__(self):
        cells = [[str(row[c]) for c in _COLUMNS] for row in self]
        widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(_COLUMNS)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
        return "\n".join(lines)

    __repr__ = __str__


def _millions(n):
    return f"{n / 1e6:.1f}M" if n >= 1e5 else f"{n / 1e3:.0f}K"


def list_presets():
    """Every registered preset: name, layers, hidden size, heads, parameters, casing, source."""
    rows = []
    for spec in PRESETS.values():
        rows.append({
            "name": spec.name,
            "layers": spec.num_hidden_layers,
            "hidden_size": spec.hidden_size,
            "heads": spec.num_attention_heads,
            "parameters": _millions(spec.num_parameters),
            "casing": spec.casing,
            "source": spec.url or (f"pypi:{spec.package}" if spec.package else "built in"),
            "description": spec.description,
        })
    return PresetTable(rows)


class _CallableModule(types.ModuleType):
    def __call__(self):
        return list_presets()


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["PRESETS", "Preset", "PresetLoader", "PresetSaver", "PresetSpec", "PresetTable",
           "UnknownPresetError", "list_presets", "load_preset"]
