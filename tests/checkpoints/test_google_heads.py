"""Pre-training heads against Google's own code: `BertPretrainer` / `BertMaskedLM` loaded from
a checkpoint saved by Google's `Saver` give the MLM and next-sentence log-probabilities of
google-research/bert's `run_pretraining.py` (its `get_masked_lm_output`,
`get_next_sentence_output` and `gather_indexes`, executed unmodified from the installed
bert-tensorflow 1.0.4 without its module-level flag definitions), limit 1e-5; and
`save_to_preset` writes the heads back under Google's names."""

import ast
import pathlib

import numpy as np
import tensorflow as tf

from keras_bert import BertMaskedLM, BertPretrainer
from keras_bert.checkpoints import google
from tests.checkpoints.test_google import (  # noqa: F401  (google_bert is a fixture)
    _V1Proxy,
    _inputs,
    _write_google_dir,
    google_bert,
)

POSITIONS = np.array([[1, 3, 0], [2, 4, 5], [1, 6, 9], [1, 0, 0]], "int32")
HEAD_VARIABLES = ["cls/predictions/output_bias", "cls/predictions/transform/LayerNorm/beta",
                  "cls/predictions/transform/LayerNorm/gamma",
                  "cls/predictions/transform/dense/bias",
                  "cls/predictions/transform/dense/kernel",
                  "cls/seq_relationship/output_bias", "cls/seq_relationship/output_weights"]


def _run_pretraining_functions(google_bert):
    path = pathlib.Path(google_bert.modeling.__file__).with_name("run_pretraining.py")
    tree = ast.parse(path.read_text())
    wanted = {"get_masked_lm_output", "get_next_sentence_output", "gather_indexes"}
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    assert {n.name for n in body} == wanted, f"{path} changed"
    namespace = {"tf": _V1Proxy(), "modeling": google_bert.modeling}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def _google_pretraining(google_bert, config_path, ids, mask, types_, positions, prefix):
    """Google's BertModel + pre-training heads with random weights, saved by its Saver;
    returns (mlm log-probs [batch * predictions, vocab], nsp log-probs [batch, 2])."""
    modeling = google_bert.modeling
    heads = _run_pretraining_functions(google_bert)
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        config = modeling.BertConfig.from_json_file(str(config_path))
        model = modeling.BertModel(config=config, is_training=False, input_ids=tf.constant(ids),
                                   input_mask=tf.constant(mask), token_type_ids=tf.constant(types_),
                                   use_one_hot_embeddings=False)
        _, _, mlm = heads["get_masked_lm_output"](
            config, model.get_sequence_output(), model.get_embedding_table(),
            tf.constant(positions), tf.zeros_like(positions), tf.ones(positions.shape))
        _, _, nsp = heads["get_next_sentence_output"](
            config, model.get_pooled_output(), tf.zeros([ids.shape[0]], tf.int32))
        sess.run(v1.global_variables_initializer())
        rng = np.random.default_rng(7)
        for var in v1.global_variables():
            var.load(rng.normal(0, 0.5, var.shape.as_list()).astype("float32"), sess)
        v1.train.Saver().save(sess, str(prefix))
        return sess.run([mlm, nsp])


def _log_softmax(x):
    return np.asarray(tf.nn.log_softmax(tf.constant(x, tf.float32), axis=-1))


def test_heads_match_google_run_pretraining(google_bert, tmp_path):
    _write_google_dir(tmp_path)
    ids, mask, types_ = _inputs(google_bert, tmp_path / "vocab.txt")
    positions = np.minimum(POSITIONS, mask.sum(1, keepdims=True) - 1).astype("int32")
    want_mlm, want_nsp = _google_pretraining(google_bert, tmp_path / "bert_config.json", ids,
                                             mask, types_, positions,
                                             tmp_path / "bert_model.ckpt")
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types_,
              "masked_lm_positions": positions}
    pretrainer = BertPretrainer.from_preset(str(tmp_path), preprocessor=None)
    out = pretrainer.predict(inputs, verbose=0)
    mlm = _log_softmax(out["mlm_logits"]).reshape(want_mlm.shape)
    nsp = _log_softmax(out["nsp_logits"])
    mlm_diff, nsp_diff = np.abs(mlm - want_mlm).max(), np.abs(nsp - want_nsp).max()
    print(f"google heads parity: MLM log-prob max abs diff {mlm_diff:.3g}, NSP {nsp_diff:.3g}")
    assert mlm_diff <= 1e-5 and nsp_diff <= 1e-5
    masked_lm = BertMaskedLM.from_preset(str(tmp_path), preprocessor=None)
    got = _log_softmax(masked_lm.predict(inputs, verbose=0)).reshape(want_mlm.shape)
    assert np.abs(got - want_mlm).max() <= 1e-5

    # Written back with Google's names, shapes and values.
    pretrainer.save_to_preset(str(tmp_path / "saved"))
    stored = google.read_checkpoint(str(tmp_path / "bert_model.ckpt"))
    saved = google.read_checkpoint(str(tmp_path / "saved" / "bert_model.ckpt"))
    assert [k for k in sorted(saved) if k.startswith("cls/")] == HEAD_VARIABLES
    for name in HEAD_VARIABLES:
        np.testing.assert_array_equal(saved[name], stored[name], err_msg=name)
