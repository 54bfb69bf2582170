"""PretrainingLoop: the original run_pretraining.py loss on the global batch, XLA, fp16 loss
scaling, loops and eval metrics; PretrainingOptions' flag checks; an in-process run."""

import json
import pathlib
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.training import create_optimizer
from keras_bert.training.pretraining_loop import PretrainingLoop
from keras_bert.training.pretraining_run import PretrainingError, PretrainingOptions, pretrain

REPO = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
import pretraining_cases as cases  # noqa: E402

VOCAB = 40


def _model(dtype=None):
    keras.utils.set_random_seed(1)
    config = keras_bert.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=32,
                                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return keras_bert.BertPretrainer(keras_bert.BertEncoder(config, dtype=dtype))


def _batch(size=4, seq=10, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, (size, seq)).astype("int32")
    weights = np.ones((size, predictions), "float32")
    weights[0, -1] = 0.0  # a padding prediction
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids),
            "masked_lm_positions": rng.integers(1, seq, (size, predictions)).astype("int32"),
            "masked_lm_ids": rng.integers(5, VOCAB, (size, predictions)).astype("int32"),
            "masked_lm_weights": weights,
            "next_sentence_labels": (np.arange(size) % 2).astype("int32")}


def _reference_loss(model, batch):
    """run_pretraining.py's get_masked_lm_output + get_next_sentence_output, in numpy."""
    out = model.predict({k: batch[k] for k in ("input_word_ids", "input_mask",
                                               "input_type_ids", "masked_lm_positions")},
                        verbose=0)
    log_probs = tf.nn.log_softmax(out["mlm_logits"]).numpy()
    picked = np.take_along_axis(log_probs, batch["masked_lm_ids"][..., None], -1)[..., 0]
    w = batch["masked_lm_weights"]
    mlm = -np.sum(picked * w) / (np.sum(w) + 1e-5)
    nsp_log = tf.nn.log_softmax(out["nsp_logits"]).numpy()
    nsp = -np.mean(nsp_log[np.arange(len(w)), batch["next_sentence_labels"]])
    return mlm + nsp


@pytest.mark.parametrize("jit_compile", [False, True])
def test_step_loss_is_the_original_loss_and_training_lowers_it(jit_compile):
    model = _model()
    batch = _batch()
    expected = _reference_loss(model, batch)
    loop = PretrainingLoop(model, create_optimizer(1e-2, num_train_steps=20),
                           global_batch_size=4, jit_compile=jit_compile)
    loop.train_step(batch)
    first = loop.take_train_metrics()
    assert first["loss"] == pytest.approx(expected, rel=1e-5)
    assert (first["steps"], first["sequences"]) == (1, 4)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    loop.train_loop(iter(dataset), 10)
    later = loop.take_train_metrics()
    assert later["steps"] == 10 and later["loss"] < first["loss"]
    assert int(model.optimizer.iterations.numpy()) == 0  # the loop's optimizer, not compile's
    evaluated = loop.evaluate(iter(dataset), 2)
    assert evaluated["sequences"] == 8
    assert evaluated["masked_lm_loss"] + evaluated["next_sentence_loss"] == pytest.approx(
        _reference_loss(model, batch), rel=1e-4)


def test_fp16_with_dynamic_loss_scaling():
    model = _model(dtype="mixed_float16")
    optimizer = keras.optimizers.LossScaleOptimizer(create_optimizer(1e-2, num_train_steps=5))
    loop = PretrainingLoop(model, optimizer, global_batch_size=4)
    loop.train_loop(iter(tf.data.Dataset.from_tensors(_batch()).repeat()), 3)
    metrics = loop.take_train_metrics()
    assert np.isfinite(metrics["loss"]) and optimizer.dynamic_scale.numpy() > 0
    assert model.encoder.dtype_policy.name == "mixed_float16"


def test_loop_arguments_are_checked():
    with pytest.raises(ValueError, match=r"global batch size \(0\) must be a positive"):
        PretrainingLoop(_model(), create_optimizer(1e-3, 5), global_batch_size=0)
    with pytest.raises(TypeError, match="needs a keras_bert optimizer"):
        PretrainingLoop(_model(), keras.optimizers.SGD(), global_batch_size=2)


@pytest.mark.parametrize("changes, message", [
    (dict(preset="tiny", bert_config_file="c.json"), "do not combine it with"),
    (dict(bert_config_file=None), "Give the model: --preset"),
    (dict(num_train_steps=0), "--num_train_steps must be a positive integer"),
    (dict(num_warmup_steps=11), r"--num_warmup_steps=11 must be in \[0, --num_train_steps=10\]"),
    (dict(max_predictions_per_seq=40), "--max_predictions_per_seq=40 is more than "
                                       "--max_seq_length=32"),
    (dict(input_format="json"), "--input_format must be one of"),
    (dict(learning_rate=0.0), "--learning_rate must be > 0"),
    (dict(input_format="text", vocab_file=None), "--input_format=text tokenizes"),
    (dict(vocab_file="/no/such/vocab.txt"), "--vocab_file=/no/such/vocab.txt: no such file"),
    (dict(mixed_precision="fp8"), "--mixed_precision must be one of"),
])
def test_options_errors_name_the_flag(tmp_path, changes, message):
    config = cases.bert_config(tmp_path / "bert_config.json")
    values = dict(model_dir=str(tmp_path), input_file="x", bert_config_file=config,
                  max_seq_length=32, max_predictions_per_seq=5, num_train_steps=10,
                  num_warmup_steps=1)
    values.update(changes)
    with pytest.raises(PretrainingError, match=message):
        PretrainingOptions(**values).check()


def test_resume_with_another_batch_size_is_refused(tmp_path):
    corpus = cases.write_wiki_corpus(tmp_path / "wiki.txt", num_documents=2)
    options = PretrainingOptions(
        model_dir=str(tmp_path / "run"), input_file=corpus, input_format="text",
        bert_config_file=cases.bert_config(tmp_path / "c.json", layers=1, hidden=16),
        vocab_file=cases.vocab_file(), max_seq_length=32, max_predictions_per_seq=5,
        train_batch_size=4, num_train_steps=2, num_warmup_steps=0, steps_per_loop=2,
        save_checkpoints_steps=2)
    lines = []
    metrics = pretrain(options, log=lines.append)
    assert metrics["total_train_steps"] == 2 and lines[0].startswith("step 2/2")
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["total_train_steps"] == 2
    options.train_batch_size, options.num_train_steps = 2, 4
    with pytest.raises(PretrainingError, match="was trained with --train_batch_size=4, this "
                                               "command says 2"):
        pretrain(options, log=lines.append)


def test_a_run_on_ram_reads_and_writes_only_there_and_its_model_loads_back(tmp_path,
                                                                          monkeypatch):
    """ram:// stands for gs://: the same tf.io.gfile code. Inputs, checkpoints, logs,
    progress, metrics and the final model are all there, and nothing is on local disk."""
    import keras_bert
    from keras_bert import storage
    from tests.local_disk import nothing_written_locally

    root = "ram://test_pretraining/ram_run"
    storage.rmtree(root)
    corpus = cases.write_wiki_corpus(f"{root}/inputs/wiki.txt", num_documents=2)
    config = storage.copy(cases.bert_config(tmp_path / "c.json", layers=1, hidden=16),
                          f"{root}/inputs/bert_config.json")
    vocab = storage.copy(cases.vocab_file(), f"{root}/inputs/vocab.txt")
    options = PretrainingOptions(
        model_dir=f"{root}/run", input_file=corpus, input_format="text",
        bert_config_file=config, vocab_file=vocab, max_seq_length=32,
        max_predictions_per_seq=5, train_batch_size=4, num_train_steps=2, num_warmup_steps=0,
        steps_per_loop=1, save_checkpoints_steps=2)
    with nothing_written_locally(tmp_path, monkeypatch):
        metrics = pretrain(options, log=lambda line: None)
        files = storage.listdir(f"{root}/run")
        assert {"bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                "bert_model.ckpt.index", "vocab.txt", "keras_bert.json", "metrics.json",
                "progress.jsonl", "checkpoints", "logs"} <= set(files), files
        assert not [name for name in files if name.startswith(".tmp-")]
        assert storage.read_json(f"{root}/run/metrics.json")["total_train_steps"] == 2
        assert [json.loads(line)["step"] for line in
                storage.read_text(f"{root}/run/progress.jsonl").splitlines()] == [1, 2]
        assert storage.glob(f"{root}/run/checkpoints/ckpt-2.index")
        encoder = keras_bert.BertEncoder.from_preset(f"{root}/run")
        assert encoder.bert_config.hidden_size == 16 and metrics["total_train_steps"] == 2
        assert encoder.vocabulary == storage.read_text(vocab).splitlines()
        np.testing.assert_array_equal(
            encoder.get_canonical_weights()["bert/pooler/dense/bias"],
            keras_bert.checkpoints.open_directory(f"{root}/run").weights()[
                "bert/pooler/dense/bias"])
        # Phase 2 starts from the checkpoint there, by prefix or by directory.
        from keras_bert.training.initial_model import build_pretrainer

        for init in (f"{root}/run/bert_model.ckpt", f"{root}/run"):
            phase_two = build_pretrainer(bert_config_file=config, init_checkpoint=init,
                                         vocab_file=vocab, max_seq_length=32,
                                         max_predictions_per_seq=5)
            np.testing.assert_array_equal(
                phase_two.encoder.get_canonical_weights()["bert/pooler/dense/bias"],
                encoder.get_canonical_weights()["bert/pooler/dense/bias"])
    storage.rmtree(root)
