"""BertTextEmbedder: sentence-transformers' vectors from its models (all-MiniLM-L6-v2 and tiny
ones of every pooling and projection), columns of texts, training on raw pairs and triples
with in-batch negatives, prompts, search, and the round trips (.keras, presets, LoRA, int8)."""

import keras
import numpy as np
import pytest

from keras_bert import (BertTextEmbedder, BertTextEmbedderPreprocessor,
                        MultipleNegativesRankingLoss)
from keras_bert.checks import TaskInputError
from tests.models.tiny import VOCAB, tiny_encoder
from tests.st_models import TEXTS, st_encode, write_st_model

ANCHORS = ["the cat sat", "a dog ran", "paris and london", "a red movie",
           "the actor was good", "a boring plot", "what fun", "a blue film"]
POSITIVES = ["a cat", "the dog", "london", "red", "a good actor", "the plot was boring",
             "very fun", "a blue movie"]
NEGATIVES = ["a dog", "the cat", "a movie", "blue", "a bad actor", "the plot was fun",
             "not fun", "a red movie"]


def _embedder(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    return BertTextEmbedder(tiny_encoder(), preprocessor=BertTextEmbedderPreprocessor(
        VOCAB, seq_length=16), **kwargs)


def _fast(embedder, learning_rate=3e-3):
    """``embedder`` compiled to learn in a few steps (its default is BERT's 5e-5)."""
    embedder.compile(optimizer=keras.optimizers.Adam(learning_rate))
    return embedder


def _cosines(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.sum(a * b, axis=-1)


# ------------------------------------------------------------------ sentence-transformers' vectors
@pytest.fixture(scope="module")
def minilm_texts():
    """Real text: Wikipedia prose lines, two of them longer than all-MiniLM-L6-v2's 256
    tokens (cut there, as sentence-transformers cuts them)."""
    from tests.text.corpus import wikipedia_lines

    lines = wikipedia_lines()
    return lines[:10] + [" ".join(lines[100:130]), " ".join(lines[200:260])]


@pytest.fixture(scope="module")
def minilm_reference(minilm_path, minilm_texts):
    return st_encode(minilm_path, minilm_texts)


@pytest.mark.parametrize("preset", ["minilm_l6", "directory"])
def test_minilm_gives_sentence_transformers_vectors(preset, minilm_path, minilm_texts,
                                                    minilm_reference):
    embedder = BertTextEmbedder.from_preset(
        str(minilm_path) if preset == "directory" else preset)
    assert (embedder.pooling, embedder.normalize, embedder.dense) == ("mean", True, [])
    assert embedder.preprocessor.seq_length == 256 and embedder.embedding_dim == 384
    tokens = [len(embedder.preprocessor.tokenizer.tokenize(t)) for t in minilm_texts]
    assert min(tokens[-2:]) > 256  # the long texts are cut
    cut = sum(n + 2 > 256 for n in tokens)
    with pytest.warns(UserWarning, match=f"{cut} of 12 texts were longer than seq_length=256"):
        got = embedder.predict(minilm_texts, verbose=0)
    assert got.shape == (12, 384) and got.dtype == np.float32
    np.testing.assert_allclose(got, minilm_reference, atol=1e-5, rtol=0)
    if preset == "minilm_l6":  # cut at BERT's usual 128 tokens, the long texts change
        embedder.preprocessor = BertTextEmbedderPreprocessor(embedder.preprocessor.tokenizer,
                                                             seq_length=128)
        short = embedder.predict(minilm_texts[-2:], verbose=0)
        assert _cosines(short, minilm_reference[-2:]).max() < 0.99


@pytest.mark.parametrize("pooling, dense, normalize", [
    ("mean", [], False), ("cls", [], True), ("max", [(8, "Tanh")], True),
    ("mean_sqrt_len_tokens", [(8, "ReLU"), (4, "Identity")], False),
    (("cls", "mean", "max"), [], True)])
def test_each_pooling_and_projection_gives_sentence_transformers_vectors(tmp_path, pooling,
                                                                          dense, normalize):
    directory = write_st_model(tmp_path / "st", pooling=pooling, dense=dense,
                               normalize=normalize)
    embedder = BertTextEmbedder.from_preset(str(directory))
    want = st_encode(directory, TEXTS)
    got = embedder.predict(TEXTS, verbose=0)
    assert got.shape == want.shape == (len(TEXTS), embedder.embedding_dim)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert np.abs(got[0] - got[1]).max() > 0.05  # vectors that depend on the text


def test_from_preset_arguments_come_before_the_model_s(tmp_path):
    directory = write_st_model(tmp_path / "st", pooling="max", dense=[(8, "Tanh")])
    embedder = BertTextEmbedder.from_preset(str(directory), pooling="cls", normalize=False,
                                            seq_length=12)
    assert (embedder.pooling, embedder.normalize, embedder.preprocessor.seq_length) == (
        "cls", False, 12)
    assert embedder.dense == [{"units": 8, "activation": "tanh", "use_bias": True}]


# ------------------------------------------------------------------ inputs
def test_columns_give_each_text_its_vector():
    embedder = _embedder()
    single = [embedder.predict(column, verbose=0) for column in (ANCHORS, POSITIVES, NEGATIVES)]
    columns = embedder.predict((ANCHORS, POSITIVES, NEGATIVES), verbose=0)
    assert columns.shape == (8, 3, 16)
    np.testing.assert_allclose(columns, np.stack(single, axis=1), atol=1e-5)
    pairs = embedder.predict([[a, p] for a, p in zip(ANCHORS, POSITIVES)], verbose=0)
    np.testing.assert_allclose(pairs, columns[:, :2], atol=1e-5)


def test_cutting_the_padding_changes_no_vector():
    embedder = _embedder(seed=1)
    texts = ANCHORS + ["a cat sat and a dog ran to paris"]
    trimmed = embedder.predict(texts, batch_size=3, verbose=0)
    embedder.trim_predictions = False  # every batch at seq_length 16
    np.testing.assert_allclose(embedder.predict(texts, batch_size=3, verbose=0), trimmed,
                               atol=1e-6)


# ------------------------------------------------------------------ training
@pytest.mark.parametrize("columns", [(ANCHORS, POSITIVES), (ANCHORS, POSITIVES, NEGATIVES)])
def test_fit_on_raw_columns_lowers_the_in_batch_negatives_loss(columns):
    embedder = _embedder()
    assert isinstance(embedder.loss, MultipleNegativesRankingLoss) and embedder.loss.scale == 20
    _fast(embedder)
    assert isinstance(embedder.loss, MultipleNegativesRankingLoss)  # compile's default loss
    before = embedder.evaluate(columns, batch_size=8, verbose=0)
    history = embedder.fit(columns, epochs=10, batch_size=8, verbose=0)
    after = embedder.evaluate(columns, batch_size=8, verbose=0)
    assert after < 0.5 * before, (before, after, history.history["loss"])
    hits = embedder.search(ANCHORS, POSITIVES, top_k=1)
    assert sum(row[0]["corpus_id"] == i for i, row in enumerate(hits)) >= 6


def test_matryoshka_dimensions_train_every_prefix():
    embedder = _embedder()
    loss = MultipleNegativesRankingLoss(matryoshka_dims=[16, 4])
    embedder.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss)
    short = MultipleNegativesRankingLoss(matryoshka_dims=[4])
    before = float(short(None, embedder.predict((ANCHORS, POSITIVES), verbose=0)))
    embedder.fit((ANCHORS, POSITIVES), epochs=10, batch_size=8, verbose=0)
    assert float(short(None, embedder.predict((ANCHORS, POSITIVES), verbose=0))) < 0.5 * before


def test_labels_are_refused_by_in_batch_negatives():
    embedder = _embedder()
    with pytest.raises(TaskInputError, match=r"BertTextEmbedder trains with in-batch "
                                             r"negatives, which take no labels"):
        embedder.fit((ANCHORS, POSITIVES), np.ones(8), verbose=0)
    with pytest.raises(ValueError, match=r"takes the embeddings of columns"):
        embedder.fit(ANCHORS, verbose=0)  # single texts: nothing to rank against


def test_lora_trains_the_factors_and_the_projection():
    embedder = _embedder(dense=8)
    embedder.enable_lora(2)
    trainable = sorted(v.path for v in embedder.trainable_weights)
    assert all("lora_kernel" in p or p.startswith("dense_0/") for p in trainable), trainable
    assert sum(p.startswith("dense_0/") for p in trainable) == 2
    assert len(trainable) == 2 + 2 * 2 * 2  # 2 blocks x (query, value) x (a, b)
    frozen = {v.path: v.numpy() for v in embedder.encoder.weights}
    before = embedder.evaluate((ANCHORS, POSITIVES), batch_size=8, verbose=0)
    _fast(embedder, 1e-2).fit((ANCHORS, POSITIVES), epochs=8, batch_size=8, verbose=0)
    assert embedder.evaluate((ANCHORS, POSITIVES), batch_size=8, verbose=0) < 0.85 * before
    assert all(np.array_equal(v.numpy(), frozen[v.path]) for v in embedder.encoder.weights
               if "lora_kernel" not in v.path)


def test_int8_keeps_the_vectors():
    embedder = _embedder(dense=8)
    want = embedder.predict(TEXTS, verbose=0)
    embedder.quantize("int8")
    got = embedder.predict(TEXTS, verbose=0)
    assert _cosines(got, want).min() > 0.99
    assert np.abs(got - want).max() > 0  # the int8 kernels ran


# ------------------------------------------------------------------ saving
def test_keras_round_trip(tmp_path):
    embedder = _embedder(dense={"units": 8, "activation": "linear"}, pooling=["cls", "mean"],
                         prompts={"query": "what "}, default_prompt_name="query")
    embedder.fit((ANCHORS, POSITIVES), epochs=1, batch_size=8, verbose=0)
    want = embedder.predict(TEXTS, verbose=0)
    embedder.save(tmp_path / "embedder.keras")
    loaded = keras.saving.load_model(tmp_path / "embedder.keras")
    assert isinstance(loaded, BertTextEmbedder)
    assert (loaded.pooling, loaded.dense, loaded.prompts, loaded.default_prompt_name) == (
        ["cls", "mean"], [{"units": 8, "activation": "linear", "use_bias": True}],
        {"query": "what "}, "query")
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), want, atol=1e-6)
    loaded.fit((ANCHORS, POSITIVES), epochs=1, batch_size=8, verbose=0)  # trains on


@pytest.mark.parametrize("where", ["local", "ram"])
def test_preset_round_trip_keeps_the_projection(tmp_path, where):
    embedder = _embedder(dense=[8, {"units": 4, "activation": "relu", "use_bias": False}],
                         normalize=False, prompts={"query": "what "})
    directory = str(tmp_path / "preset") if where == "local" else "ram://embedder/preset"
    embedder.save_to_preset(directory)
    loaded = BertTextEmbedder.from_preset(directory)
    assert loaded.get_config()["dense"] == embedder.get_config()["dense"]
    assert (loaded.prompts, loaded.normalize, loaded.preprocessor.seq_length) == (
        {"query": "what "}, False, 16)
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0),
                               embedder.predict(TEXTS, verbose=0), atol=1e-6)


# ------------------------------------------------------------------ prompts, similarity, search
def test_prompts_go_before_the_texts_as_sentence_transformers_puts_them():
    embedder = _embedder(prompts={"query": "what ", "passage": "a ", "other": "the "})
    plain = embedder.predict(["cat sat", "what cat sat", "a cat sat", "the cat sat"],
                             verbose=0)
    np.testing.assert_allclose(embedder.encode(["cat sat"]), plain[:1], atol=1e-6)
    np.testing.assert_allclose(embedder.encode("cat sat", prompt_name="other"), plain[3],
                               atol=1e-6)
    np.testing.assert_allclose(embedder.encode_query(["cat sat"]), plain[1:2], atol=1e-6)
    np.testing.assert_allclose(embedder.encode_document(["cat sat"]), plain[2:3], atol=1e-6)
    np.testing.assert_allclose(embedder.encode_query(["cat sat"], prompt="a "), plain[2:3],
                               atol=1e-6)
    assert np.abs(plain[0] - plain[1]).max() > 1e-3  # the prompt changes the vector
    with pytest.raises(ValueError, match=r"Prompt name 'passages' is not one of this model's "
                                         r"prompts \(\['other', 'passage', 'query'\]\)"):
        embedder.encode(["cat"], prompt_name="passages")
    defaulted = _embedder(prompts={"query": "what "}, default_prompt_name="query")
    np.testing.assert_allclose(defaulted.encode(["cat sat"]), plain[1:2], atol=1e-6)
    # (sentence-transformers' encode_document: no document prompt is no prompt, not the
    # default one)
    np.testing.assert_allclose(defaulted.encode_document(["cat sat"]), plain[:1], atol=1e-6)


def test_similarity_and_search_are_sentence_transformers_util():
    from tests.dependencies import require

    require("sentence_transformers")
    from sentence_transformers import util

    embedder = _embedder(normalize=False)
    queries, corpus = embedder.encode(ANCHORS[:3]), embedder.encode(POSITIVES)
    np.testing.assert_allclose(embedder.similarity(ANCHORS[:3], POSITIVES),
                               util.cos_sim(queries, corpus).numpy(), atol=1e-6)
    want = util.semantic_search(queries, corpus, top_k=3)
    for got in (embedder.search(ANCHORS[:3], POSITIVES, top_k=3),
                embedder.search(queries, corpus, top_k=3)):
        assert [[h["corpus_id"] for h in row] for row in got] == [
            [h["corpus_id"] for h in row] for row in want]
        np.testing.assert_allclose([[h["score"] for h in row] for row in got],
                                   [[h["score"] for h in row] for row in want], atol=1e-6)
    dot = _embedder(normalize=False, similarity_fn_name="dot")
    np.testing.assert_allclose(dot.similarity(queries, corpus),
                               util.dot_score(queries, corpus).numpy(), rtol=1e-5)


@pytest.mark.parametrize("kwargs, error", [
    ({"pooling": "sum"}, r"pooling must be one of 'mean', 'cls', 'max', 'mean_sqrt_len'"),
    ({"dense": {"units": 8, "activation": "softmax"}}, r"dense activation must be one of"),
    ({"dense": {"units": 0}}, r"dense units must be an int >= 1, got 0"),
    ({"dense": {"size": 8}}, r"dense takes units, activation and use_bias; got \['size'\]"),
    ({"prompts": {"query": 3}}, r"prompts must be a dict of name: text"),
    ({"default_prompt_name": "query"}, r"default_prompt_name 'query' is not one of the prompts"),
    ({"similarity_fn_name": "jaccard"}, r"similarity_fn_name must be one of"),
])
def test_bad_arguments_are_named(kwargs, error):
    with pytest.raises(ValueError, match=error):
        BertTextEmbedder(tiny_encoder(), **kwargs)
