"""checkpoints/task_heads.py: what a checkpoint's files say of its head (`TaskHead`), the
checks held against a task before it is built, and the arguments the head decides."""

import pytest

from keras_bert.checkpoints import CheckpointError, task_heads
from keras_bert.checkpoints.task_heads import (
    MASKED_LM, MULTIPLE_CHOICE, PRETRAINING, QUESTION_ANSWERING, SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION, TaskHead,
)

CLASSIFIER = {"output_weights": (3, 8), "output_bias": (3,)}
SQUAD = {"cls/squad/output_weights": (2, 8), "cls/squad/output_bias": (2,)}
MLM = {name: (1,) for name in task_heads.PREDICTIONS}


def test_transformers_default_label_names_are_no_names():
    assert task_heads.label_names_from_id2label({"0": "LABEL_0", "1": "LABEL_1"}, "c") is None
    assert task_heads.label_names_from_id2label({"1": "pos", "0": "neg"}, "c") == ["neg", "pos"]
    # Named by someone, even in part: kept as given.
    assert task_heads.label_names_from_id2label({0: "LABEL_0", 1: "spam"}, "c") == [
        "LABEL_0", "spam"]
    assert task_heads.label_names_from_id2label(None, "c") is None
    with pytest.raises(CheckpointError, match=r"c: id2label's ids are \[0, 2\], not 0\.\.1"):
        task_heads.label_names_from_id2label({"0": "a", "2": "b"}, "c")
    with pytest.raises(CheckpointError, match="c: id2label has ids that are not integers"):
        task_heads.label_names_from_id2label({"zero": "a"}, "c")
    with pytest.raises(CheckpointError, match="c: id2label holds names that are not strings"):
        task_heads.label_names_from_id2label({"0": 1}, "c")


def test_the_head_decides_the_arguments_the_files_describe():
    head = TaskHead(SEQUENCE_CLASSIFICATION, "config.json", label_names=["a", "b", "c"],
                    problem_type=task_heads.MULTI_LABEL, dropout=0.2)
    assert task_heads.head_arguments(SEQUENCE_CLASSIFICATION, CLASSIFIER, head) == {
        "num_classes": 3, "label_names": ["a", "b", "c"], "multi_label": True, "dropout": 0.2}
    # Google's files say nothing but the shape; another task's description adds nothing.
    assert task_heads.head_arguments(SEQUENCE_CLASSIFICATION, CLASSIFIER, None) == {
        "num_classes": 3}
    assert task_heads.head_arguments(TOKEN_CLASSIFICATION, CLASSIFIER, head) == {
        "num_classes": 3}
    assert task_heads.head_arguments(QUESTION_ANSWERING, SQUAD, None) == {}
    # A regression head keeps no names (one score: nothing to name).
    one = TaskHead(SEQUENCE_CLASSIFICATION, "c", label_names=["score"],
                   problem_type=task_heads.REGRESSION)
    assert task_heads.head_arguments(SEQUENCE_CLASSIFICATION, {"output_weights": (1, 8)},
                                     one)["label_names"] is None
    with pytest.raises(CheckpointError, match=r"config.json names 3 labels, but the "
                       r"checkpoint's head has 2 \(output_weights \(2, 8\)\)"):
        task_heads.head_arguments(SEQUENCE_CLASSIFICATION, {"output_weights": (2, 8)}, head)
    assert task_heads.described_arguments(SEQUENCE_CLASSIFICATION, head)["num_classes"] == 3


def test_which_heads_a_task_takes():
    check = task_heads.check_head
    google = None  # Google's files describe nothing: the names tell
    for task in (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION):
        assert check(task, CLASSIFIER, google, 8, "d", "T") is True
    assert check(MULTIPLE_CHOICE, {"output_weights": (1, 8), "output_bias": (1,)}, google, 8,
                 "d", "T") is True
    assert check(QUESTION_ANSWERING, SQUAD, google, 8, "d", "T") is True
    # Pre-training heads are no fine-tuned task's: a fresh head, no error.
    assert check(SEQUENCE_CLASSIFICATION, MLM, google, 8, "d", "T") is False
    assert check(MASKED_LM, MLM, google, 8, "d", "T") is True
    # The pre-training tasks read their heads beside any other.
    assert check(PRETRAINING, {**MLM, **SQUAD}, google, 8, "d", "T") is True
    with pytest.raises(CheckpointError, match=r"d holds a question-answering head \("
                       r"cls/squad/output_weights, cls/squad/output_bias\)"):
        check(TOKEN_CLASSIFICATION, SQUAD, google, 8, "d", "T")
    with pytest.raises(CheckpointError, match=r"d holds a classification head"):
        check(QUESTION_ANSWERING, CLASSIFIER, google, 8, "d", "T")
    described = TaskHead(TOKEN_CLASSIFICATION, "config.json (BertForTokenClassification)")
    with pytest.raises(CheckpointError, match=r"d holds a token-classification head \("
                       r"config.json \(BertForTokenClassification\)\), the head of another "
                       r"task than T's \(sequence-classification\)"):
        check(SEQUENCE_CLASSIFICATION, CLASSIFIER, described, 8, "d", "T")
    with pytest.raises(CheckpointError, match=r"output_weights \(3, 8\) .* takes "
                       r"output_weights \(n, 16\) and output_bias \(n,\)\."):
        check(SEQUENCE_CLASSIFICATION, CLASSIFIER, google, 16, "d", "T")


def test_a_converted_checkpoint_keeps_what_its_files_said():
    head = TaskHead(TOKEN_CLASSIFICATION, "config.json (BertForTokenClassification)",
                    label_names=["O", "B-PER"], dropout=0.3)
    again = task_heads.recorded_task({"head": head.to_dict()}, "keras_bert.json")
    assert again.to_dict() == head.to_dict()
    with pytest.raises(CheckpointError, match=r"keras_bert.json: head is .*; expected an "
                       r"object with a task of"):
        task_heads.recorded_task({"head": {"task": "translation"}}, "keras_bert.json")
    # A task preset saved before heads were recorded: its class tells.
    old = task_heads.recorded_task({"task": {"class_name": "BertTokenClassifier",
                                             "config": {"num_classes": 2}}}, "k.json")
    assert (old.task, old.num_labels) == (TOKEN_CLASSIFICATION, 2)
    assert task_heads.recorded_task({"task": {"class_name": "MyOwnTask"}}, "k.json") is None
