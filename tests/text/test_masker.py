"""MaskedLMMasker: statistics over >= 100k real tokens, special tokens, whole words, seeds."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPackInputs, BertTokenizer, MaskedLMMasker
from tests import keras_files


@pytest.fixture(scope="module")
def packed(minilm_vocab, wiki_lines):
    """Real Wikipedia text, packed as pairs of 128 tokens: ~125k maskable tokens."""
    tok = BertTokenizer(minilm_vocab)
    lines = [line for line in wiki_lines if len(line) > 200][:2000]
    ids = tok(lines)
    packer = BertPackInputs(128)
    out = packer([ids[0::2], ids[1::2]])
    candidates = (out["input_mask"].numpy() == 1) & ~np.isin(out["input_word_ids"], [0, 101, 102])
    assert candidates.sum() >= 100_000, candidates.sum()
    return tok, out, candidates


def _stats(tok, packed_out, candidates, **kwargs):
    masker = MaskedLMMasker(tok.get_vocabulary(), max_predictions_per_seq=20, seed=7, **kwargs)
    out = masker(packed_out)
    original = packed_out["input_word_ids"].numpy()
    positions = out["masked_lm_positions"].numpy()
    weights = out["masked_lm_weights"].numpy()
    rows = np.nonzero(weights)[0]
    cols = positions[weights > 0]
    return masker, out, original, rows, cols


def test_selection_rate_and_80_10_10(packed):
    tok, packed_out, candidates = packed
    masker, out, original, rows, cols = _stats(tok, packed_out, candidates)
    chosen = np.zeros_like(candidates)
    chosen[rows, cols] = True
    # never [CLS], [SEP], padding; positions are unique
    assert not (chosen & ~candidates).any()
    assert len(set(zip(rows, cols))) == len(rows)
    rate = chosen.sum() / candidates.sum()
    assert abs(rate - 0.15) <= 0.005, rate
    # the reported ids are the original ones
    real = out["masked_lm_weights"].numpy() > 0
    np.testing.assert_array_equal(out["masked_lm_ids"].numpy()[real], original[rows, cols])
    new = out["input_word_ids"].numpy()
    at = new[rows, cols]
    mask_share = np.mean(at == tok.mask_token_id)
    same_share = np.mean(at == original[rows, cols])
    random_share = 1.0 - mask_share - same_share
    assert abs(mask_share - 0.8) <= 0.01, mask_share
    assert abs(random_share - 0.1) <= 0.01, random_share
    assert abs(same_share - 0.1) <= 0.01, same_share
    # random replacements are ordinary tokens; nothing else changed
    replaced = at[(at != tok.mask_token_id) & (at != original[rows, cols])]
    assert not np.isin(replaced, [0, 100, 101, 102, 103]).any()
    untouched = np.ones_like(candidates)
    untouched[rows, cols] = False
    np.testing.assert_array_equal(new[untouched], original[untouched])
    np.testing.assert_array_equal(out["input_mask"], packed_out["input_mask"])
    np.testing.assert_array_equal(out["input_type_ids"], packed_out["input_type_ids"])


def test_whole_word_masking_never_splits_a_word(packed):
    tok, packed_out, candidates = packed
    masker, out, original, rows, cols = _stats(tok, packed_out, candidates,
                                                whole_word_masking=True)
    chosen = np.zeros_like(candidates)
    chosen[rows, cols] = True
    assert not (chosen & ~candidates).any()
    is_cont = np.array([t.startswith("##") for t in tok.get_vocabulary()])[original] & candidates
    # a continuation piece is chosen exactly when the piece before it is
    prev = np.zeros_like(chosen)
    prev[:, 1:] = chosen[:, :-1]
    assert (chosen[is_cont] == prev[is_cont]).all()
    assert is_cont[chosen].sum() > 1000  # multi-piece words were masked
    rate = chosen.sum() / candidates.sum()
    assert abs(rate - 0.15) <= 0.005, rate
    assert (out["masked_lm_weights"].numpy().sum(axis=1) <= 20).all()


def test_deterministic_under_a_seed(packed):
    tok, packed_out, _ = packed
    small = {k: v[:64] for k, v in packed_out.items()}
    a = MaskedLMMasker(tok.get_vocabulary(), seed=3)
    b = MaskedLMMasker(tok.get_vocabulary(), seed=3)
    a1, a2 = a(small), a(small)
    b1, b2 = b(small), b(small)
    for key in a1:
        np.testing.assert_array_equal(a1[key], b1[key])
        np.testing.assert_array_equal(a2[key], b2[key])
    # dynamic: a new mask on every call
    assert not np.array_equal(a1["masked_lm_positions"], a2["masked_lm_positions"])
    # a stateless call is a pure function of its seed
    c = MaskedLMMasker(tok.get_vocabulary())
    s1 = c(small, seed=tf.constant([1, 2]))
    s2 = c(small, seed=tf.constant([1, 2]))
    np.testing.assert_array_equal(s1["input_word_ids"], s2["input_word_ids"])


def test_max_predictions_short_rows_and_dataset(packed):
    tok, packed_out, _ = packed
    masker = MaskedLMMasker(tok.get_vocabulary(), max_predictions_per_seq=5, seed=0)
    out = masker(packed_out)
    assert out["masked_lm_positions"].shape == (packed_out["input_word_ids"].shape[0], 5)
    assert (out["masked_lm_weights"].numpy().sum(axis=1) == 5).all()
    # a row of only [CLS] [SEP]: nothing to predict; seq shorter than max_predictions
    empty = masker({"input_word_ids": [[101, 102, 0]], "input_mask": [[1, 1, 0]]})
    assert out["masked_lm_positions"].dtype == tf.int32
    assert empty["masked_lm_weights"].numpy().tolist() == [[0.0] * 5]
    assert empty["input_word_ids"].numpy().tolist() == [[101, 102, 0]]
    # in tf.data, with parallel calls
    ds = tf.data.Dataset.from_tensor_slices({k: v[:64] for k, v in packed_out.items()})
    ds = ds.batch(16).map(masker, num_parallel_calls=tf.data.AUTOTUNE)
    batches = list(ds)
    assert len(batches) == 4 and batches[0]["masked_lm_ids"].shape == (16, 5)


def test_config_round_trip(minilm_vocab, tmp_path):
    tok = BertTokenizer(minilm_vocab)
    masker = MaskedLMMasker(tok.get_vocabulary(), mask_rate=0.2, whole_word_masking=True, seed=5)
    config = masker.get_config()
    assert "vocabulary" not in config  # an asset, not config
    clone = MaskedLMMasker.from_config(config)
    assert clone.get_config() == config
    x = {"input_word_ids": tf.constant([[101, 7592, 2088, 102]]), "input_mask": tf.ones([1, 4])}
    with pytest.raises(ValueError, match="MaskedLMMasker has no vocabulary: it was made without"):
        clone(x, seed=[1, 1])
    clone.set_vocabulary(tok.get_vocabulary())
    np.testing.assert_array_equal(masker(x, seed=[1, 1])["input_word_ids"],
                                  clone(x, seed=[1, 1])["input_word_ids"])
    old = MaskedLMMasker.from_config(dict(config, vocabulary=tok.get_vocabulary()))  # older
    np.testing.assert_array_equal(old(x, seed=[1, 1])["input_word_ids"],
                                  clone(x, seed=[1, 1])["input_word_ids"])
    path = str(tmp_path / "masker.keras")
    restored = keras_files.round_trip(masker, path)
    keras_files.assert_vocabulary_is_an_asset(path, tok.get_vocabulary())
    assert restored.get_config() == config
    for key, value in masker(x, seed=[3, 4]).items():
        np.testing.assert_array_equal(value, restored(x, seed=[3, 4])[key], err_msg=key)


def test_per_element_seeds_in_parallel_dataset(packed):
    tok, packed_out, _ = packed
    masker = MaskedLMMasker(tok.get_vocabulary(), seed=0)
    ds = tf.data.Dataset.from_tensor_slices({k: v[:64] for k, v in packed_out.items()}).batch(8)

    def run():
        mapped = ds.enumerate().map(
            lambda i, x: masker(x, seed=tf.stack([i, tf.constant(0, tf.int64)])),
            num_parallel_calls=4, deterministic=False,
        )
        return sorted(tuple(b["masked_lm_positions"].numpy().ravel()) for b in mapped)

    assert run() == run()


TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"]
IDS = [[2, 5, 6, 7, 3, 0]]
MASK = [[1, 1, 1, 1, 1, 0]]


@pytest.mark.parametrize("name,bad", [
    ("max_predictions_per_seq", 0), ("max_predictions_per_seq", -3),
    ("max_predictions_per_seq", 12.7), ("max_predictions_per_seq", "128"),
    ("max_predictions_per_seq", True), ("mask_rate", 0.0), ("mask_rate", 1.5),
    ("mask_rate", "0.15"), ("mask_rate", float("nan")), ("mask_rate", True),
    ("mask_token_rate", -0.1), ("random_token_rate", 1.1), ("whole_word_masking", "yes"),
    ("seed", 1.5), ("seed", True), ("seed", -1),
])
def test_bad_arguments(name, bad):
    """max_predictions_per_seq=0 or -3 once ran and gave empty or all-zero outputs."""
    with pytest.raises(ValueError, match=name):
        MaskedLMMasker(TINY_VOCAB, **{name: bad})


def test_bad_argument_combinations_and_kwargs():
    with pytest.raises(ValueError, match=r"mask_token_rate \+ random_token_rate must be <= 1"):
        MaskedLMMasker(TINY_VOCAB, mask_token_rate=0.8, random_token_rate=0.3)
    with pytest.raises(ValueError, match="every token of the vocabulary is a .* special one"):
        MaskedLMMasker(TINY_VOCAB[:5])
    assert MaskedLMMasker(TINY_VOCAB[:5], random_token_rate=0.0).max_predictions_per_seq == 20
    with pytest.raises(TypeError, match=r"unknown keyword argument 'max_predictions' \(did you "
                                        r"mean 'max_predictions_per_seq'\?\)\. It accepts "
                                        r"MaskedLMMasker arguments: vocabulary, mask_rate, "
                                        r"max_predictions_per_seq"):
        MaskedLMMasker(TINY_VOCAB, max_predictions=5)


def test_input_mask_must_be_zeros_and_ones():
    """Values other than 0/1 were used as weights."""
    masker = MaskedLMMasker(TINY_VOCAB, seed=1)
    with pytest.raises(ValueError, match="input_mask must hold only 0 and 1; it holds 2"):
        masker({"input_word_ids": IDS, "input_mask": [[1, 1, 2, 1, 1, 0]]})
    with pytest.raises(ValueError, match="it holds 0.5"):
        masker({"input_word_ids": IDS, "input_mask": [[1, 1, 0.5, 1, 1, 0]]})
    spec = tf.TensorSpec([None, None], tf.int32)
    graph = tf.function(lambda i, m: masker({"input_word_ids": i, "input_mask": m}),
                        input_signature=[spec, spec])
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_mask must hold only 0 and 1"):
        graph(tf.constant(IDS), tf.constant([[1, 1, 2, 1, 1, 0]]))
    # bool and float 0/1 masks are masks
    out = masker({"input_word_ids": tf.constant(IDS), "input_mask": tf.constant(MASK) > 0})
    assert out["masked_lm_weights"].numpy().sum() == 1
    masker({"input_word_ids": tf.constant(IDS), "input_mask": tf.constant(MASK, tf.float32)})


def test_ids_and_shapes():
    masker = MaskedLMMasker(TINY_VOCAB, seed=1)
    with pytest.raises(ValueError, match=r"input_word_ids must be in \[0, 8\) \(the vocabulary\); "
                                         r"it holds 8"):
        masker({"input_word_ids": [[2, 8, 3]]})
    with pytest.raises(ValueError, match="it holds -1"):
        masker(tf.constant([[2, -1, 3]], tf.int64))
    with pytest.raises(ValueError, match="it holds 4294967301"):  # not 5 after an int32 cast
        masker(tf.constant([[2, 2**32 + 5, 3]], tf.int64))
    with pytest.raises(TypeError, match="input_word_ids must hold integer ids, got dtype float32"):
        masker({"input_word_ids": [[2.0, 5.0, 3.0]]})
    with pytest.raises(TypeError, match="got dtype string"):
        masker({"input_word_ids": [["a"]]})
    for bad in ([2, 5, 3], [[[2, 5, 3]]]):
        with pytest.raises(ValueError, match=r"input_word_ids must be a dense \[batch, seq\]"):
            masker({"input_word_ids": bad})
    with pytest.raises(ValueError, match="ragged tensor"):
        masker(tf.ragged.constant([[2, 5], [3]]))
    with pytest.raises(ValueError, match="the batch sizes differ: input_word_ids has 2, "
                                         "input_mask has 1"):  # was broadcast
        masker({"input_word_ids": IDS * 2, "input_mask": MASK})
    with pytest.raises(ValueError, match="sequence lengths differ: input_word_ids has 6, "
                                         "input_mask has 5"):
        masker({"input_word_ids": IDS, "input_mask": [[1, 1, 1, 1, 1]]})
    with pytest.raises(TypeError, match="input_mask must be 0/1 numbers or bools, got dtype string"):
        masker({"input_word_ids": IDS, "input_mask": [["1"] * 6]})
    with pytest.raises(ValueError, match=r"have no 'input_word_ids' \(keys: \['ids'\]\)"):
        masker({"ids": IDS})
    for seed in (5, [1, 2, 3], [1.0, 2.0]):
        with pytest.raises(ValueError, match=r"seed= must be a shape \[2\] integer tensor"):
            masker({"input_word_ids": IDS}, seed=seed)
    spec = tf.TensorSpec([None, None], tf.int32)
    graph = tf.function(lambda i, m: masker({"input_word_ids": i, "input_mask": m}),
                        input_signature=[spec, spec])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"the batch sizes differ: input_word_ids has\] \[2\]"):
        graph(tf.constant(IDS * 2), tf.constant(MASK))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"input_word_ids must be in \[0, 8\)"):
        graph(tf.constant([[2, 99, 3]]), tf.constant([[1, 1, 1]]))


def test_empty_batches_and_empty_sequences():
    masker = MaskedLMMasker(TINY_VOCAB, max_predictions_per_seq=3, seed=1)
    for shape in ([0, 6], [2, 0], [0, 0]):
        out = masker({"input_word_ids": tf.zeros(shape, tf.int32),
                      "input_mask": tf.zeros(shape, tf.int32)})
        assert out["masked_lm_positions"].shape == (shape[0], 3)
        assert out["input_word_ids"].shape == tuple(shape)
    wwm = MaskedLMMasker(TINY_VOCAB, whole_word_masking=True, seed=1)
    assert wwm(tf.zeros([2, 0], tf.int32))["masked_lm_weights"].shape == (2, 20)
    # in a graph that does not know the length, the whole-word scan runs over no words
    graph = tf.function(wwm, input_signature=[tf.TensorSpec([None, None], tf.int32)])
    assert graph(tf.zeros([2, 0], tf.int32))["masked_lm_weights"].shape == (2, 20)
    assert graph(tf.constant(IDS))["masked_lm_weights"].numpy().sum() == 1


def test_from_preset_takes_the_preset_vocabulary(minilm_vocab):
    masker = MaskedLMMasker.from_preset("minilm_l6", max_predictions_per_seq=3, seed=2)
    assert masker.vocabulary == BertTokenizer(minilm_vocab).vocabulary
    assert (masker.mask_token_id, masker.max_predictions_per_seq, masker.seed) == (103, 3, 2)
    with pytest.raises(TypeError, match=r"unknown keyword argument 'vocabulary'.*It accepts "
                                        r"MaskedLMMasker.from_preset arguments: mask_rate"):
        MaskedLMMasker.from_preset("minilm_l6", vocabulary=["[PAD]"])
