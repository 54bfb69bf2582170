"""keras_bert/data/sources.py, load_splits: a task's splits from data files, string labels
mapped the same in every split (the training file's names decide), evaluation files without
labels, the number of classes each task implies, and clear errors."""

import json

import pytest

from keras_bert.data import sources


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_string_labels_map_alike_in_every_split_and_test_files_need_no_labels(tmp_path):
    train = _write(tmp_path / "train.csv", "text,label\ngood,pos\nbad,neg\nfine,pos\n")
    dev = _write(tmp_path / "dev.csv", "text,label\nbad,neg\n")
    test = _write(tmp_path / "test.csv", "text\ngreat\n")
    splits = sources.load_splits("classification", train_file=train, eval_file=dev,
                                 test_file=test, text_column="text")
    assert sorted(splits) == ["test", "train", "validation"]
    assert splits["train"].label_names == ["neg", "pos"]
    assert splits["train"].labels == [1, 0, 1] and splits["validation"].labels == [0]
    assert splits["test"].labels is None and splits["test"].label_names == ["neg", "pos"]
    assert sources.num_classes("classification", splits) == 2


def test_pairs_regression_tagging_and_choices(tmp_path):
    pairs = _write(tmp_path / "sts.tsv", "a\tb\tscore\nhe ran\the sat\t0.5\n")
    splits = sources.load_splits("regression", train_file=pairs, text_column="a",
                                 text_b_column="b", label_column="score")
    assert splits["train"].texts_b == ["he sat"] and splits["train"].labels == [0.5]
    assert sources.num_classes("regression", splits) == 1
    tags = _write(tmp_path / "ner.jsonl", json.dumps({"w": ["paris", "is"], "t": [2, 0]}) + "\n")
    splits = sources.load_splits("tagging", train_file=tags, text_column="w", label_column="t")
    assert splits["train"].labels == [[2, 0]]
    assert sources.num_classes("tagging", splits) == 3  # the largest id + 1
    rows = [{"ctx": "he", "choices": ["ran", "sat", "slept"], "label": 1}]
    choices = _write(tmp_path / "mc.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    splits = sources.load_splits("multiple_choice", train_file=choices, text_column="ctx",
                                 text_b_column="choices")
    assert sources.num_classes("multiple_choice", splits) == 3


@pytest.mark.parametrize("kwargs, message", [
    (dict(task="ner"), "task must be one of"),
    (dict(task="squad", train_file="x.json"), "SQuAD data is read by keras_bert.data.squad"),
    (dict(task="classification", tfds_name="glue/sst2", train_file="x.csv"),
     "Give tfds_name or data files, not both"),
    (dict(task="regression", tfds_name="glue/sst2"), "glue/sst2 is a classification set"),
    (dict(task="classification"), "No training data: give tfds_name or train_file"),
    (dict(task="classification", train_file="x.csv"), "text_column names the column"),
])
def test_bad_requests_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sources.load_splits(**kwargs)


def test_bad_files_are_named(tmp_path):
    choices = _write(tmp_path / "mc.jsonl", '{"ctx": "he", "choices": ["a", "b"]}\n')
    with pytest.raises(ValueError, match="multiple_choice needs text_b_column"):
        sources.load_splits("multiple_choice", train_file=choices, text_column="ctx")
    unlabelled = _write(tmp_path / "train.csv", "text\ngood\n")
    with pytest.raises(ValueError, match=f"{unlabelled}: the training file needs labels"):
        sources.load_splits("classification", train_file=unlabelled, text_column="text",
                            label_column=None)
