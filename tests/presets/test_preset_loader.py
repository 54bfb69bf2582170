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


# ------------------------------------------------------------ checkpoints without a pooler
@pytest.fixture()
def no_pooler(tmp_path):
    """A Hugging Face directory of a model without a pooler (as transformers'
    BertForTokenClassification saves one) and the weights it holds."""
    from keras_bert.checkpoints import huggingface
    from keras_bert.checkpoints.common import POOLER

    encoder = tiny_encoder(vocab_size=len(VOCAB))
    weights = {k: v + 0.5 for k, v in encoder.get_canonical_weights().items() if k not in POOLER}
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    huggingface.write_directory(tmp_path / "ner", encoder.bert_config, weights,
                                vocab_path=tmp_path / "vocab.txt")
    return str(tmp_path / "ner"), weights


def _pooler_warnings(load):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load()
    return model, [str(w.message) for w in caught if "no pooler" in str(w.message)]


def test_a_checkpoint_without_a_pooler_warns_once_where_the_pooled_output_is_read(no_pooler):
    path, weights = no_pooler
    for cls in (keras_bert.BertTokenClassifier, keras_bert.BertSpanLabeler,
                keras_bert.BertMaskedLM):
        kwargs = {"num_classes": 3} if cls is keras_bert.BertTokenClassifier else {}
        model, said = _pooler_warnings(lambda: cls.from_preset(path, preprocessor=None, **kwargs))
        assert said == [], cls.__name__  # it never reads the pooled output
        assert model.encoder.fresh_pooler is not None
    for load in (lambda: BertEncoder.from_preset(path),
                 lambda: BertClassifier.from_preset(path, num_classes=2, preprocessor=None),
                 lambda: keras_bert.BertMultipleChoice.from_preset(path, num_choices=2,
                                                                   preprocessor=None)):
        model, said = _pooler_warnings(load)
        assert len(said) == 1 and said[0].startswith(f"{path}: the checkpoint has no pooler")
    encoder = model.encoder
    for name, value in weights.items():
        np.testing.assert_array_equal(encoder.get_canonical_weights()[name], value, err_msg=name)


def test_a_fresh_pooler_is_not_saved_as_trained(no_pooler, tmp_path):
    from keras_bert.checkpoints.common import POOLER

    path, _ = no_pooler
    with pytest.warns(UserWarning, match="no pooler"):
        encoder = BertEncoder.from_preset(path)
    saved = encoder.save_to_preset(str(tmp_path / "as_loaded"))
    assert not set(POOLER) & set(keras_bert.presets.load_preset(saved).weights())
    again, said = _pooler_warnings(lambda: BertEncoder.from_preset(saved))
    assert len(said) == 1  # loads as the checkpoint did: fresh pooler, said so
    # A pooler changed since (trained, or set) is saved.
    weights = encoder.get_canonical_weights()
    weights["bert/pooler/dense/bias"] = weights["bert/pooler/dense/bias"] + 1.0
    encoder.set_canonical_weights(weights)
    trained = keras_bert.presets.load_preset(encoder.save_to_preset(str(tmp_path / "trained")))
    np.testing.assert_array_equal(trained.weights()["bert/pooler/dense/bias"],
                                  weights["bert/pooler/dense/bias"])
    task = keras_bert.BertTokenClassifier.from_preset(path, num_classes=2, preprocessor=None)
    task_saved = keras_bert.presets.load_preset(task.save_to_preset(str(tmp_path / "task")))
    assert not set(POOLER) & set(task_saved.weights())


# ------------------------------------------------------------ checked before anything is built
class _RecordingEncoder(BertEncoder):
    """A BertEncoder that records every construction."""

    built = []

    def __init__(self, *args, **kwargs):
        _RecordingEncoder.built.append(kwargs.get("name"))
        super().__init__(*args, **kwargs)


class _RecordingClassifier(BertClassifier):
    encoder_cls = _RecordingEncoder


def _checkpoint(tmp_path, fmt):
    """A tiny checkpoint in ``fmt``, as its own tools write it."""
    from keras_bert.checkpoints import google, huggingface

    encoder = tiny_encoder(vocab_size=len(VOCAB))
    if fmt == "keras_hub":
        from tests.dependencies import require
        from tests.presets.hub_servers import assign_to_backbone

        keras_hub = require("keras_hub")
        config = encoder.bert_config
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
            num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
            intermediate_dim=config.intermediate_size,
            max_sequence_length=config.max_position_embeddings)
        assign_to_backbone(backbone, encoder.get_canonical_weights())
        backbone.save_to_preset(str(tmp_path / fmt))
    elif fmt == "keras_bert":
        encoder.save_to_preset(str(tmp_path / fmt))
    else:
        module = {"google": google, "huggingface": huggingface}[fmt]
        module.write_directory(tmp_path / fmt, encoder.bert_config,
                               encoder.get_canonical_weights())
    return str(tmp_path / fmt)


# A config whose weights would take 1.2 GB, and 13 s to build on 2 cores.
HUGE = dict(num_hidden_layers=4, hidden_size=4096, num_attention_heads=64,
            intermediate_size=16384)


@pytest.mark.parametrize("fmt", ["keras_bert", "google", "huggingface", "keras_hub"])
def test_weights_that_do_not_fit_the_config_fail_before_any_model_is_built(tmp_path, fmt):
    from keras_bert.checkpoints import CheckpointError

    path = _checkpoint(tmp_path, fmt)
    _RecordingEncoder.built.clear()
    with pytest.raises(CheckpointError, match=r"missing variable\(s\) bert/encoder/layer_2/.* "
                       r"\(the checkpoint has 2 layers, the config says num_hidden_layers=4\)"):
        _RecordingEncoder.from_preset(path, **HUGE)
    with pytest.raises(CheckpointError, match=r"has shape \(\d+, 16\) but the config expects "
                       r"\(\d+, 4096\)"):
        _RecordingClassifier.from_preset(path, num_classes=2, preprocessor=None,
                                         **dict(HUGE, num_hidden_layers=2))
    assert _RecordingEncoder.built == []  # failed in the check, not after building
    assert _RecordingEncoder.from_preset(path).bert_config.hidden_size == 16
    assert len(_RecordingEncoder.built) == 1


# ------------------------------------------------------------ task heads
class _RecordingSpanLabeler(keras_bert.BertSpanLabeler):
    encoder_cls = _RecordingEncoder


class _RecordingChoices(keras_bert.BertMultipleChoice):
    encoder_cls = _RecordingEncoder


def _task_directory(tmp_path, model, fmt):
    """``model`` saved in ``fmt`` with its head (a tiny model: TEXT_DEPENDENT weights)."""
    return model.save_to_preset(str(tmp_path / f"{type(model).__name__}-{fmt}"), format=fmt)


@pytest.mark.parametrize("fmt", ["keras_bert", "huggingface", "google"])
def test_a_head_of_another_task_is_an_error_before_anything_is_built(tmp_path, fmt):
    from keras_bert.checkpoints import CheckpointError

    squad = _task_directory(tmp_path, keras_bert.BertSpanLabeler(
        tiny_encoder(vocab_size=len(VOCAB)), preprocessor=BertPreprocessor(VOCAB, 16)), fmt)
    classifier = _task_directory(tmp_path, BertClassifier(
        tiny_encoder(vocab_size=len(VOCAB)), 3, preprocessor=BertPreprocessor(VOCAB, 16)), fmt)
    _RecordingEncoder.built.clear()
    described = {"keras_bert": r"\(BertSpanLabeler\)",
                 "huggingface": r"\(.*config\.json \(BertForQuestionAnswering\)\)",
                 "google": r"\(cls/squad/output_weights, cls/squad/output_bias\)"}[fmt]
    with pytest.raises(CheckpointError, match=rf"{squad} holds a question-answering head "
                       rf"{described}, the head of another task than _RecordingClassifier's "
                       r"\(sequence-classification\)\. Load it with the task it was trained "
                       r"for, or give _RecordingClassifier a new head on the checkpoint's "
                       r"encoder: _RecordingClassifier\(BertEncoder\.from_preset\(\.\.\.\), "
                       r"\.\.\.\)\."):
        _RecordingClassifier.from_preset(squad, num_classes=2)
    described = {"keras_bert": "a sequence-classification head",
                 "huggingface": "a sequence-classification head",
                 "google": r"a classification head \(output_weights, output_bias: "
                           r"run_classifier\.py's\)"}[fmt]
    with pytest.raises(CheckpointError, match=rf"holds {described}.* than "
                                              r"_RecordingSpanLabeler's \(question-answering\)"):
        _RecordingSpanLabeler.from_preset(classifier)
    assert _RecordingEncoder.built == []
    # The pre-training tasks take any checkpoint's encoder (and their heads where it has them).
    assert keras_bert.BertMaskedLM.from_preset(classifier, preprocessor=None) is not None


def test_the_head_decides_num_classes_and_one_it_disagrees_with_is_an_error(tmp_path):
    from keras_bert.checkpoints import CheckpointError

    path = _task_directory(tmp_path, BertClassifier(
        tiny_encoder(vocab_size=len(VOCAB)), 3, label_names=["a", "b", "c"],
        preprocessor=BertPreprocessor(VOCAB, 16)), "huggingface")
    _RecordingEncoder.built.clear()
    with pytest.raises(CheckpointError, match=r"num_classes=2 was given, but the checkpoint's "
                       r"sequence-classification head has 3 classes \(a, b, c\)\. Leave "
                       r"num_classes out to load that head, or give _RecordingClassifier a new "
                       r"one on the checkpoint's encoder: _RecordingClassifier\(BertEncoder\."
                       r"from_preset\(\.\.\.\), num_classes=2\)\."):
        _RecordingClassifier.from_preset(path, num_classes=2)
    assert _RecordingEncoder.built == []
    model = BertClassifier.from_preset(path, num_classes=3, label_names=["x", "y", "z"])
    assert model.num_classes == 3 and model.label_names == ["x", "y", "z"]  # names: given win
    # Without weights: the architecture the files describe (id2label's count and names).
    fresh = BertClassifier.from_preset(path, load_weights=False)
    assert (fresh.num_classes, fresh.label_names) == (3, ["a", "b", "c"])


def test_head_shapes_the_task_cannot_take_are_errors_before_anything_is_built(tmp_path):
    from keras_bert.checkpoints import CheckpointError, google

    encoder = tiny_encoder(vocab_size=len(VOCAB))
    weights = encoder.get_canonical_weights()
    rng = np.random.default_rng(0)
    for name, head in [("squad3", {"cls/squad/output_weights": (3, 16),
                                   "cls/squad/output_bias": (3,)}),
                       ("choices2", {"output_weights": (2, 16), "output_bias": (2,)}),
                       ("bias", {"output_weights": (2, 16), "output_bias": (3,)})]:
        google.write_directory(tmp_path / name, encoder.bert_config,
                               {**weights, **{k: rng.normal(size=s) for k, s in head.items()}})
    _RecordingEncoder.built.clear()
    with pytest.raises(CheckpointError, match=r"squad3: its question-answering head has "
                       r"cls/squad/output_weights \(3, 16\) and cls/squad/output_bias \(3,\); "
                       r"_RecordingSpanLabeler takes cls/squad/output_weights \(2, 16\) and "
                       r"cls/squad/output_bias \(2,\): a start and an end logit per token\."):
        _RecordingSpanLabeler.from_preset(str(tmp_path / "squad3"), preprocessor=None)
    with pytest.raises(CheckpointError, match=r"choices2: its multiple-choice head has "
                       r"output_weights \(2, 16\) .* takes output_weights \(1, 16\) and "
                       r"output_bias \(1,\): one score per choice\."):
        _RecordingChoices.from_preset(str(tmp_path / "choices2"), num_choices=2,
                                      preprocessor=None)
    with pytest.raises(CheckpointError, match=r"bias: its sequence-classification head has "
                       r"output_weights \(2, 16\) and output_bias \(3,\)"):
        _RecordingClassifier.from_preset(str(tmp_path / "bias"), preprocessor=None)
    assert _RecordingEncoder.built == []
    # Google's output_weights [2, hidden], told apart by nothing but their shape: two classes.
    assert BertClassifier.from_preset(str(tmp_path / "choices2"),
                                      preprocessor=None).num_classes == 2


def test_no_head_for_the_task_gives_a_fresh_one_said_once_in_the_log(tmp_path, caplog):
    import logging

    encoder = tiny_encoder(vocab_size=len(VOCAB))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    encoder.vocab_path = str(tmp_path / "vocab.txt")
    path = encoder.save_to_preset(str(tmp_path / "encoder"))
    _RecordingEncoder.built.clear()
    with pytest.raises(TypeError, match=r"_RecordingClassifier.from_preset\('encoder'\) needs "
                       r"num_classes: the checkpoint holds no sequence-classification head to "
                       r"take it from\."):
        _RecordingClassifier.from_preset(path)
    assert _RecordingEncoder.built == []
    with caplog.at_level(logging.INFO, logger="keras_bert"):
        model = BertClassifier.from_preset(path, num_classes=2, seq_length=16)
    said = [r.getMessage() for r in caplog.records if "starts fresh" in r.getMessage()]
    assert said == [f"{path} holds no sequence-classification head: BertClassifier's head "
                    "(output_weights, output_bias) starts fresh; train it before using its "
                    "outputs."]
    caplog.clear()
    saved = model.save_to_preset(str(tmp_path / "classifier"))
    with caplog.at_level(logging.INFO, logger="keras_bert"):
        BertClassifier.from_preset(saved)
    assert not [r for r in caplog.records if "starts fresh" in r.getMessage()]
