"""tools/finetune.py end to end on a tiny preset: every task and data source, the outputs in
--model_dir, and one-line errors for bad data and flags.

The command lines of the files' runs and of the bad-data errors run in one fresh process
(`tests.tool_runs.run_cases`: one Python and TensorFlow start-up for all of them, each with
its own exit status, stdout and stderr), once for the module (the `runs` fixture); each test
checks its own; the TFDS run is one of them, inside `tfds.testing.mock_data`. The flag
errors run the tool in processes of their own.
"""

import json
import pathlib
import subprocess
import sys
import warnings

import keras
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "models"))
from tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder  # noqa: E402

from tests import tool_runs  # noqa: E402

# The TFDS run's command line runs inside tfds.testing.mock_data (tfds.load of a real set
# hangs offline).
MOCKED_TFDS = "__import__('tensorflow_datasets').testing.mock_data(num_examples=12)"


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    import keras_bert

    # A pre-trained encoder (no task head), as fine-tuning starts from: the head of each run
    # is its task's, fresh. A classifier preset would give its 2-class head to every run,
    # refused for another task or size.
    path = tmp_path_factory.mktemp("preset")
    classifier = tmp_path_factory.mktemp("classifier")
    keras_bert.BertClassifier(tiny_encoder(), 2,
                              preprocessor=keras_bert.BertPreprocessor(VOCAB, seq_length=16)).save_to_preset(
        str(classifier))
    keras_bert.BertEncoder.from_preset(str(classifier)).save_to_preset(str(path))
    return path


COMMON_FLAGS = ("--seq_length=16", "--epochs=1")


def _tool(*flags):
    command = [sys.executable, str(REPO / "tools" / "finetune.py"), *COMMON_FLAGS, *flags]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


# name -> flags(preset, d) of a command line whose run a test checks; d is a directory of its
# own (data files, --model_dir). Filled in below, next to the test that checks each.
RUNS = {}


def _with_model_dir(make_flags):
    return lambda p, d: [f"--model_dir={d / 'run'}", *make_flags(p, d)]


@pytest.fixture(scope="module")
def runs(preset, tmp_path_factory):
    """Every command line of RUNS and BAD_DATA, run in one process: name -> (the run's
    CompletedProcess, its directory)."""
    names, dirs, argvs = [], [], []
    for name, make_flags in list(RUNS.items()) + [
            (message, _with_model_dir(make_flags)) for make_flags, message in BAD_DATA]:
        d = tmp_path_factory.mktemp("run")
        names.append(name)
        dirs.append(d)
        argvs.append([*COMMON_FLAGS, f"--preset={preset}", *make_flags(preset, d)])
    # The TFDS run, inside MOCKED_TFDS.
    d = tmp_path_factory.mktemp("run")
    names.append("tfds")
    dirs.append(d)
    argvs.append(([*COMMON_FLAGS, f"--preset={preset}", "--tfds_name=glue/mrpc",
                   f"--model_dir={d}"], MOCKED_TFDS))
    _, results = tool_runs.run_cases("tools/finetune.py", argvs, timeout=1800)
    return {name: (result, d) for name, result, d in zip(names, results, dirs)}


def _classification(preset, d):
    rows = [(t, "pos") for t in POSITIVE] + [(t, "neg") for t in NEGATIVE]
    train = _write(d / "train.tsv", "sentence\tlabel\n" +
                   "".join(f"{t}\t{label}\n" for t, label in rows))
    test = _write(d / "test.tsv", "id\tsentence\n1\ta great movie\n2\tdull\n")
    return [f"--train_file={train}", f"--eval_file={train}", f"--test_file={test}",
            "--text_column=sentence", f"--model_dir={d / 'run'}",
            f"--export_dir={d / 'export' / '1'}"]


RUNS["classification"] = _classification


def test_classification_from_files_writes_every_output(runs):
    result, tmp_path = runs["classification"]
    model_dir = tmp_path / "run"
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("BertClassifier from ")
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert {"validation_accuracy", "validation_f1", "train_seconds"} <= set(metrics)
    assert "test_accuracy" not in metrics  # the test file has no labels
    # The run's figures, and the last epoch's loss under a key that says so.
    assert (metrics["epochs"], metrics["train_steps"], metrics["last_epoch"]["epoch"]) == (1, 1, 1)
    assert "train_loss" not in metrics and metrics["last_epoch"]["train_loss"] > 0
    assert "  last_epoch.train_loss: " in result.stdout
    assert metrics["label_names"] == ["neg", "pos"]  # how the string labels became ids
    predictions = [json.loads(line) for line in
                   (model_dir / "test_predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == 2 and predictions[0]["prediction"] in ("neg", "pos")
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file()
    assert list((model_dir / "checkpoints").iterdir())
    # model.keras holds no optimizer state (--save_optimizer_state keeps it) and loads silently.
    assert "optimizer" not in _weight_groups(model_dir / "model.keras")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(model_dir / "model.keras")
    assert [str(w.message) for w in caught] == []
    assert loaded.predict(["a great movie"], verbose=0).shape == (1, 2)
    assert loaded.label_names == ["neg", "pos"]


def _weight_groups(path):
    import io
    import zipfile

    import h5py

    with zipfile.ZipFile(path) as archive:
        with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as weights:
            return sorted(weights)


def _regression(preset, d):
    text = "a,b,score\n" + "".join(f"{x},{y},{i / 4}\n" for i, (x, y) in
                                   enumerate(zip(POSITIVE, NEGATIVE)))
    train = _write(d / "stsb.csv", text)
    return ["--task=regression", f"--train_file={train}", f"--eval_file={train}",
            "--text_column=a", "--text_b_column=b", "--label_column=score",
            f"--model_dir={d / 'run'}", "--save_optimizer_state"]


RUNS["regression"] = _regression


def test_regression_pairs_csv(runs):
    result, tmp_path = runs["regression"]
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert {"validation_pearson", "validation_spearman", "validation_mse"} <= set(metrics)
    assert "optimizer" in _weight_groups(tmp_path / "run" / "model.keras")
    resumed = keras.saving.load_model(tmp_path / "run" / "model.keras")
    assert int(resumed.optimizer.iterations) == 1  # 8 pairs, 1 epoch of batches of 32


def _lora_rows():
    return [(t, "pos") for t in POSITIVE] + [(t, "neg") for t in NEGATIVE]


def _lora(preset, d):
    train = _write(d / "train.tsv", "sentence\tlabel\n" +
                   "".join(f"{t}\t{label}\n" for t, label in _lora_rows()))
    return [f"--train_file={train}", "--text_column=sentence", f"--model_dir={d / 'run'}",
            "--lora_rank=2"]


RUNS["lora"] = _lora


def test_lora_rank_trains_factors_and_head_and_writes_what_trained(preset, runs):
    import keras
    import numpy as np

    import keras_bert

    result, tmp_path = runs["lora"]
    rows = _lora_rows()
    model_dir = tmp_path / "run"
    assert result.returncode == 0, result.stderr[-3000:]
    # 2 blocks x query, value x (16x2 + 2x16) factors, and the 16x2 + 2 head.
    trainable = 2 * 2 * (16 * 2 + 2 * 16) + 34
    assert result.stdout.startswith(f"BertClassifier from '{preset}' with LoRA rank 2 "
                                    f"({trainable:,} of ")
    assert f"{model_dir}/model.keras, model.lora.h5 and metrics.json" in result.stdout
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["lora_rank"] == 2 and metrics["learning_rate"] == 5e-4
    assert metrics["trainable_parameters"] == trainable < metrics["parameters"]
    # model.lora.h5 onto a fresh model of the preset is the model that trained.
    texts = [t for t, _ in rows]
    saved = keras.saving.load_model(model_dir / "model.keras")
    fresh = keras_bert.BertClassifier.from_preset(str(preset), num_classes=2, seq_length=16)
    fresh.load_lora_weights(str(model_dir / "model.lora.h5"))
    np.testing.assert_allclose(fresh.predict(texts, verbose=0), saved.predict(texts, verbose=0),
                               atol=1e-5)


def _tagging(preset, d):
    tagged = _write(d / "ner.jsonl", "".join(json.dumps(r) + "\n" for r in [
        {"tokens": ["paris", "is", "red"], "tags": ["LOC", "O", "O"]},
        {"tokens": ["the", "cat", "sat"], "tags": ["O", "O", "O"]}] * 4))
    return ["--task=tagging", f"--train_file={tagged}", f"--test_file={tagged}",
            "--text_column=tokens", "--label_column=tags", f"--model_dir={d / 'ner'}"]


def _multiple_choice(preset, d):
    choices = _write(d / "swag.jsonl", "".join(json.dumps(r) + "\n" for r in [
        {"ctx": "the cat", "endings": ["sat", "is red"], "label": 0}] * 6))
    return ["--task=multiple_choice", f"--train_file={choices}", f"--eval_file={choices}",
            "--text_column=ctx", "--text_b_column=endings", f"--model_dir={d / 'mc'}"]


RUNS["tagging"] = _tagging
RUNS["multiple_choice"] = _multiple_choice


def test_tagging_and_multiple_choice_jsonl(runs):
    result, tmp_path = runs["tagging"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("BertTokenClassifier from ")
    first = json.loads((tmp_path / "ner" / "test_predictions.jsonl").read_text().splitlines()[0])
    assert first["words"] == ["paris", "is", "red"] and len(first["tags"]) == 3
    assert set(first["tags"]) <= {"LOC", "O"}
    assert keras.saving.load_model(tmp_path / "ner" / "model.keras").label_names == ["LOC", "O"]
    result, tmp_path = runs["multiple_choice"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "validation_accuracy" in json.loads((tmp_path / "mc" / "metrics.json").read_text())


def _embedding(preset, d):
    from tests.models.test_text_embedder import ANCHORS, NEGATIVES, POSITIVES
    from tests.st_models import write_st_model

    st_dir = write_st_model(d / "st", pooling="mean", dense=[(8, "Tanh")])
    rows = [{"query": a, "positive": p, "hard": n}
            for a, p, n in zip(ANCHORS, POSITIVES, NEGATIVES)]
    train = _write(d / "train.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    # (the later --preset, the sentence-transformers model's, is the one the tool takes)
    return [f"--preset={st_dir}", "--task=embedding", f"--train_file={train}",
            f"--eval_file={train}", "--text_column=query", "--negative_column=hard",
            "--batch_size=4", f"--model_dir={d / 'run'}"]


RUNS["embedding"] = _embedding


def test_embedding_on_triples_of_a_sentence_transformers_model(runs):
    """--task=embedding: a BertTextEmbedder from a sentence-transformers model, trained on
    (anchor, positive, negative) rows with in-batch negatives, scored by retrieval."""
    result, tmp_path = runs["embedding"]
    st_dir = tmp_path / "st"
    model_dir = tmp_path / "run"
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(f"BertTextEmbedder from '{st_dir}': 8 training examples, "
                                    "8 validation")
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert {"validation_recall@1", "validation_recall@10", "validation_mrr@10",
            "validation_loss"} <= set(metrics)
    assert metrics["validation_recall@10"] == 1.0  # 8 positives: each is in the first 10
    assert 0 < metrics["validation_mrr@10"] <= 1 and metrics["train_steps"] == 2
    assert "  validation_mrr@10: " in result.stdout
    loaded = keras.saving.load_model(model_dir / "model.keras")
    assert loaded.dense == [{"units": 8, "activation": "tanh", "use_bias": True}]
    assert loaded.predict(["a cat"], verbose=0).shape == (1, 8)


def test_tfds_set_through_mock_data(runs):
    result, tmp_path = runs["tfds"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "12 training examples, 12 validation, 12 test" in result.stdout
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert "validation_accuracy" in metrics and "test_accuracy" not in metrics  # GLUE hides it


BAD_DATA = [
    (lambda p, d: [f"--train_file={d / 'missing.tsv'}", "--text_column=s"],
     "finetune.py: {d}/missing.tsv: no such data file."),
    (lambda p, d: ["--train_file=" + _write(d / "t.tsv", "text\tlabel\na\t1\n"),
                   "--text_column=sentence"],
     "finetune.py: {d}/t.tsv: no column 'sentence'; the columns are ['label', 'text']."),
    (lambda p, d: ["--train_file=" + _write(d / "e.csv", ""), "--text_column=s"],
     "finetune.py: {d}/e.csv: the file is empty; expected a header line and rows."),
    (lambda p, d: ["--train_file=" + _write(d / "r.tsv", "s\tlabel\na\thigh\n"),
                   "--text_column=s", "--task=regression"],
     "finetune.py: {d}/r.tsv line 2: label 'high' is not a number."),
    (lambda p, d: ["--tfds_name=glue/sst3"],
     "finetune.py: --tfds_name='glue/sst3' is not a set whose columns are known"),
    (lambda p, d: ["--train_file=" + _write(d / "p.tsv", "a\tb\tlabel\nx\ty\t1\n"),
                   "--text_column=a", "--text_b_column=b", "--seq_length=4"],
     "finetune.py: --seq_length=4 is too short for text pairs: [CLS] a [SEP] b [SEP] needs "
     "at least 5"),
    (lambda p, d: ["--task=embedding", "--train_file=" + _write(d / "q.tsv", "anchor\tdoc\na\tb\n")],
     "finetune.py: {d}/q.tsv: no column 'positive'; the columns are ['anchor', 'doc']."),
    (lambda p, d: ["--task=squad", f"--train_file={d / 'squad.json'}", "--seq_length=4"],
     "finetune.py: BertSpanLabeler packs (question, context) pairs, [CLS] q [SEP] c [SEP]: "
     "its preprocessor's seq_length must be at least 5, got 4"),
]


@pytest.mark.parametrize("make_flags, message", BAD_DATA)
def test_bad_data_is_one_line(runs, make_flags, message):
    result, tmp_path = runs[message]
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.startswith(message.format(d=tmp_path)), result.stderr[-3000:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr[-3000:]


def test_flag_errors(preset, tmp_path):
    result = _tool(f"--preset={preset}", f"--model_dir={tmp_path}")
    assert result.returncode == 1
    assert "Give --tfds_name or --train_file" in result.stderr
    result = _tool(f"--preset={preset}", f"--model_dir={tmp_path}", "--tfds_name=glue/sst2",
                   "--lora_rank=-1")
    assert result.returncode == 1
    assert "flag --lora_rank=-1: -1 is not a non-negative integer" in result.stderr


def _squad_json(version_2=False):
    paragraphs = [
        {"context": "the cat sat and the dog ran", "qas": [
            {"id": "q1", "question": "who sat", "answers": [{"text": "the cat",
                                                             "answer_start": 0}]},
            {"id": "q2", "question": "who ran", "answers": [{"text": "the dog",
                                                             "answer_start": 16}]}]},
        {"context": "paris is red but london is blue", "qas": [
            {"id": "q3", "question": "what is red", "answers": [{"text": "paris",
                                                                 "answer_start": 0}]},
            {"id": "q4", "question": "what is blue", "answers": [{"text": "london",
                                                                  "answer_start": 17}]}]},
    ]
    if version_2:  # SQuAD 2.0 marks every question, as run_squad.py requires
        for paragraph in paragraphs:
            for qa in paragraph["qas"]:
                qa["is_impossible"] = False
        paragraphs[0]["qas"].append({"id": "q5", "question": "who is good", "answers": [],
                                     "is_impossible": True})
    return json.dumps({"version": "2.0" if version_2 else "1.1",
                       "data": [{"title": "t", "paragraphs": paragraphs}]})


def _squad(version_2):
    def make_flags(preset, d):
        data = _write(d / "squad.json", _squad_json(version_2))
        return ["--task=squad", f"--train_file={data}", f"--eval_file={data}",
                f"--model_dir={d / 'run'}", "--doc_stride=4", "--max_query_length=4",
                "--batch_size=4", *(["--version_2_with_negative"] if version_2 else [])]

    return make_flags


def _squad_bad_json(preset, d):
    data = _write(d / "squad.json", '{"data": [{"paragraphs": [{"qas": []}]}]}')
    return ["--task=squad", f"--train_file={data}", f"--model_dir={d / 'run'}"]


RUNS["squad_1"] = _squad(False)
RUNS["squad_2"] = _squad(True)
RUNS["squad_bad_json"] = _squad_bad_json


@pytest.mark.parametrize("version_2", [False, True])
def test_squad_writes_predictions_and_official_metrics(runs, version_2):
    result, tmp_path = runs["squad_2" if version_2 else "squad_1"]
    model_dir = tmp_path / "run"
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("BertSpanLabeler from ")
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert {"exact_match", "f1", "train_features", "eval_examples"} <= set(metrics)
    assert 0 <= metrics["exact_match"] <= metrics["f1"] <= 100
    predictions = json.loads((model_dir / "predictions.json").read_text())
    assert sorted(predictions) == ["q1", "q2", "q3", "q4"] + (["q5"] if version_2 else [])
    assert (model_dir / "nbest_predictions.json").is_file()
    assert (model_dir / "null_odds.json").is_file() == version_2
    assert (model_dir / "model.keras").is_file()


def test_squad_bad_json_names_the_file(runs):
    result, _ = runs["squad_bad_json"]
    assert result.returncode == 1
    assert result.stderr.startswith("finetune.py: ") and "context" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
