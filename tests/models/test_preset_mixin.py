"""`PresetMixin.from_preset`: how its keyword arguments are sorted and checked."""

import socket

import pytest

from keras_bert import BertConfig, BertEncoder


@pytest.fixture(scope="module")
def preset_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("preset")
    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=4, intermediate_size=32, max_position_embeddings=16)
    BertEncoder(config).save_to_preset(str(path))
    return str(path)


def test_misspelled_config_field_is_a_type_error_listing_what_is_accepted(preset_dir):
    with pytest.raises(TypeError, match=r"BertEncoder\.from_preset\(\) got unknown keyword "
                                        r"argument 'hiden_dropout_prob' \(did you mean "
                                        r"'hidden_dropout_prob'\?\)\. It accepts BertConfig "
                                        r"fields: vocab_size, .*hidden_dropout_prob.*; loading "
                                        r"options: url, sha256, do_lower_case, progress; "
                                        r"BertEncoder arguments: dtype, name, trainable\.$"):
        BertEncoder.from_preset(preset_dir, hiden_dropout_prob=0.2)


def test_misspelled_argument_fails_before_anything_is_loaded(tmp_path, monkeypatch):
    # "base" is not cached and cannot be downloaded here: the TypeError must come first,
    # before the cache is looked at or a connection is attempted.
    cache = tmp_path / "cache"
    monkeypatch.setenv("KERAS_BERT_HOME", str(cache))
    network = []  # every host lookup and connection attempted

    def no_lookup(host, *args, **kwargs):
        network.append(("getaddrinfo", host))
        raise socket.gaierror(socket.EAI_NONAME, f"test: no lookup of {host}")

    def no_connection(sock, address):
        network.append(("connect", address))
        raise ConnectionRefusedError(f"test: no connection to {address}")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    monkeypatch.setattr(socket.socket, "connect", no_connection)
    with pytest.raises(TypeError, match=r"got unknown keyword argument 'nme' \(did you mean "
                                        r"'name'\?\)"):
        BertEncoder.from_preset("base", nme="x")
    assert network == []
    assert not cache.exists()


def test_every_kind_of_argument_is_still_accepted(preset_dir):
    encoder = BertEncoder.from_preset(preset_dir, hidden_dropout_prob=0.2, do_lower_case=False,
                                      progress=False, dtype="mixed_bfloat16", name="e",
                                      trainable=False)
    assert encoder.bert_config.hidden_dropout_prob == 0.2
    assert encoder.do_lower_case is False
    assert (encoder.dtype_policy.name, encoder.name, encoder.trainable) == (
        "mixed_bfloat16", "e", False)


def test_save_to_preset_on_ram_writes_only_there_and_loads_back(tmp_path, monkeypatch):
    """ram:// stands for gs://: the same tf.io.gfile code. The encoder's and a task model's
    presets (vocabulary included) are written there, nothing on local disk, and load back."""
    import numpy as np

    from keras_bert import BertClassifier, BertPreprocessor, storage
    from tests.local_disk import nothing_written_locally
    from tests.models.tiny import VOCAB, tiny_encoder

    root = "ram://test_preset_mixin/save"
    storage.rmtree(root)
    encoder = tiny_encoder()
    encoder.vocabulary, encoder.do_lower_case = list(VOCAB), True
    classifier = BertClassifier(tiny_encoder(), 2,
                                preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    with nothing_written_locally(tmp_path, monkeypatch):
        assert encoder.save_to_preset(f"{root}/encoder") == f"{root}/encoder"
        classifier.save_to_preset(f"{root}/classifier")
        for name in ("encoder", "classifier"):
            assert storage.listdir(f"{root}/{name}") == [
                "bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                "bert_model.ckpt.index", "keras_bert.json", "vocab.txt"]
        loaded = BertEncoder.from_preset(f"{root}/encoder")
        assert loaded.vocabulary == list(VOCAB) and loaded.do_lower_case is True
        assert loaded.vocab_path == f"{root}/encoder/vocab.txt"
        np.testing.assert_array_equal(loaded.get_canonical_weights()["bert/pooler/dense/bias"],
                                      encoder.get_canonical_weights()["bert/pooler/dense/bias"])
        reloaded = BertClassifier.from_preset(f"{root}/classifier")
        np.testing.assert_allclose(reloaded.predict(["a great movie"], verbose=0),
                                   classifier.predict(["a great movie"], verbose=0), atol=1e-5)
        loaded.save_to_preset(f"{root}/encoder")  # over itself: its own vocab.txt is kept
        assert BertEncoder.from_preset(f"{root}/encoder").vocabulary == list(VOCAB)
    storage.rmtree(root)


def test_the_encoder_saves_in_each_format_and_transformers_reads_it(tmp_path):
    """save_to_preset(format=...): Google's files alone, or a BertModel directory that
    transformers' AutoModel and AutoTokenizer read (hidden states within 1e-4, the same ids);
    each loads back with the same weights, vocabulary and casing."""
    import numpy as np

    from keras_bert import BertPreprocessor
    from tests.conftest import minilm_dir
    from tests.dependencies import require
    from tests.models.tiny import TEXT_DEPENDENT, tiny_encoder

    torch = require("torch")
    transformers = require("transformers")
    vocab = (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    encoder = tiny_encoder(seed=1, vocab_size=len(vocab), **TEXT_DEPENDENT)
    encoder.vocabulary, encoder.do_lower_case = vocab, True
    texts = ["Paris is the capital of France.", "The cat sat on the mat, quietly."]
    for fmt in ("google", "huggingface"):
        path = encoder.save_to_preset(str(tmp_path / fmt), format=fmt)
        again = BertEncoder.from_preset(path)
        assert again.vocabulary == vocab and again.do_lower_case is True
        for name, value in encoder.get_canonical_weights().items():
            np.testing.assert_array_equal(again.get_canonical_weights()[name], value, name)
    packed = BertPreprocessor(vocab, seq_length=16)(texts)
    hf = transformers.AutoModel.from_pretrained(str(tmp_path / "huggingface")).eval()
    ids = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "huggingface"))(
        texts, padding="max_length", max_length=16, return_tensors="np")
    np.testing.assert_array_equal(ids["input_ids"], packed["input_word_ids"])
    with torch.no_grad():
        want = hf(**{k: torch.from_numpy(v).long() for k, v in ids.items()}).last_hidden_state
    got = np.asarray(encoder(packed)["sequence_output"])
    real = ids["attention_mask"].astype(bool)
    assert np.abs(got - want.numpy())[real].max() <= 1e-4 and np.ptp(want.numpy()) > 1.0
