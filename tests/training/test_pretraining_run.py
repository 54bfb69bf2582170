"""keras_bert/training/pretraining_run.py: PretrainingOptions' flag checks (each names its
flag), and in-process runs of pretrain: resuming with another batch size refused, a run on
ram:// that reads and writes only there and whose model loads back."""

import json
import pathlib
import sys

import numpy as np
import pytest

from keras_bert.training.pretraining_run import PretrainingError, PretrainingOptions, pretrain

REPO = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
import pretraining_cases as cases  # noqa: E402


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
