"""keras_bert/training/squad_run.py, in process: a run trains a `BertSpanLabeler` on SQuAD
JSON, scores the evaluation file with the official metrics and writes its files (on
ram://, where gs:// paths go); SQuAD needs the model's tokenizer."""

import pytest

from keras_bert import BertSpanLabeler, storage
from keras_bert.training import squad_run

SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [
    {"context": "the cat sat and the dog ran", "qas": [
        {"id": "q1", "question": "who sat", "answers": [{"text": "the cat", "answer_start": 0}]},
        {"id": "q2", "question": "who ran", "answers": [{"text": "the dog",
                                                         "answer_start": 16}]}]},
    {"context": "paris is big but london is small", "qas": [
        {"id": "q3", "question": "what is big", "answers": [{"text": "paris",
                                                             "answer_start": 0}]}]},
]}]}


def test_a_run_trains_scores_and_writes_its_files():
    root = "ram://test_squad_run"
    storage.rmtree(root)
    data = f"{root}/squad.json"
    storage.write_json(data, SQUAD)
    model = BertSpanLabeler.from_preset("tiny_random", seq_length=24)
    metrics = squad_run.run(model, data, eval_file=data, max_seq_length=24, doc_stride=8,
                            max_query_length=4, batch_size=4, epochs=1,
                            model_dir=f"{root}/run", verbose=0)
    assert {"exact_match", "f1", "train_features", "eval_examples"} <= set(metrics)
    assert metrics["eval_examples"] == 3 and 0 <= metrics["exact_match"] <= metrics["f1"] <= 100
    files = set(storage.listdir(f"{root}/run"))
    assert {"predictions.json", "nbest_predictions.json", "metrics.json", "model.keras"} <= files
    assert "null_odds.json" not in files  # SQuAD 2.0 only
    assert sorted(storage.read_json(f"{root}/run/predictions.json")) == ["q1", "q2", "q3"]
    assert storage.read_json(f"{root}/run/metrics.json")["f1"] == metrics["f1"]
    storage.rmtree(root)


def test_squad_needs_the_model_s_tokenizer():
    model = BertSpanLabeler.from_preset("tiny_random", preprocessor=None)
    with pytest.raises(ValueError, match="SQuAD needs the model's tokenizer"):
        squad_run.features_of(model, SQUAD, is_training=True)
