"""The one registry between Task.export and the writers of keras_bert.export: each writer
registered where it is defined, Keras' own formats refused, a missing writer a clear
error naming what to import."""

import pytest

import keras_bert
from keras_bert.export import export_litert, export_model
from keras_bert.models import export_formats
from tests.models.tiny import VOCAB, tiny_encoder


def test_each_format_finds_the_writer_its_module_registered():
    assert export_formats.writer("tf_saved_model") is export_model
    assert export_formats.writer("litert") is export_litert
    assert {f: export_formats.writer(f).__module__ for f in export_formats.FORMATS} == (
        export_formats.FORMATS)
    assert export_formats.writer("onnx").__name__ == "refuse"  # Keras' own: refused
    assert export_formats.writer("h5") is None  # not an export format: left to Keras


def test_register_refuses_an_unknown_format_and_a_writer_from_another_module():
    with pytest.raises(ValueError, match=r"'tflite' is not one of keras_bert's export formats "
                                         r"\(tf_saved_model, litert, onnx, openvino, torch\): add it to FORMATS"):
        export_formats.register("tflite")

    def writer(model, filepath, **options):
        pass

    with pytest.raises(ValueError, match=r"The writer of 'litert' is defined in "
                                         r"keras_bert.export.litert .*, not in "
                                         r"(tests.models.)?test_export_formats"):
        export_formats.register("litert")(writer)
    assert export_formats.writer("litert") is export_litert  # unchanged


def test_a_writer_not_registered_is_an_error_naming_the_module_to_import(monkeypatch,
                                                                          tmp_path):
    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 8))
    monkeypatch.delitem(export_formats._WRITERS, "tf_saved_model")  # as if never imported
    with pytest.raises(RuntimeError, match=r"model.export\(format='tf_saved_model'\) is "
                                           r"written by keras_bert.export.task_export, which "
                                           r"is not imported: import keras_bert"):
        model.export(str(tmp_path / "m" / "1"))
    assert not (tmp_path / "m").exists()
