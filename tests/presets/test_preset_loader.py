"""keras_bert/presets/preset_loader.py: every from_preset goes through one PresetLoader, which
resolves the preset once; arguments are checked before anything is resolved."""

import numpy as np
import pytest

import keras_bert
from keras_bert import BertClassifier, BertEncoder, BertPreprocessor, BertTokenizer
from keras_bert.presets import preset_loader
from keras_bert.presets.preset_loader import PresetLoader
from keras_bert.training import initial_model
from tests.models.tiny import tiny_encoder

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "great", "dull", "movie"]


@pytest.fixture()
def resolutions(monkeypatch):
    """The names load_preset was asked to resolve, in order."""
    calls = []
    real = preset_loader.load_preset

    def counting(name, **kwargs):
        calls.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(preset_loader, "load_preset", counting)
    return calls


@pytest.fixture()
def task_preset(tmp_path):
    encoder = tiny_encoder(vocab_size=len(VOCAB))
    model = BertClassifier(encoder, num_classes=3, preprocessor=BertPreprocessor(
        BertTokenizer(VOCAB), seq_length=16))
    path = str(tmp_path / "task")
    model.save_to_preset(path)
    return path, model


@pytest.mark.parametrize("load", [
    lambda p: BertEncoder.from_preset(p),
    lambda p: BertClassifier.from_preset(p),
    lambda p: BertClassifier.from_preset(p, preprocessor=None),
    lambda p: BertTokenizer.from_preset(p),
    lambda p: keras_bert.BertPackInputs.from_preset(p),
    lambda p: initial_model.build_pretrainer(preset=p, max_seq_length=16,
                                                 max_predictions_per_seq=2),
    lambda p: initial_model.build_pretrainer(init_checkpoint=p, max_seq_length=16,
                                                 max_predictions_per_seq=2),
])
def test_each_from_preset_resolves_the_preset_once(task_preset, resolutions, load):
    path, _ = task_preset
    load(path)
    assert resolutions == [path]


def test_a_task_preset_loads_back_with_its_head_and_preprocessor(task_preset, resolutions):
    path, model = task_preset
    loaded = BertClassifier.from_preset(path)
    assert loaded.num_classes == 3 and loaded.preprocessor.seq_length == 16
    texts = ["a great movie", "dull"]
    np.testing.assert_allclose(loaded.predict(texts, verbose=0), model.predict(texts, verbose=0),
                               atol=1e-6)


@pytest.mark.parametrize("load, message", [
    (lambda p: BertEncoder.from_preset(p, num_hiden_layers=1),
     r"BertEncoder.from_preset\(\) got unknown keyword argument 'num_hiden_layers' "
     r"\(did you mean 'num_hidden_layers'\?\)"),
    (lambda p: BertClassifier.from_preset(p, num_clases=2),
     r"BertClassifier.from_preset\(\) got unknown keyword argument 'num_clases' "
     r"\(did you mean 'num_classes'\?\)"),
    (lambda p: PresetLoader(p, shaa256="0"), r"PresetLoader\(\) got unknown keyword argument"),
])
def test_unknown_arguments_are_refused_before_anything_is_resolved(task_preset, resolutions,
                                                                   load, message):
    path, _ = task_preset
    with pytest.raises(TypeError, match=message):
        load(path)
    assert resolutions == []


def test_the_loader_builds_what_a_class_asks_for(task_preset):
    path, model = task_preset
    loader = PresetLoader(path, require_vocab=True)
    assert loader.load_config() == model.encoder.bert_config
    assert loader.load_config({"num_hidden_layers": 1}).num_hidden_layers == 1
    assert loader.load_tokenizer(BertTokenizer).get_vocabulary() == VOCAB
    encoder = loader.load_encoder(BertEncoder)
    assert encoder.vocabulary == VOCAB and encoder.preset_name is not None
    np.testing.assert_array_equal(encoder.get_canonical_weights()["bert/pooler/dense/kernel"],
                                  model.encoder.get_canonical_weights()["bert/pooler/dense/kernel"])
    preprocessor = loader.load_preprocessor(BertClassifier, seq_length=8)
    assert isinstance(preprocessor, BertPreprocessor) and preprocessor.seq_length == 8
    assert loader.metadata["task"]["class_name"] == "BertClassifier"
