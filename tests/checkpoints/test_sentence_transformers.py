"""The sentence-transformers format: what sentence-transformers wrote is described (pooling,
Dense, Normalize, max_seq_length, prompts) and its Dense weights read; what keras_bert cannot
compute is said, not refused, for the encoder; what `write` writes loads in
sentence-transformers with the same vectors."""

import json

import numpy as np
import pytest

from keras_bert import BertEncoder, BertTextEmbedder
from keras_bert.checkpoints import CheckpointError, open_directory
from keras_bert.checkpoints import sentence_transformers as st_format
from keras_bert.presets import PresetSaver
from tests.st_models import TEXTS, st_encode, write_st_model


@pytest.fixture(scope="module")
def st_dir(tmp_path_factory):
    return write_st_model(tmp_path_factory.mktemp("st") / "model", pooling=("cls", "max"),
                          dense=[(8, "Tanh"), (6, "Identity")],
                          prompts={"query": "query: ", "passage": "passage: "})


def test_what_sentence_transformers_wrote_is_described(st_dir):
    preset = open_directory(st_dir)
    assert preset.format == "sentence_transformers"
    assert preset.metadata[st_format.METADATA_KEY] == {
        "pooling": ["cls", "max"],
        "dense": [{"units": 8, "activation": "tanh", "use_bias": True},
                  {"units": 6, "activation": "linear", "use_bias": True}],
        "normalize": True, "max_seq_length": 32,
        # (sentence-transformers saves a "document" prompt of its own beside the model's)
        "prompts": {"query": "query: ", "passage": "passage: ", "document": ""},
        "default_prompt_name": None, "similarity_fn_name": "cosine", "unsupported": None}


def test_the_dense_weights_join_the_canonical_weights(st_dir):
    from safetensors.numpy import load_file

    weights = open_directory(st_dir).weights()
    for index, folder in enumerate(("2_Dense", "3_Dense")):
        stored = load_file(str(st_dir / folder / "model.safetensors"))
        kernel, bias = st_format.dense_names(index)
        np.testing.assert_array_equal(weights[kernel], stored["linear.weight"].T)
        np.testing.assert_array_equal(weights[bias], stored["linear.bias"])
    assert weights[st_format.dense_names(0)[0]].shape == (32, 8)  # [in, out]: cls + max


def test_the_minilm_preset_is_this_format(minilm_path):
    description = open_directory(minilm_path).metadata[st_format.METADATA_KEY]
    assert (description["pooling"], description["normalize"], description["dense"],
            description["max_seq_length"]) == (["mean"], True, [], 256)


def test_legacy_pooling_keys_and_the_tokenizer_s_max_length(tmp_path):
    directory = write_st_model(tmp_path / "old", pooling="mean_sqrt_len_tokens",
                               normalize=False)
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": 16, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True,
        "pooling_mode_mean_sqrt_len_tokens": True}))
    (directory / "sentence_bert_config.json").write_text('{"max_seq_length": 20}')
    description = open_directory(directory).metadata[st_format.METADATA_KEY]
    assert description["pooling"] == ["max", "mean_sqrt_len"]  # sentence-transformers' order
    assert (description["normalize"], description["max_seq_length"]) == (False, 20)
    (directory / "sentence_bert_config.json").write_text("{}")  # then the tokenizer's, <= 64
    assert open_directory(directory).metadata[st_format.METADATA_KEY]["max_seq_length"] == 32


@pytest.mark.parametrize("change, said", [
    ("weightedmean", "pooling mode weightedmean is not one keras_bert computes"),
    ("layer_norm", "module 2 is a LayerNorm, which keras_bert does not compute"),
    ("relu6", "activation_function 'torch.nn.modules.activation.ReLU6' is not one keras_bert"),
])
def test_what_keras_bert_cannot_compute_is_said_and_the_encoder_still_loads(tmp_path, change,
                                                                          said):
    from sentence_transformers.sentence_transformer.modules import LayerNorm

    if change == "weightedmean":
        directory = write_st_model(tmp_path / change, pooling="weightedmean")
    elif change == "layer_norm":
        directory = write_st_model(tmp_path / change, extra_modules=[LayerNorm])
    else:
        directory = write_st_model(tmp_path / change, dense=[(8, "Tanh")])
        config = json.loads((directory / "2_Dense" / "config.json").read_text())
        config["activation_function"] = "torch.nn.modules.activation.ReLU6"
        (directory / "2_Dense" / "config.json").write_text(json.dumps(config))
    description = open_directory(directory).metadata[st_format.METADATA_KEY]
    assert said in description["unsupported"]
    assert BertEncoder.from_preset(str(directory)).bert_config.hidden_size == 16
    with pytest.raises(ValueError, match=rf"BertTextEmbedder cannot compute this model's "
                                         rf"embedding: {directory}: .*{said}"):
        BertTextEmbedder.from_preset(str(directory))


@pytest.mark.parametrize("pooling, dense, normalize", [
    (("cls", "max"), [(8, "Tanh"), (6, "Identity")], True),
    ("mean_sqrt_len_tokens", [], False),
    (("mean", "cls"), [(5, "ReLU")], True),  # an order only the newer pooling_mode key says
])
def test_what_write_writes_loads_in_sentence_transformers_with_the_same_vectors(
        tmp_path, pooling, dense, normalize):
    source = write_st_model(tmp_path / "source", pooling=pooling, dense=dense,
                            normalize=normalize, prompts={"query": "q: "})
    want = st_encode(source, TEXTS)
    embedder = BertTextEmbedder.from_preset(str(source))
    embedder.save_to_preset(tmp_path / "written", format="sentence-transformers")
    np.testing.assert_allclose(st_encode(tmp_path / "written", TEXTS), want, atol=1e-5)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tmp_path / "written"), device="cpu")
    assert model.max_seq_length == 32 and model.prompts["query"] == "q: "
    assert len(model) == 2 + len(dense) + normalize


def test_a_preset_converts_to_sentence_transformers_without_a_model(st_dir, tmp_path):
    """The description travels with the preset: a preset saver writes it as it is."""
    PresetSaver(tmp_path / "copy", format="sentence_transformers").save_preset(
        open_directory(st_dir))
    np.testing.assert_allclose(st_encode(tmp_path / "copy", TEXTS), st_encode(st_dir, TEXTS),
                               atol=1e-5)


def test_another_task_has_no_place_in_the_format(tmp_path):
    from keras_bert import BertClassifier
    from tests.models.tiny import tiny_encoder

    with pytest.raises(CheckpointError, match=r"a BertClassifier's head has no place in it"):
        BertClassifier(tiny_encoder(), num_classes=2).save_to_preset(
            tmp_path / "no", format="sentence_transformers")
    assert not (tmp_path / "no").exists()


def test_an_encoder_alone_is_written_with_mean_pooling(tmp_path):
    from tests.models.tiny import VOCAB, tiny_encoder

    encoder = tiny_encoder(seed=0)
    encoder.vocabulary, encoder.do_lower_case = VOCAB, True
    PresetSaver(tmp_path / "plain", format="sentence_transformers").save_encoder(encoder)
    modules = json.loads((tmp_path / "plain" / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling"]
    described = open_directory(tmp_path / "plain").metadata[st_format.METADATA_KEY]
    assert (described["pooling"], described["normalize"]) == (["mean"], False)


def test_hub_files_are_the_format_s_own():
    names = ["config.json", "model.safetensors", "modules.json", "sentence_bert_config.json",
             "config_sentence_transformers.json", "1_Pooling/config.json",
             "2_Dense/config.json", "2_Dense/model.safetensors", "3_Normalize/config.json",
             "README.md", "onnx/model.onnx", "openvino/openvino_model.bin"]
    assert st_format.hub_files(names) == sorted(names[2:9])
    assert st_format.hub_files(["config.json", "1_Pooling/config.json"]) == []
