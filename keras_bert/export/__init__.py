"""SavedModel exports: the encoder in the TF Hub BERT encoder format, the preprocessing model,
and the end-to-end serving model of a task (`model.export`), in TF Serving's layout; the TF
Serving-compatible local server is `keras_bert.serving` (imported only when it runs)."""

from keras_bert.export.encoder import export_encoder
from keras_bert.export.layout import ExportError, next_version
from keras_bert.export.ops import required_ops
from keras_bert.export.preprocessor import export_preprocessor
from keras_bert.export.serving import export_model
from keras_bert.models.task import register_exporter

register_exporter("tf_saved_model", export_model)  # model.export's default format

__all__ = [
    "ExportError",
    "export_encoder",
    "export_model",
    "export_preprocessor",
    "next_version",
    "required_ops",
]
