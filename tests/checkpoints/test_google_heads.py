"""Heads against Google's own code: `BertPretrainer` / `BertMaskedLM` loaded from a checkpoint
saved by Google's `Saver` give the MLM and next-sentence log-probabilities of
google-research/bert's `run_pretraining.py` (its `get_masked_lm_output`,
`get_next_sentence_output` and `gather_indexes`, executed unmodified from the installed
bert-tensorflow 1.0.4 without its module-level flag definitions), limit 1e-5, and
`save_to_preset` writes the heads back under Google's names; `BertClassifier` and
`BertSpanLabeler` give the logits of `run_classifier.py`'s and `run_squad.py`'s
`create_model` on real text, both ways (`save_to_preset(format="google")`)."""

import ast
import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertMaskedLM, BertPretrainer
from keras_bert.checkpoints import google
from tests.checkpoints.test_google import _V1Proxy, _inputs, _write_google_dir

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


# ---------------------------------------------------------------- fine-tuning heads
# run_classifier.py's and run_squad.py's create_model, executed unmodified (their module-level
# flags aside), on a small config over the real uncased vocabulary and real text.
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 64, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64,
         "type_vocab_size": 2, "initializer_range": 0.02}
SEQ = 48


def _script_function(google_bert, script, name):
    """``name`` from google-research/bert's ``script`` (a file beside modeling.py), executed
    alone with modeling and tf.compat.v1."""
    path = pathlib.Path(google_bert.modeling.__file__).with_name(script)
    tree = ast.parse(path.read_text())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(body) == 1, f"{path} changed"
    namespace = {"tf": _V1Proxy(), "modeling": google_bert.modeling}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return namespace[name]


def _real_directory(directory):
    """A Google checkpoint directory's config and vocabulary (the real uncased one)."""
    from tests.conftest import minilm_dir

    directory.mkdir(parents=True, exist_ok=True)
    vocab = (minilm_dir() / "vocab.txt").read_text(encoding="utf-8")
    (directory / "vocab.txt").write_text(vocab, encoding="utf-8")
    config = dict(SMALL, vocab_size=len(vocab.splitlines()))
    (directory / "bert_config.json").write_text(json.dumps(config))
    return directory


def _real_inputs(google_bert, vocab_path, pairs):
    """Wikipedia lines packed as Google's scripts pack them (FullTokenizer, [CLS] a [SEP]
    (b [SEP]), cut to SEQ tokens): ids, mask, segment ids."""
    from tests.text.corpus import wikipedia_lines

    lines = [line for line in wikipedia_lines() if 30 < len(line) < 400
             and not line.startswith("=")][:16]
    tokenizer = google_bert.tokenization.FullTokenizer(str(vocab_path), do_lower_case=True)
    ids = np.zeros((8, SEQ), "int32")
    types_ = np.zeros_like(ids)
    for i in range(8):
        a = tokenizer.tokenize(" ".join(lines[i].split()[:6]) + "?" if pairs else lines[i])
        b = tokenizer.tokenize(lines[8 + i]) if pairs else []
        a = a[:SEQ - 2 - (len(b) > 0)]
        b = b[:SEQ - 3 - len(a)] if b else []
        row = ["[CLS]"] + a + ["[SEP]"] + (b + ["[SEP]"] if b else [])
        ids[i, :len(row)] = tokenizer.convert_tokens_to_ids(row)
        types_[i, len(a) + 2:len(row)] = 1 if b else 0
    return ids, (ids > 0).astype("int32"), types_


def _google_task(google_bert, script, config_path, ids, mask, types_, prefix, restore=False):
    """Google's BertModel and ``script``'s head (``create_model``), with random weights saved
    by its Saver to ``prefix``, or restored from it: the logits (run_classifier.py: [batch,
    3]; run_squad.py: (start, end) [batch, seq])."""
    create_model = _script_function(google_bert, script, "create_model")
    v1 = tf.compat.v1
    v1.disable_v2_tensorshape()  # run_classifier.py reads shape[-1].value, TF 1's Dimension
    try:
        with tf.Graph().as_default(), v1.Session() as sess:
            config = google_bert.modeling.BertConfig.from_json_file(str(config_path))
            args = (config, False, tf.constant(ids), tf.constant(mask), tf.constant(types_))
            if script == "run_classifier.py":
                outputs = create_model(*args, tf.zeros([ids.shape[0]], tf.int32), 3, False)[2]
            else:
                outputs = create_model(*args, False)
            if restore:
                v1.train.Saver().restore(sess, str(prefix))
            else:
                sess.run(v1.global_variables_initializer())
                rng = np.random.default_rng(11)
                for var in v1.global_variables():
                    var.load(rng.normal(0, 0.5, var.shape.as_list()).astype("float32"), sess)
                v1.train.Saver().save(sess, str(prefix))
            return sess.run(outputs)
    finally:
        v1.enable_v2_tensorshape()


@pytest.mark.parametrize("script", ["run_classifier.py", "run_squad.py"])
def test_fine_tuned_heads_match_google_scripts_both_ways(google_bert, tmp_path, script):
    """A checkpoint of run_classifier.py's (run_squad.py's) model loads with
    BertClassifier.from_preset (BertSpanLabeler.from_preset) alone and gives its logits;
    save_to_preset(format="google") writes what the script restores, the same logits, and
    the same variables as the checkpoint it came from."""
    from keras_bert import BertClassifier, BertSpanLabeler

    directory = _real_directory(tmp_path / "google")
    squad = script == "run_squad.py"
    ids, mask, types_ = _real_inputs(google_bert, directory / "vocab.txt", pairs=squad)
    want = _google_task(google_bert, script, directory / "bert_config.json", ids, mask, types_,
                        directory / "bert_model.ckpt")
    x = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types_}
    cls = BertSpanLabeler if squad else BertClassifier
    model = cls.from_preset(str(directory), seq_length=SEQ)
    assert squad or model.num_classes == 3  # from output_weights [3, hidden]

    def outputs(model):
        got = model.predict(x, verbose=0)
        return np.stack([got["start_logits"], got["end_logits"]]) if squad else got

    got, want = outputs(model), np.stack(want) if squad else want
    real = np.broadcast_to(mask.astype(bool), want.shape) if squad else np.ones(want.shape, bool)
    diff = np.abs(got - want)[real].max()
    print(f"google {script} head parity: logits max abs diff {diff:.3g} "
          f"(spread {np.ptp(want[real]):.3g})")
    assert diff <= 1e-4 and np.ptp(want[real]) > 1.0

    out = tmp_path / "out"
    model.save_to_preset(str(out), format="google")
    assert sorted(p.name for p in out.iterdir()) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
        "vocab.txt"]
    again = _google_task(google_bert, script, out / "bert_config.json", ids, mask, types_,
                         out / "bert_model.ckpt", restore=True)
    again = np.stack(again) if squad else again
    back_diff = np.abs(again - got)[real].max()
    print(f"keras_bert -> google {script}: logits max abs diff {back_diff:.3g}")
    assert back_diff <= 1e-4
    stored = google.read_checkpoint(str(directory / "bert_model.ckpt"))
    saved = google.read_checkpoint(str(out / "bert_model.ckpt"))
    assert sorted(saved) == sorted(stored)  # Google -> keras_bert -> Google: the same
    for name, value in stored.items():
        np.testing.assert_array_equal(saved[name], value, err_msg=name)
    back = cls.from_preset(str(out), seq_length=SEQ)  # keras_bert -> Google -> keras_bert
    assert back.head_config() == model.head_config()
    np.testing.assert_array_equal(outputs(back), got)
