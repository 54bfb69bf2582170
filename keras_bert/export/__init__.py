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
from keras_bert.export.task_export import REFUSED_FORMATS, export_model, refused_format
from keras_bert.models.task import register_exporter

register_exporter("tf_saved_model", export_model)  # model.export's default format
register_exporter("litert", export_litert)  # the tokenizer inside, LiteRT builtins only
for _format in REFUSED_FORMATS:  # Keras' other formats: an ExportError naming these two
    register_exporter(_format, refused_format(_format))

__all__ = [
    "ExportError",
    "export_encoder",
    "export_litert",
    "export_model",
    "export_preprocessor",
    "next_version",
    "required_ops",
]
