"""Hugging Face converter: parity with transformers on the real all-MiniLM-L6-v2 weights."""

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointError, huggingface, open_directory
from tests.dependencies import require

SENTENCES = [
    "The cat sat on the mat.",
    "A man is playing a guitar on the street corner while people walk by.",
    "Hello!",
    "Machine learning models convert text into dense vectors.",
    "The quick brown fox jumps over the lazy dog near the riverbank at dawn.",
    "Is it going to rain tomorrow?",
    "Stock markets fell sharply after the central bank raised interest rates again.",
    "I love pizza.",
    "Transformers use self-attention to relate every token to every other token in a sequence.",
    "She finished the marathon in under four hours.",
    "Paris is the capital of France.",
    "The committee postponed its decision until more evidence could be gathered from the field.",
    "Dogs bark.",
    "Quantum computers exploit superposition and entanglement to solve certain problems faster.",
    "My phone battery dies too quickly.",
    "The museum's new exhibition features paintings from the Dutch Golden Age.",
    "Why?",
    "Researchers discovered a new species of frog in the rainforests of Madagascar last year.",
    "Please pass the salt.",
    "The old lighthouse keeper watched the storm roll in across the grey, churning sea.",
    "Coffee or tea?",
    "Unbelievably, the underdog team won the championship in overtime.",
]


def test_minilm_parity_with_transformers(minilm_path):
    torch = require("torch")
    transformers = require("transformers")
    tokenizer = transformers.BertTokenizer.from_pretrained(str(minilm_path))
    batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
    ids = batch["input_ids"].astype("int32")
    mask = batch["attention_mask"].astype("int32")
    types = batch["token_type_ids"].astype("int32")
    lengths = mask.sum(1)
    assert len(SENTENCES) >= 20 and lengths.min() < 8 and lengths.max() > 18

    reference = transformers.BertModel.from_pretrained(str(minilm_path), torch_dtype=torch.float32)
    reference.eval()
    with torch.no_grad():
        out = reference(
            input_ids=torch.from_numpy(ids).long(),
            attention_mask=torch.from_numpy(mask).long(),
            token_type_ids=torch.from_numpy(types).long(),
        )
    want_seq = out.last_hidden_state.numpy()
    want_pooled = out.pooler_output.numpy()

    encoder = BertEncoder.from_preset("minilm_l6")
    assert encoder.bert_config.hidden_act == "gelu"  # HF "gelu" is the exact erf form
    assert encoder.do_lower_case is True and encoder.vocab_path.endswith("vocab.txt")
    got = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    got_seq = np.asarray(got["sequence_output"])
    got_pooled = np.asarray(got["pooled_output"])

    real = mask.astype(bool)
    seq_diff = np.abs(got_seq - want_seq)[real].max()
    pooled_diff = np.abs(got_pooled - want_pooled).max()
    print(f"minilm parity: sequence_output max abs diff {seq_diff:.3g}, "
          f"pooled_output {pooled_diff:.3g}")
    assert seq_diff <= 1e-4
    assert pooled_diff <= 1e-4


def _small_config():
    return BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=32, max_position_embeddings=24)


def _random_weights(config, seed=0, heads=False):
    from keras_bert.checkpoints.common import encoder_shapes, head_shapes

    rng = np.random.default_rng(seed)
    shapes = encoder_shapes(config)
    if heads:
        shapes.update(head_shapes(config))
    return {k: rng.normal(size=s).astype("float32") for k, s in shapes.items()}


def _write_vocab(path, n):
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                              + [f"tok{i}" for i in range(n - 5)]) + "\n")


def test_write_read_round_trip_with_heads_and_bert_prefix(tmp_path):
    config = _small_config()
    weights = _random_weights(config, heads=True)
    _write_vocab(tmp_path / "vocab.txt", config.vocab_size)
    huggingface.write_directory(tmp_path / "hf", config, weights, tmp_path / "vocab.txt")
    from safetensors.numpy import load_file

    keys = load_file(str(tmp_path / "hf" / "model.safetensors"))
    assert "bert.embeddings.word_embeddings.weight" in keys
    assert "cls.seq_relationship.weight" in keys
    checkpoint = open_directory(tmp_path / "hf")
    assert checkpoint.format == "huggingface" and checkpoint.config == config
    back = checkpoint.weights()
    assert sorted(back) == sorted(weights)
    for name in weights:
        np.testing.assert_array_equal(back[name], weights[name], err_msg=name)


def test_old_gamma_beta_names_are_read(tmp_path):
    from safetensors.numpy import load_file, save_file

    config = _small_config()
    weights = _random_weights(config)
    huggingface.write_directory(tmp_path, config, weights)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    renamed = {k.replace("LayerNorm.weight", "LayerNorm.gamma")
               .replace("LayerNorm.bias", "LayerNorm.beta"): v for k, v in tensors.items()}
    save_file(renamed, str(tmp_path / "model.safetensors"))
    back = huggingface.read_weights(tmp_path, config)
    np.testing.assert_array_equal(back["bert/embeddings/LayerNorm/gamma"],
                                  weights["bert/embeddings/LayerNorm/gamma"])


def test_pytorch_bin_is_read_with_torch(tmp_path):
    torch = require("torch")
    from safetensors.numpy import load_file

    config = _small_config()
    weights = _random_weights(config)
    huggingface.write_directory(tmp_path, config, weights)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    torch.save({k: torch.from_numpy(v) for k, v in tensors.items()},
               str(tmp_path / "pytorch_model.bin"))
    (tmp_path / "model.safetensors").unlink()
    back = huggingface.read_weights(tmp_path, config)
    np.testing.assert_array_equal(back["bert/pooler/dense/kernel"],
                                  weights["bert/pooler/dense/kernel"])


@pytest.mark.parametrize("key", ["is_decoder", "add_cross_attention"])
def test_a_decoder_config_is_refused(key):
    """transformers' BertLMHeadModel saves no pooler either, but its attention is causal."""
    values = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 32, "vocab_size": 50, key: True}
    with pytest.raises(CheckpointError, match=r"<dict>: a BERT decoder .* attends both ways"):
        huggingface.config_from_json(values)
    huggingface.config_from_json(dict(values, **{key: False}))


def test_missing_weights_file_names_the_file(tmp_path):
    config = _small_config()
    huggingface.write_directory(tmp_path, config, _random_weights(config))
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors"):
        BertEncoder.from_preset(str(tmp_path))


def test_corrupt_weights_file_names_the_file(tmp_path):
    config = _small_config()
    huggingface.write_directory(tmp_path, config, _random_weights(config))
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(CheckpointError, match="model.safetensors"):
        BertEncoder.from_preset(str(tmp_path))


# ------------------------------------------------------------ directories transformers writes
def _transformers_dir(tmp_path, architecture="BertModel", **kwargs):
    require("torch")
    require("transformers")
    from tests.checkpoints.transformers_dirs import write_transformers_dir

    return write_transformers_dir(tmp_path / architecture, architecture, **kwargs)


@pytest.mark.parametrize("architecture", ["BertForTokenClassification",
                                          "BertForQuestionAnswering", "BertForMaskedLM"])
def test_transformers_models_without_a_pooler_load_as_encoders(tmp_path, architecture):
    """transformers builds these with add_pooling_layer=False and saves no pooler; the
    encoder loads with a fresh one, says so once, and its sequence_output is transformers'."""
    import warnings

    from safetensors.numpy import load_file

    from keras_bert import BertPreprocessor
    from tests.checkpoints.transformers_dirs import hidden_states

    directory, model, tokenizer = _transformers_dir(tmp_path, architecture, num_labels=3)
    assert not any(k.startswith("bert.pooler") for k in load_file(directory / "model.safetensors"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoder = BertEncoder.from_preset(str(directory))
    pooler = [w for w in caught if "no pooler" in str(w.message)]
    assert len(pooler) == 1 and "pooler starts fresh" in str(pooler[0].message), caught
    assert encoder.fresh_pooler is not None

    batch = tokenizer(SENTENCES, padding="max_length", max_length=40, truncation=True,
                      return_tensors="np")
    packed = BertPreprocessor.from_preset(str(directory), seq_length=40)(SENTENCES)
    np.testing.assert_array_equal(packed["input_word_ids"], batch["input_ids"])
    got = np.asarray(encoder(packed)["sequence_output"])
    real = batch["attention_mask"].astype(bool)
    diff = np.abs(got - hidden_states(model, batch))[real].max()
    assert diff <= 1e-4, diff
