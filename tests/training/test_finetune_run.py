"""training/finetune_run.py: the recipe sized to the run, model_dir outputs, the task scores."""

import json
import os
import warnings

import h5py
import numpy as np
import pytest

from keras_bert import BertClassifier, BertPreprocessor, BertTokenClassifier
from keras_bert.data.files import Examples
from keras_bert.training import finetune_run
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder


def _model(num_classes=2):
    return BertClassifier(tiny_encoder(seed=0), num_classes=num_classes,
                          preprocessor=BertPreprocessor(VOCAB, seq_length=16))


def test_fine_tune_sizes_the_schedule_and_writes_checkpoints_and_logs(tmp_path):
    model = _model()
    texts = POSITIVE + NEGATIVE
    labels = np.array([1] * len(POSITIVE) + [0] * len(NEGATIVE))
    history = finetune_run.fine_tune(model, texts, labels, validation_data=(texts[:4], labels[:4]),
                                 batch_size=4, epochs=2, learning_rate=1e-3,
                                 model_dir=str(tmp_path), verbose=0)
    steps = model.steps_per_epoch(len(texts), 4) * 2
    schedule = model.optimizer.learning_rate_schedule
    assert float(schedule(steps)) == pytest.approx(0.0, abs=1e-12)  # decays to 0 at the end
    assert int(model.optimizer.iterations) == steps
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["epoch-1.weights.h5",
                                                            "epoch-2.weights.h5"]
    # Weights only, as the docs say: no optimizer group (Keras' save_weights adds AdamW's
    # state, twice the weights), and a fresh model loads the last one without a warning.
    with h5py.File(tmp_path / "checkpoints" / "epoch-2.weights.h5", "r") as weights:
        assert sorted(weights) == ["layers", "preprocessor", "vars"]
    fresh = _model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh.load_weights(tmp_path / "checkpoints" / "epoch-2.weights.h5")
    assert [str(w.message) for w in caught] == []
    np.testing.assert_allclose(fresh.predict(texts, verbose=0), model.predict(texts, verbose=0),
                               atol=1e-6)
    assert os.listdir(tmp_path / "logs")
    assert history.train_seconds > 0 and "val_accuracy" in history.history
    assert len(history.epoch_seconds) == 2 and history.learning_rate == 1e-3


def test_fine_tune_default_learning_rate_follows_lora():
    model = _model()
    model.enable_lora(2)
    texts = POSITIVE + NEGATIVE
    labels = np.array([1] * len(POSITIVE) + [0] * len(NEGATIVE))
    history = finetune_run.fine_tune(model, texts, labels, batch_size=8, epochs=1, verbose=0)
    assert history.learning_rate == model.default_learning_rate() == 5e-4
    assert model.optimizer.learning_rate_schedule.peak_learning_rate == 5e-4
    embeddings = (len(VOCAB) + 64 + 2) * 16 + 2 * 16  # word, position, type; LayerNorm
    block = 4 * (16 * 16 + 16) + (16 * 32 + 32) + (32 * 16 + 16) + 2 * 2 * 16
    pooler, head = 16 * 16 + 16, 16 * 2 + 2
    lora = 2 * 2 * (16 * 2 + 2 * 16)  # query and value of 2 blocks: A [16, 2], B [2, 16]
    assert finetune_run.trainable_summary(model) == {
        "lora_rank": 2, "trainable_parameters": lora + head,
        "parameters": embeddings + 2 * block + pooler + head + lora}
    assert finetune_run.trainable_summary(_model())["lora_rank"] == 0


def test_scores_per_task():
    y = np.array([1, 0, 1, 1, 0, 0])

    class Fixed:  # a stand-in with the one method scores() calls, predicting given logits
        num_classes = 2

        def __init__(self, out):
            self.out = out

        def predict(self, x, batch_size=None, verbose=0):
            return self.out

    logits = np.array([[0, 1], [1, 0], [0, 1], [1, 0], [1, 0], [0, 1]], "float32")
    s = finetune_run.scores(Fixed(logits), None, y)
    assert s["accuracy"] == pytest.approx(4 / 6)
    assert s["f1"] == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))
    assert s["matthews_corrcoef"] == pytest.approx(1 / 3)
    reg = Fixed(np.array([[1.0], [2.0], [3.0], [4.0]]))
    reg.num_classes = 1
    s = finetune_run.scores(reg, None, np.array([1.5, 2.0, 3.5, 3.9]))
    assert s["spearman"] == pytest.approx(1.0) and 0.9 < s["pearson"] < 1.0


def _weights_bytes(model):
    return sum(w.nbytes for w in model.get_weights())


def _h5_groups(path):
    import io
    import zipfile

    import h5py

    with zipfile.ZipFile(path) as archive:
        with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as weights:
            return sorted(weights)


def test_model_keras_leaves_the_optimizer_out_and_loads_without_warnings(tmp_path):
    """model.keras of a fine-tuning run once held AdamW's two moments per weight (three times
    the model) and warned on loading ("Skipping variable loading for optimizer"): by default
    it is the model's size and loads silently, on either load path; include_optimizer=True
    keeps the state, to resume where training stopped."""
    import logging
    import warnings

    import keras

    model = BertClassifier(tiny_encoder(hidden_size=128, intermediate_size=256), 2,
                           preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    texts = POSITIVE + NEGATIVE
    labels = np.array([1] * len(POSITIVE) + [0] * len(NEGATIVE))
    finetune_run.fine_tune(model, texts, labels, batch_size=8, epochs=1, verbose=0)
    path = finetune_run.save_model(model, str(tmp_path / "run"))
    assert path == str(tmp_path / "run" / "model.keras")
    resumable = finetune_run.save_model(model, str(tmp_path / "resumable"), include_optimizer=True)
    assert int(model.optimizer.iterations) == 2 and model.compiled  # the model keeps its own
    weights = _weights_bytes(model)
    assert os.path.getsize(path) < 1.2 * weights  # weights, config and vocabulary
    assert os.path.getsize(resumable) > 2.5 * weights  # and AdamW's two moments per weight
    assert "optimizer" not in _h5_groups(path) and "optimizer" in _h5_groups(resumable)

    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logging.getLogger().addHandler(handler)  # absl, keras and tensorflow log through it
    try:
        for compile in (True, False):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                loaded = keras.saving.load_model(path, compile=compile)
            assert [str(w.message) for w in caught] == [] and records == [], compile
        with warnings.catch_warnings(record=True) as caught:  # the check sees a warning:
            warnings.simplefilter("always")  # a saved state declined by compile=False
            keras.saving.load_model(resumable, compile=False)
        assert any("Skipping variable loading for optimizer" in str(w.message) for w in caught)
    finally:
        logging.getLogger().removeHandler(handler)
    np.testing.assert_allclose(loaded.predict(texts, verbose=0),
                               model.predict(texts, verbose=0), atol=1e-5)
    assert int(loaded.optimizer.iterations) == 0  # a fresh optimizer, the default recipe
    loaded.fit(texts, labels, batch_size=8, verbose=0)  # and it trains on
    resumed = keras.saving.load_model(resumable)
    assert int(resumed.optimizer.iterations) == 2
    np.testing.assert_allclose(resumed.optimizer.variables[-1].numpy(),
                               model.optimizer.variables[-1].numpy())


def test_a_run_from_and_to_ram_writes_every_output_there_and_nothing_locally(tmp_path,
                                                                            monkeypatch):
    """What tools/finetune.py does with --preset, --train_file, --test_file, --model_dir and
    --export_dir on ram:// (which stands for gs://: the same tf.io.gfile code)."""
    import keras
    import tensorflow as tf

    from keras_bert import storage
    from keras_bert.data import sources
    from tests.local_disk import nothing_written_locally

    root = "ram://test_finetune_library/run_on_ram"
    storage.rmtree(root)
    rows = [(t, "pos") for t in POSITIVE] + [(t, "neg") for t in NEGATIVE]
    with nothing_written_locally(tmp_path, monkeypatch):
        _model().save_to_preset(f"{root}/preset")
        train = storage.write_text(f"{root}/data/train.tsv", "sentence\tlabel\n" + "".join(
            f"{t}\t{label}\n" for t, label in rows))
        test = storage.write_text(f"{root}/data/test.tsv", "sentence\na great movie\ndull\n")
        splits = sources.load_splits("classification", train_file=train, eval_file=train,
                                     test_file=test, text_column="sentence")
        model = BertClassifier.from_preset(f"{root}/preset", num_classes=2, seq_length=16)
        metrics = finetune_run.run(model, splits, batch_size=4, epochs=1, learning_rate=1e-3,
                               model_dir=f"{root}/model", export_dir=f"{root}/export/1",
                               verbose=0)
        assert storage.listdir(f"{root}/model") == [
            "checkpoints", "logs", "metrics.json", "model.keras", "test_predictions.jsonl"]
        assert storage.read_json(f"{root}/model/metrics.json") == metrics
        assert "validation_accuracy" in metrics
        # The string labels' mapping (sorted: neg 0, pos 1) is recorded and named.
        assert metrics["label_names"] == ["neg", "pos"] == model.label_names
        predictions = storage.read_text(f"{root}/model/test_predictions.jsonl").splitlines()
        assert len(predictions) == 2
        assert {json.loads(line)["prediction"] for line in predictions} <= {"neg", "pos"}
        assert storage.listdir(f"{root}/model/checkpoints") == ["epoch-1.weights.h5"]
        reloaded = keras.saving.load_model(f"{root}/model/model.keras")
        np.testing.assert_allclose(reloaded.predict(["a great movie"], verbose=0),
                                   model.predict(["a great movie"], verbose=0), atol=1e-5)
        assert reloaded.label_names == ["neg", "pos"]
        assert storage.listdir(f"{root}/export") == ["1"]  # no temporary directory left
        served = tf.saved_model.load(f"{root}/export/1")
        out = served.signatures["serving_default"](text=tf.constant(["a great movie"]))
        assert out["labels"].numpy()[0].decode() in ("neg", "pos")
    storage.rmtree(root)


def test_name_classes_records_the_data_s_names_or_maps_the_data_to_the_model_s():
    """String labels become ids in the order of the training data's names (sorted); a model
    without names takes them, a model with names keeps its ids and the data follows them."""
    names = ["neg", "neu", "pos"]
    splits = {"train": Examples(["a", "b", "c"], labels=[0, 1, 2], label_names=names),
              "test": Examples(["d"], label_names=names)}
    model = _model(num_classes=3)
    assert finetune_run.name_classes(model, splits) is splits and model.label_names == names
    named = _model(num_classes=3)
    named.label_names = ["pos", "neg", "neu"]  # e.g. a preset saved with other ids
    mapped = finetune_run.name_classes(named, splits)
    assert mapped["train"].labels == [1, 2, 0]  # neg, neu, pos in the model's ids
    assert mapped["train"].label_names == mapped["test"].label_names == named.label_names
    assert splits["train"].labels == [0, 1, 2]  # the caller's splits are left as they were
    tagger = BertTokenClassifier(tiny_encoder(), 2, label_names=["O", "LOC"])
    tagged = {"train": Examples([["paris", "is"]], labels=[[0, 1]], label_names=["LOC", "O"])}
    assert finetune_run.name_classes(tagger, tagged)["train"].labels == [[1, 0]]
    with pytest.raises(ValueError, match=r"The train data's labels \['mixed'\] are not classes "
                                         r"of the model, whose label_names are \['pos', "):
        finetune_run.name_classes(named, {"train": Examples(
            ["a", "b"], labels=[0, 1], label_names=["mixed", "neg"])})
    unnamed = _model(num_classes=5)  # --num_classes=5 with three names: left unnamed
    assert finetune_run.name_classes(unnamed, splits) is splits and unnamed.label_names is None
