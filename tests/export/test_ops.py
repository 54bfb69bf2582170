"""keras_bert/export/ops.py, required_ops: the custom ops of an export, read from its graph."""

import pytest

import keras_bert
from keras_bert.export import ExportError, export_preprocessor, required_ops
from keras_bert.export.ops import saved_ops
from tests.models.tiny import VOCAB


def test_a_cased_preprocessor_needs_only_the_wordpiece_op(tmp_path):
    path = export_preprocessor(keras_bert.BertPreprocessor(VOCAB, 8, do_lower_case=False),
                               tmp_path / "cased")
    assert required_ops(path) == ["FastWordpieceTokenizeWithOffsets"]
    ops = saved_ops(path)
    # Core ops are there but not listed; the packer uses none of tensorflow-text's trimmers
    # (TF Serving's tensorflow-text 2.12.1 lacks TFText>RoundRobinTrim).
    assert {"StringSplitV2", "StaticRegexReplace"} <= ops
    assert "StringLower" not in ops  # cased: no lower-casing
    assert not any(op.startswith("TFText>") for op in ops)


def test_not_a_saved_model(tmp_path):
    with pytest.raises(ExportError, match="is not a SavedModel: it has no saved_model.pb"):
        required_ops(tmp_path)
    (tmp_path / "saved_model.pb").write_bytes(b"\x00garbage")
    with pytest.raises(ExportError, match="is not a readable SavedModel"):
        required_ops(tmp_path)
