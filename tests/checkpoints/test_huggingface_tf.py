"""checkpoints/huggingface_tf.py: what transformers' TensorFlow classes saved (``TFBertModel``,
``TFBertFor*`` of transformers 4: ``tf_model.h5``, or safetensors of the same names) loads
into the matching keras_bert class with its head, and gives the outputs those classes
computed (tests/checkpoints/tf_transformers/: written by the real classes with
make_fixtures.py beside them, since transformers 5 has none), within 1e-5."""

import json
import pathlib

import numpy as np
import pytest

from keras_bert import (BertClassifier, BertEncoder, BertMaskedLM, BertMultipleChoice,
                        BertPreprocessor, BertPretrainer, BertSpanLabeler, BertTokenClassifier)
from keras_bert.checkpoints import CheckpointError, open_directory

FIXTURES = pathlib.Path(__file__).resolve().parent / "tf_transformers"
LIMIT = 1e-5
POSITIONS = np.array([[1, 2, 3], [2, 4, 6], [1, 3, 5], [1, 2, 4]], "int32")
CASES = {
    "sequence_classification": BertClassifier,
    "sequence_classification_safetensors": BertClassifier,
    "token_classification": BertTokenClassifier,
    "question_answering": BertSpanLabeler,
    "multiple_choice": BertMultipleChoice,
    "masked_lm": BertMaskedLM,
    "pre_training": BertPretrainer,
    "model": BertEncoder,
}


def _fixture(name):
    expected = json.loads((FIXTURES / name / "expected.json").read_text())
    inputs = {k: np.asarray(v, "int32") for k, v in expected["inputs"].items()}
    packed = {"input_word_ids": inputs["input_ids"], "input_mask": inputs["attention_mask"],
              "input_type_ids": inputs["token_type_ids"]}
    return packed, {k: np.asarray(v, "float32") for k, v in expected["outputs"].items()}


def _max_diff(got, want, mask=None, what=""):
    """The max abs difference (real tokens only, with ``mask``); printed, for the parity
    table of docs/benchmarks.md (``pytest -s``)."""
    diff = np.abs(np.asarray(got) - want)
    if mask is not None:
        diff = diff[np.broadcast_to(mask.reshape(mask.shape + (1,) * (diff.ndim - mask.ndim))
                                    .astype(bool), diff.shape)]
    print(f"transformers 4.46.3 TensorFlow class parity, {what}: max abs diff {diff.max():.3g}")
    return diff.max()


@pytest.mark.parametrize("name", list(CASES))
def test_transformers_tensorflow_checkpoints_load_with_their_heads(name):
    cls = CASES[name]
    x, want = _fixture(name)
    directory = str(FIXTURES / name)
    if cls is BertEncoder:
        out = BertEncoder.from_preset(directory)(x)
        assert _max_diff(out["sequence_output"], want["last_hidden_state"], x["input_mask"],
                         "TFBertModel sequence_output") <= LIMIT
        assert _max_diff(out["pooled_output"], want["pooler_output"],
                         what="TFBertModel pooled_output") <= LIMIT
        return
    kwargs = {"num_choices": 3} if cls is BertMultipleChoice else {}
    model = cls.from_preset(directory, preprocessor=None, **kwargs)
    if cls in (BertMaskedLM, BertPretrainer):
        got = model.predict({**x, "masked_lm_positions": POSITIONS}, verbose=0)
        mlm = got["mlm_logits"] if cls is BertPretrainer else got
        assert _max_diff(mlm, want.get("prediction_logits", want.get("logits")),
                         what=f"{name} MLM logits") <= LIMIT
        if cls is BertPretrainer:
            assert _max_diff(got["nsp_logits"], want["seq_relationship_logits"],
                             what=f"{name} NSP logits") <= LIMIT
        return
    got = model.predict(x, verbose=0)
    if cls is BertSpanLabeler:
        for key in ("start_logits", "end_logits"):
            assert _max_diff(got[key], want[key], x["input_mask"], f"{name} {key}") <= LIMIT
        assert np.ptp(want["start_logits"]) > 1.0
        return
    mask = x["input_mask"] if cls is BertTokenClassifier else None
    assert _max_diff(got, want["logits"], mask, name) <= LIMIT and np.ptp(want["logits"]) > 1.0
    if cls is BertClassifier:
        assert model.num_classes == 3
        assert model.label_names == ["negative", "neutral", "positive"]
    if cls is BertTokenClassifier:
        assert model.label_names == ["O", "B-LOC", "I-LOC", "B-PER"]


def test_the_texts_pack_as_transformers_tokenizer_packed_them():
    x, _ = _fixture("sequence_classification")
    texts = ["a great movie", "the plot was dull and boring .", "what a fun film !",
             "paris is not london"]
    packed = BertPreprocessor.from_preset(str(FIXTURES / "sequence_classification"),
                                          seq_length=16)(texts)
    for key, value in x.items():
        np.testing.assert_array_equal(packed[key], value, err_msg=key)


def test_names_with_no_place_are_errors(tmp_path):
    import shutil

    from safetensors.numpy import load_file, save_file

    copy = tmp_path / "copy"
    shutil.copytree(FIXTURES / "sequence_classification_safetensors", copy)
    tensors = load_file(copy / "model.safetensors")
    tensors["bert/encoder/layer_._0/attention/self/rotary/kernel:0"] = np.zeros((16, 16),
                                                                                 "float32")
    save_file(tensors, copy / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"1 checkpoint variable\(s\) that the config has "
                                              r"no place for: bert/encoder/layer_0/attention/"
                                              r"self/rotary/kernel"):
        open_directory(str(copy)).check_variables()
    save_file({"classifier/kernel:0": np.zeros((16, 3), "float32")}, copy / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"no bert/embeddings/word_embeddings/weight:0; "
                                              r"not a BERT of transformers' TensorFlow classes"):
        open_directory(str(copy)).check_variables()
