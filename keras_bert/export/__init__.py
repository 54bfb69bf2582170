"""SavedModel exports: the encoder in the TF Hub BERT encoder format, the preprocessing model,
and the end-to-end serving model of a task (`model.export`), in TF Serving's layout; the
LiteRT model of a task or an encoder with the tokenizer inside (`export_litert`,
``model.export(path, format="litert")``) and its runner (`litert_model.load`); the TF
Serving-compatible local server is `keras_bert.serving` (imported only when it runs)."""

from keras_bert.export.hub_encoder import export_encoder
from keras_bert.export.export_dirs import ExportError, next_version
from keras_bert.export.litert import export_litert
from keras_bert.export.ops import required_ops
from keras_bert.export.hub_preprocessor import export_preprocessor
from keras_bert.export.task_export import export_model

__all__ = [
    "ExportError",
    "export_encoder",
    "export_litert",
    "export_model",
    "export_preprocessor",
    "next_version",
    "required_ops",
]
