"""keras-hub converter: a BertBackbone saved with save_to_preset loads into BertEncoder."""

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointError
from tests.dependencies import require
from tests.presets.hub_servers import assign_to_backbone

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]


@pytest.fixture(scope="module")
def keras_hub_preset(tmp_path_factory):
    keras_hub = require("keras_hub")
    directory = tmp_path_factory.mktemp("keras_hub_preset")
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=32, hidden_act="gelu_tanh",
                        max_position_embeddings=20)
    ours = BertEncoder(config)
    rng = np.random.default_rng(0)
    weights = {k: rng.normal(0, 0.5, v.shape).astype("float32")
               for k, v in ours.get_canonical_weights().items()}
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=2, num_heads=4, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=20)
    assign_to_backbone(backbone, weights)
    backbone.save_to_preset(str(directory))
    keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True).save_to_preset(str(directory))
    return directory, backbone, weights


def test_keras_hub_preset_matches_backbone(keras_hub_preset):
    directory, backbone, weights = keras_hub_preset
    encoder = BertEncoder.from_preset(str(directory))
    assert encoder.bert_config.hidden_act == "gelu_tanh"
    assert encoder.do_lower_case is True
    assert encoder.vocab_path.endswith("vocabulary.txt")
    for name, value in encoder.get_canonical_weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    ids = np.array([[2, 7, 9, 11, 3, 0, 0], [2, 5, 6, 8, 10, 12, 3]], "int32")
    mask = (ids > 0).astype("int32")
    segments = np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1]], "int32")
    want = backbone({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})
    got = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": segments})
    real = mask.astype(bool)
    seq_diff = np.abs(np.asarray(got["sequence_output"]) - np.asarray(want["sequence_output"]))
    assert seq_diff[real].max() <= 1e-5
    pooled_diff = np.abs(np.asarray(got["pooled_output"]) - np.asarray(want["pooled_output"]))
    assert pooled_diff.max() <= 1e-5


def test_keras_hub_missing_weights_file(keras_hub_preset, tmp_path):
    import shutil

    directory, _, _ = keras_hub_preset
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    (copy / "model.weights.h5").unlink()
    with pytest.raises(CheckpointError, match="model.weights.h5"):
        BertEncoder.from_preset(str(copy))


@pytest.mark.parametrize("mutate, message", [
    (lambda v: v.pop("config"), r"no \"config\" object"),
    (lambda v: v.__setitem__("config", 3), r"no \"config\" object"),
    (lambda v: v["config"].pop("vocabulary_size"), r"lacks vocabulary_size"),
    (lambda v: v["config"].__setitem__("num_layers", "2"), r"num_hidden_layers must be a "
                                                            r"positive int, got '2'"),
])
def test_keras_hub_bad_config_names_the_file(keras_hub_preset, tmp_path, mutate, message):
    import json
    import shutil

    directory, _, _ = keras_hub_preset
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    values = json.loads((copy / "config.json").read_text())
    mutate(values)
    (copy / "config.json").write_text(json.dumps(values))
    with pytest.raises(CheckpointError, match=rf"{copy / 'config.json'}: .*{message}"):
        BertEncoder.from_preset(str(copy))


def test_a_keras_hub_classifier_loads_with_its_head(keras_hub_preset, tmp_path):
    """A BertTextClassifier preset (task.json, task.weights.h5) gives BertClassifier.from_preset
    its head, num_classes and activation: keras-hub's outputs on the same ids."""
    import shutil

    from keras_bert import BertClassifier

    keras_hub = require("keras_hub")
    import keras

    directory, backbone, _ = keras_hub_preset
    keras.utils.set_random_seed(3)
    classifier = keras_hub.models.BertTextClassifier(backbone, num_classes=3, preprocessor=None)
    kernel = classifier.output_dense.kernel
    kernel.assign(np.random.default_rng(1).normal(0, 1.0, kernel.shape).astype("float32"))
    copy = tmp_path / "classifier"
    shutil.copytree(directory, copy)
    classifier.save_to_preset(str(copy))
    assert (copy / "task.json").is_file() and (copy / "task.weights.h5").is_file()

    model = BertClassifier.from_preset(str(copy), preprocessor=None)
    assert model.num_classes == 3 and model.label_names is None
    ids = np.array([[2, 7, 9, 11, 3, 0, 0], [2, 5, 6, 8, 10, 12, 3]], "int32")
    mask = (ids > 0).astype("int32")
    segments = np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1]], "int32")
    want = np.asarray(classifier({"token_ids": ids, "segment_ids": segments,
                                  "padding_mask": mask}))
    got = model.predict({"input_word_ids": ids, "input_mask": mask, "input_type_ids": segments},
                        verbose=0)
    assert np.abs(got - want).max() <= 1e-5 and np.ptp(want) > 0.1
    with pytest.raises(CheckpointError, match=r"num_classes=2 was given, but the checkpoint's "
                                              r"sequence-classification head has 3 classes"):
        BertClassifier.from_preset(str(copy), num_classes=2, preprocessor=None)
