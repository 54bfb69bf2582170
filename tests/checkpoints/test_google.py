"""Google TF1 checkpoint converter, checked against google-research/bert's own modeling.py.

PyPI bert-tensorflow==1.0.4 is google-research/bert itself. Its modeling.py runs here under
TF 2.21 in graph mode with three small shims: ``tensorflow.contrib.layers.layer_norm``,
``tf.layers.dense`` (both removed from TF 2 / Keras 3; recreated with the variable names
TF 1 gave them) and absl flags marked as parsed for its tokenization module.
"""

import importlib
import json
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.checkpoints import google

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a",
         "dog", "ran", "in", "park", "##s", "big", "red", "ball", "is", ".", ",", "and", "to",
         "play", "with", "my", "friend", "loves", "sun", "##ny", "day"]
SENTENCES = ["The cat sat on the mat.", "A big red ball", "the dog ran in the park and the "
             "cat loves to play with my friend on a sunny day.", "dogs"]
CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 64, "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 40, "type_vocab_size": 2, "initializer_range": 0.02}


# ----------------------------------------------------------------------------- shims
def _layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
    """tf.contrib.layers.layer_norm over the last axis, variables LayerNorm/{beta,gamma}."""
    v1 = tf.compat.v1
    with v1.variable_scope(scope or "LayerNorm"):
        size = inputs.shape[-1]
        beta = v1.get_variable("beta", shape=[size], initializer=v1.zeros_initializer())
        gamma = v1.get_variable("gamma", shape=[size], initializer=v1.ones_initializer())
        mean, variance = tf.nn.moments(inputs, [begin_norm_axis], keepdims=True)
        return tf.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                         variance_epsilon=1e-12)


def _dense(inputs, units, activation=None, kernel_initializer=None, name=None, **unused):
    """tf.layers.dense with TF 1's variable names: <name or 'dense'>/{kernel,bias}."""
    v1 = tf.compat.v1
    with v1.variable_scope(name or "dense"):
        kernel = v1.get_variable("kernel", shape=[inputs.shape[-1], units],
                                 initializer=kernel_initializer)
        bias = v1.get_variable("bias", shape=[units], initializer=v1.zeros_initializer())
        out = tf.matmul(inputs, kernel) + bias
        return activation(out) if activation is not None else out


class _V1Proxy:
    """tf.compat.v1 plus the `layers.dense` that Keras 3 took away."""

    layers = types.SimpleNamespace(dense=_dense)

    def __getattr__(self, name):
        return getattr(tf.compat.v1, name)


@pytest.fixture(scope="module")
def google_bert(google_bert_path):
    contrib = types.ModuleType("tensorflow.contrib")
    contrib_layers = types.ModuleType("tensorflow.contrib.layers")
    contrib_layers.layer_norm = _layer_norm
    contrib.layers = contrib_layers
    saved = {k: sys.modules.get(k) for k in ("tensorflow.contrib", "tensorflow.contrib.layers")}
    sys.modules["tensorflow.contrib"] = contrib
    sys.modules["tensorflow.contrib.layers"] = contrib_layers
    # Another test module may have imported bert.* with its own stand-in for contrib (the
    # SQuAD fixtures'): import modeling afresh so that it binds this one.
    for k in [k for k in sys.modules if k == "bert" or k.startswith("bert.")]:
        del sys.modules[k]
    sys.path.insert(0, str(google_bert_path))
    try:
        modeling = importlib.import_module("bert.modeling")
        tokenization = importlib.import_module("bert.tokenization")
        modeling.tf = _V1Proxy()
        from absl import flags

        flags.FLAGS.mark_as_parsed()
        yield types.SimpleNamespace(modeling=modeling, tokenization=tokenization)
    finally:
        sys.path.remove(str(google_bert_path))
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        for k in [k for k in sys.modules if k == "bert" or k.startswith("bert.")]:
            del sys.modules[k]


def _inputs(google_bert, vocab_path):
    tokenizer = google_bert.tokenization.FullTokenizer(str(vocab_path), do_lower_case=True)
    rows = [["[CLS]"] + tokenizer.tokenize(s) + ["[SEP]"] for s in SENTENCES]
    length = max(len(r) for r in rows)
    ids = np.zeros((len(rows), length), "int32")
    mask = np.zeros_like(ids)
    types_ = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = tokenizer.convert_tokens_to_ids(row)
        mask[i, : len(row)] = 1
        types_[i, len(row) // 2: len(row)] = 1  # exercise both segment ids
    assert (ids[mask.astype(bool)] != 1).all(), "test sentences must not hit [UNK]"
    return ids, mask, types_


def _run_google(google_bert, config_path, ids, mask, types_, save_prefix=None,
                restore_prefix=None, seed=0):
    """Builds Google's BertModel; saves random weights or restores a checkpoint; runs it."""
    modeling = google_bert.modeling
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        config = modeling.BertConfig.from_json_file(str(config_path))
        model = modeling.BertModel(
            config=config, is_training=False, input_ids=tf.constant(ids),
            input_mask=tf.constant(mask), token_type_ids=tf.constant(types_),
            use_one_hot_embeddings=False)
        model_vars = v1.global_variables()
        if save_prefix:
            # Optimizer state as run_pretraining.py leaves it, which readers must skip.
            v1.get_variable("bert/embeddings/word_embeddings/adam_m",
                            shape=[config.vocab_size, config.hidden_size])
            v1.train.get_or_create_global_step()
            sess.run(v1.global_variables_initializer())
            rng = np.random.default_rng(seed)
            for var in model_vars:
                var.load(rng.normal(0, 0.5, var.shape.as_list()).astype("float32"), sess)
            v1.train.Saver().save(sess, str(save_prefix))
        else:
            v1.train.Saver(model_vars).restore(sess, str(restore_prefix))
        names = sorted(v.op.name for v in model_vars)
        seq, pooled = sess.run([model.get_sequence_output(), model.get_pooled_output()])
    return seq, pooled, names


def _write_google_dir(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG))


def _ours(encoder, ids, mask, types_):
    out = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types_})
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def test_google_checkpoint_matches_google_modeling(google_bert, tmp_path):
    _write_google_dir(tmp_path)
    ids, mask, types_ = _inputs(google_bert, tmp_path / "vocab.txt")
    want_seq, want_pooled, names = _run_google(
        google_bert, tmp_path / "bert_config.json", ids, mask, types_,
        save_prefix=tmp_path / "bert_model.ckpt")
    # The variable names Google's code creates are exactly our canonical names.
    encoder = BertEncoder.from_preset(str(tmp_path))
    assert sorted(encoder.canonical_variables()) == names
    assert encoder.bert_config.hidden_act == "gelu_tanh"  # Google's "gelu" is the tanh form
    got_seq, got_pooled = _ours(encoder, ids, mask, types_)
    seq_diff = np.abs(got_seq - want_seq).max()
    pooled_diff = np.abs(got_pooled - want_pooled).max()
    print(f"google parity: sequence_output max abs diff {seq_diff:.3g}, "
          f"pooled_output {pooled_diff:.3g}")
    assert seq_diff <= 1e-5
    assert pooled_diff <= 1e-5


def test_optimizer_slots_are_skipped(google_bert, tmp_path):
    _write_google_dir(tmp_path)
    ids, mask, types_ = _inputs(google_bert, tmp_path / "vocab.txt")
    _run_google(google_bert, tmp_path / "bert_config.json", ids, mask, types_,
                save_prefix=tmp_path / "bert_model.ckpt")
    all_names = tf.train.load_checkpoint(str(tmp_path / "bert_model.ckpt")).get_variable_to_shape_map()
    assert "global_step" in all_names
    assert "bert/embeddings/word_embeddings/adam_m" in all_names
    weights = google.read_checkpoint(str(tmp_path / "bert_model.ckpt"))
    assert "global_step" not in weights
    assert not any(k.endswith("adam_m") for k in weights)


def test_our_writer_is_read_by_google_saver(google_bert, tmp_path):
    """A checkpoint written by our converter restores into Google's own graph via tf Saver."""
    _write_google_dir(tmp_path)
    ids, mask, types_ = _inputs(google_bert, tmp_path / "vocab.txt")
    encoder = BertEncoder(google.config_from_json(str(tmp_path / "bert_config.json")))
    rng = np.random.default_rng(3)
    encoder.set_canonical_weights(
        {k: rng.normal(0, 0.5, v.shape).astype("float32")
         for k, v in encoder.get_canonical_weights().items()})
    out = tmp_path / "ours"
    google.write_directory(str(out), encoder.bert_config, encoder.get_canonical_weights(),
                           vocab_path=str(tmp_path / "vocab.txt"))
    want_seq, want_pooled, _ = _run_google(google_bert, out / "bert_config.json", ids, mask,
                                           types_, restore_prefix=out / "bert_model.ckpt")
    got_seq, got_pooled = _ours(encoder, ids, mask, types_)
    assert np.abs(got_seq - want_seq).max() <= 1e-5
    assert np.abs(got_pooled - want_pooled).max() <= 1e-5


def test_a_fine_tuning_runs_output_dir_loads_its_latest_checkpoint(tmp_path):
    """run_classifier.py's --output_dir keeps its last checkpoints (model.ckpt-<step>) and
    TensorFlow's `checkpoint` file naming the latest: that one loads; without the file,
    several checkpoints are an error naming them."""
    from keras_bert.checkpoints import CheckpointError
    from tests.models.tiny import tiny_encoder

    encoder = tiny_encoder(seed=0)
    weights = encoder.get_canonical_weights()
    google.write_directory(tmp_path, encoder.bert_config, weights)
    (tmp_path / "bert_model.ckpt.index").rename(tmp_path / "model.ckpt-100.index")
    (tmp_path / "bert_model.ckpt.data-00000-of-00001").rename(
        tmp_path / "model.ckpt-100.data-00000-of-00001")
    later = {k: v + 1.0 for k, v in weights.items()}
    google.write_checkpoint(later, str(tmp_path / "model.ckpt-200"))
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-200"\n'
                                         'all_model_checkpoint_paths: "model.ckpt-100"\n'
                                         'all_model_checkpoint_paths: "model.ckpt-200"\n')
    loaded = BertEncoder.from_preset(str(tmp_path)).get_canonical_weights()
    np.testing.assert_array_equal(loaded["bert/pooler/dense/bias"],
                                  later["bert/pooler/dense/bias"])
    (tmp_path / "checkpoint").unlink()
    with pytest.raises(CheckpointError, match=r"holds 2 TF checkpoints \(model.ckpt-100, "
                                              r"model.ckpt-200\) and no checkpoint file"):
        BertEncoder.from_preset(str(tmp_path))
