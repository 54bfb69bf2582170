"""keras_bert.export.export_dirs: where an export may go (TF Serving's numbered versions, never
over a non-empty directory) and the atomic write."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import ExportError, export_dirs, next_version


def test_check_target(tmp_path):
    assert export_dirs.check_target(tmp_path / "new" / "dir") == str(tmp_path / "new" / "dir")
    assert export_dirs.check_target(tmp_path / "m" / "7", versioned=True) == str(tmp_path / "m" / "7")
    (tmp_path / "empty").mkdir()
    assert export_dirs.check_target(tmp_path / "empty") == str(tmp_path / "empty")
    with pytest.raises(ExportError, match=r"numbered version directories, "
                                          r"<base>/<name>/<version>.*e\.g\. .*/m/v1/1"):
        export_dirs.check_target(tmp_path / "m" / "v1", versioned=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match="exists and is not a directory"):
        export_dirs.check_target(tmp_path / "file")
    with pytest.raises(ExportError, match="cannot create it .*/file is not a writable "
                                          "directory"):
        export_dirs.check_target(tmp_path / "file" / "below")
    # Object stores are welcome (ram:// stands for gs://: the same tf.io.gfile code), and
    # held to the same rules: never over a directory that is not empty.
    assert export_dirs.check_target("ram://export_layout/models/m/1", versioned=True) == \
        "ram://export_layout/models/m/1"
    tf.io.gfile.makedirs("ram://export_layout/models/m/2/variables")
    with pytest.raises(ExportError, match="already exists and is not empty"):
        export_dirs.check_target("ram://export_layout/models/m/2", versioned=True)
    with pytest.raises(ExportError, match="must be a directory path, got None"):
        export_dirs.check_target(None)


def test_next_version(tmp_path):
    assert next_version(tmp_path / "none") == str(tmp_path / "none" / "1")
    for name in ("1", "3", "10", ".tmp-abc", "latest"):
        (tmp_path / name).mkdir()
    (tmp_path / "12").write_text("a file, not a version")
    assert next_version(tmp_path) == str(tmp_path / "11")


def test_a_failed_save_leaves_nothing(tmp_path):
    module = tf.Module()
    module.v = tf.Variable(1.0)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def broken(x):
        raise RuntimeError("tracing failed")

    with pytest.raises(RuntimeError, match="tracing failed"):
        export_dirs.save(module, tmp_path / "m" / "1", signatures={"serving_default": broken},
                    versioned=True)
    assert os.listdir(tmp_path / "m") == []  # no version, no .tmp-* leftovers
    module.f = tf.function(lambda x: x + module.v,
                           input_signature=[tf.TensorSpec([], tf.float32)])
    (tmp_path / "m" / "1").mkdir()  # an empty directory is taken over
    path = export_dirs.save(module, tmp_path / "m" / "1", versioned=True)
    assert sorted(os.listdir(tmp_path / "m")) == ["1"]
    assert float(tf.saved_model.load(path).f(1.0)) == 2.0


def test_exports_to_an_object_store_end_with_saved_model_pb_and_load_from_there(
        tmp_path, monkeypatch):
    """ram:// stands for gs:// (TF Serving's --model_base_path=gs://...): the same
    tf.io.gfile code. saved_model.pb, what readers wait for, is the last file to appear;
    nothing is staged on local disk; a failed export leaves nothing."""
    from keras_bert import BertClassifier, BertPreprocessor, storage
    from tests.local_disk import nothing_written_locally
    from tests.models.tiny import VOCAB, tiny_encoder

    base = "ram://test_export_layout/models/sentiment"
    storage.rmtree(base)
    module = tf.Module()
    module.v = tf.Variable(1.0)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def broken(x):
        raise RuntimeError("tracing failed")

    with pytest.raises(RuntimeError, match="tracing failed"):
        export_dirs.save(module, f"{base}/1", signatures={"serving_default": broken}, versioned=True)
    assert storage.walk_files(base) == []  # no version, no .tmp-* leftovers
    moved = []
    move = storage._move_file
    monkeypatch.setattr(storage, "_move_file",
                        lambda source, target: (moved.append(target), move(source, target)))
    model = BertClassifier(tiny_encoder(), 2, preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    with nothing_written_locally(tmp_path, monkeypatch):
        assert next_version(base) == f"{base}/1"
        path = model.export(f"{base}/1")
        assert path == f"{base}/1" and next_version(base) == f"{base}/2"
    assert storage.listdir(base) == ["1"]
    assert moved[-1] == f"{base}/1/saved_model.pb"
    assert storage.walk_files(path) == [
        "fingerprint.pb", "saved_model.pb", "variables/variables.data-00000-of-00001",
        "variables/variables.index"]
    served = tf.saved_model.load(path).signatures["serving_default"]
    scores = model.predict(["a great movie"], verbose=0)
    outputs = served(text=tf.constant(["a great movie"]))
    np.testing.assert_allclose(outputs["logits"].numpy(), scores, atol=1e-5)
    storage.rmtree(base)
