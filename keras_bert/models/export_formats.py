"""The export formats keras_bert writes itself, and the one registry of their writers.

``model.export(path, format=...)`` (`Task.export`) writes each format of `FORMATS` with
keras_bert's writer: ``tf_saved_model`` and ``litert``; Keras' own ``onnx``, ``openvino`` and
``torch`` have writers that refuse them with an `ExportError` naming those two. Any other
format goes on to Keras' own export, which refuses it. The writers live in
`keras_bert.export` (row 6 of the house), which the models (row 4) never import: each writer
registers itself where it is defined (``@export_formats.register("litert")``), and
`Task.export` looks it up here. `import keras_bert` imports every writer. This is the one
table of keras_bert that a higher row fills; the serving adapter of each task model is chosen
in `keras_bert.export.task_adapters`, by the model's class.

>>> from keras_bert.models import export_formats
>>> sorted(export_formats.FORMATS)
['litert', 'onnx', 'openvino', 'tf_saved_model', 'torch']
>>> export_formats.writer("litert").__name__  # registered by keras_bert.export.litert
'export_litert'
>>> export_formats.writer("h5") is None  # not an export format: Keras' export refuses it
True
"""

# {format: the module whose writer registers for it}. Adding a format: a row here, and
# ``@register(format)`` on its writer in that module.
FORMATS = {
    "tf_saved_model": "keras_bert.export.task_export",  # model.export's default
    "litert": "keras_bert.export.litert",
    # Keras' own formats that a task model refuses (an ExportError naming the two above):
    "onnx": "keras_bert.export.task_export",
    "openvino": "keras_bert.export.task_export",
    "torch": "keras_bert.export.task_export",
}

_WRITERS = {}


def register(format):
    """Decorator: the function it decorates writes ``format`` (a key of `FORMATS`, and the
    function defined in the module `FORMATS` names) for ``model.export``, which calls it as
    ``writer(model, filepath, verbose=..., input_signature=..., **options)``."""
    if format not in FORMATS:
        raise ValueError(f"{format!r} is not one of keras_bert's export formats "
                         f"({', '.join(FORMATS)}): add it to FORMATS in {__name__} with the "
                         "module of its writer.")

    def decorate(function):
        if function.__module__ != FORMATS[format]:
            raise ValueError(f"The writer of {format!r} is defined in {FORMATS[format]} "
                             f"(FORMATS in {__name__}), not in {function.__module__}.")
        _WRITERS[format] = function
        return function

    return decorate


def writer(format):
    """The registered writer of ``format``; None for a format Keras writes itself.
    RuntimeError naming the module to import when the writer of one of `FORMATS` has not
    registered (its module not imported)."""
    if format not in FORMATS:
        return None
    if format not in _WRITERS:
        raise RuntimeError(
            f"model.export(format={format!r}) is written by {FORMATS[format]}, which is not "
            f"imported: import keras_bert (or {FORMATS[format]}) before exporting.")
    return _WRITERS[format]
