"""BertPreprocessor: in tf.data, in a Keras model with string inputs, saved and loaded."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.text.masked_lm_preprocessor import (BertMaskedLMPreprocessor,
                                                    BertPretrainerPreprocessor)
from keras_bert.text.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert.text.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from tests import keras_files


@pytest.fixture(scope="module")
def preprocessor(minilm_vocab):
    return BertPreprocessor(BertTokenizer(minilm_vocab), seq_length=32)


def test_matches_google_features(preprocessor, google_tokenizers):
    """Same input_ids/segment_ids/input_mask as run_classifier.convert_single_example."""
    ref = google_tokenizers[True]
    a, b = "The Quick brown fox, naïvely!", "Jumps over the lazy dog…"
    ta, tb = ref.tokenize(a), ref.tokenize(b)
    tokens = ["[CLS]"] + ta + ["[SEP]"] + tb + ["[SEP]"]
    ids = ref.convert_tokens_to_ids(tokens)
    types = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
    out = preprocessor(([a], [b]))
    n = len(ids)
    assert out["input_word_ids"].numpy()[0].tolist() == ids + [0] * (32 - n)
    assert out["input_type_ids"].numpy()[0].tolist() == types + [0] * (32 - n)
    assert out["input_mask"].numpy()[0].tolist() == [1] * n + [0] * (32 - n)


def test_dataset_map_parallel(preprocessor, wiki_lines):
    lines = wiki_lines[:300]
    labels = np.arange(300) % 2
    ds = tf.data.Dataset.from_tensor_slices((lines, labels)).batch(32)
    ds = ds.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
    x, y = next(iter(ds))
    assert set(x) == {"input_word_ids", "input_mask", "input_type_ids"}
    assert x["input_word_ids"].shape == (32, 32) and y.numpy().tolist() == labels[:32].tolist()
    got = np.concatenate([x["input_word_ids"].numpy() for x, _ in ds])
    np.testing.assert_array_equal(got, preprocessor(lines)["input_word_ids"])
    # sentence pairs, unbatched elements
    pairs = tf.data.Dataset.from_tensor_slices(((lines[:10], lines[10:20]), labels[:10]))
    x, y = next(iter(pairs.map(preprocessor, num_parallel_calls=2)))
    assert x["input_word_ids"].shape == (32,)
    assert (x["input_type_ids"].numpy() == 1).any()


def _string_model(preprocessor, pairs):
    inputs = [keras.Input(shape=(), dtype="string") for _ in range(2 if pairs else 1)]
    features = preprocessor(tuple(inputs) if pairs else inputs[0])
    # a tiny trainable head over the ids, so the saved model is a real model
    emb = keras.layers.Embedding(30522, 4)(features["input_word_ids"])
    pooled = keras.layers.GlobalAveragePooling1D()(emb, mask=features["input_mask"] > 0)
    outputs = dict(features, logits=keras.layers.Dense(2)(pooled))
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize("pairs", [False, True], ids=["single", "pairs"])
def test_keras_model_with_string_input_saves_and_loads(preprocessor, tmp_path, wiki_lines, pairs):
    model = _string_model(preprocessor, pairs)
    x = [tf.constant(wiki_lines[:16])] + ([tf.constant(wiki_lines[16:32])] if pairs else [])
    before = model(x if pairs else x[0])
    path = tmp_path / "model.keras"
    model.save(path)
    assert keras_files.assert_vocabulary_is_an_asset(
        path, preprocessor.tokenizer.get_vocabulary()) == [
        "assets/layers/bert_preprocessor/tokenizer/vocabulary.txt"]
    loaded = keras.saving.load_model(path)
    after = loaded(x if pairs else x[0])
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])
    assert loaded.predict(x if pairs else x[0], verbose=0)["input_word_ids"].shape == (16, 32)


def test_bad_inputs(preprocessor):
    out = preprocessor(["", "   ", "\x00\x01", b"\xff\xfe", "word " * 5000])
    ids = out["input_word_ids"].numpy()
    for row in range(4):  # nothing but [CLS] [SEP]
        assert ids[row].tolist()[:3] == [101, 102, 0]
    assert out["input_mask"].numpy()[4].sum() == 32 and ids[4, -1] == 102  # truncated
    empty = preprocessor(tf.constant([], tf.string))
    assert empty["input_word_ids"].shape == (0, 32)
    assert preprocessor([])["input_word_ids"].shape == (0, 32)
    single = preprocessor("hello world")
    assert single["input_word_ids"].shape == (32,)
    assert preprocessor(["a b"], seq_length=8)["input_word_ids"].shape == (1, 8)


def test_config_round_trip(preprocessor):
    config = preprocessor.get_config()
    assert "vocabulary" not in config["tokenizer"]["config"]  # an asset, not config
    clone = BertPreprocessor.from_config(config)
    assert clone.get_config() == config
    lines = ["Hello there!", "Some other text."]
    with pytest.raises(ValueError, match="BertTokenizer has no vocabulary: it was made without"):
        clone(lines)
    clone.tokenizer.set_vocabulary(preprocessor.tokenizer.get_vocabulary())
    np.testing.assert_array_equal(clone(lines)["input_word_ids"],
                                  preprocessor(lines)["input_word_ids"])
    # A config written when the vocabulary was part of it still loads whole.
    config["tokenizer"]["config"]["vocabulary"] = preprocessor.tokenizer.get_vocabulary()
    old = BertPreprocessor.from_config(config)
    np.testing.assert_array_equal(old(lines)["input_word_ids"],
                                  preprocessor(lines)["input_word_ids"])


CASED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "ran", "sat", "slept", "Paris",
         "is", "big", "##gest", "the", "cat", "down"]


@pytest.mark.parametrize("make, x", [
    (lambda: BertMaskedLMPreprocessor(CASED, seq_length=8, max_predictions_per_seq=2, seed=3),
     ["the cat sat down", "he ran"]),
    (lambda: BertPretrainerPreprocessor(CASED[::-1], seq_length=10, seed=4),
     (["the cat sat", "he"], ["down", "slept"])),
    (lambda: BertMultipleChoicePreprocessor(CASED, seq_length=6),
     (["he"], [["ran", "sat", "slept"]])),
    (lambda: BertTokenClassifierPreprocessor(CASED, seq_length=7),
     tf.ragged.constant([["Paris", "is", "biggest"]])),
], ids=["masked_lm", "pretrainer", "multiple_choice", "token_classifier"])
def test_keras_round_trip_of_every_preprocessor(make, x, tmp_path):
    layer = make()
    path = str(tmp_path / "layer.keras")
    loaded = keras_files.round_trip(layer, path)
    keras_files.assert_vocabulary_is_an_asset(path, layer.tokenizer.get_vocabulary())
    assert loaded.get_config() == layer.get_config()
    # Masks are drawn from the seed generator's state, saved with the layer: the first call
    # after the save masks alike.
    for got, want in zip(tf.nest.flatten(loaded(x)), tf.nest.flatten(layer(x))):
        np.testing.assert_array_equal(got, want)


def test_from_preset():
    pre = BertPreprocessor.from_preset("minilm_l6", seq_length=16)
    assert pre(["hello"])["input_word_ids"].numpy()[0, :3].tolist() == [101, 7592, 102]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BertPreprocessor.from_preset("minilm_l6", do_lower_case=False)
    assert any("do_lower_case" in str(w.message) for w in caught)


def test_from_preset_of_a_saved_cased_preset(tmp_path):
    """A preset directory's own casing and vocabulary configure the preprocessor."""
    import keras_bert

    encoder = keras_bert.BertEncoder.from_preset("minilm_l6", load_weights=False)
    encoder.do_lower_case = False  # a cased copy, as a user's own saved model would be
    encoder.save_to_preset(tmp_path / "cased")
    pre = BertPreprocessor.from_preset(str(tmp_path / "cased"), seq_length=16,
                                       truncator="waterfall")
    assert pre.seq_length == 16 and pre.truncator == "waterfall"
    assert pre.tokenizer.do_lower_case is False
    # Cased: "Hello" is not the uncased vocabulary's "hello" (7592).
    ids = pre(["Hello"])["input_word_ids"].numpy()[0]
    assert ids[0] == 101 and 7592 not in ids.tolist()


def test_saved_model_export_keeps_tokenization_in_graph(preprocessor, tmp_path):
    """The string -> ids graph survives `model.export` (TF SavedModel, as TF Serving loads)."""
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, preprocessor(inputs))
    model.export(str(tmp_path / "export"), format="tf_saved_model", verbose=False)
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    x = tf.constant(["Hello world, naïve café!", "", b"bad \xff bytes"])
    served, direct = loaded.serve(x), model(x)
    for key in direct:
        np.testing.assert_array_equal(served[key], direct[key])


TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]


@pytest.fixture(scope="module")
def tiny():
    return BertPreprocessor(TINY_VOCAB, seq_length=8)


def test_pairs_whose_batch_sizes_differ(tiny):
    """Eagerly this once returned bytes of process memory as ids."""
    with pytest.raises(ValueError, match="the batch sizes differ: texts_a has 2, texts_b has 1"):
        tiny((["a", "b"], ["c"]))
    with pytest.raises(ValueError, match="texts_a has 3, texts_b has 3, texts_c has 1"):
        tiny((["a", "b", "a"], ["a", "b", "c"], ["c"]))
    with pytest.raises(ValueError, match="texts_a has 2, texts_b has 1"):
        tf.function(lambda a, b: tiny((a, b)))(tf.constant(["a", "b"]), tf.constant(["c"]))
    spec = tf.TensorSpec([None], tf.string)
    traced = tf.function(lambda a, b: tiny((a, b)), input_signature=[spec, spec])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"BertPreprocessor: the batch sizes differ: texts_a has\] \[3\] "
                             r"\[, texts_b has\] \[1\]"):
        traced(tf.constant(["a", "b", "a"]), tf.constant(["c"]))
    assert traced(tf.constant(["a"]), tf.constant(["c"]))["input_word_ids"].shape == (1, 8)


CRASHED_BEFORE = """
import tensorflow as tf
from keras_bert.text import BertPreprocessor
p = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"], seq_length=8)
for case in ("eager", "dataset"):
    try:
        if case == "eager":
            p((["a", "b", "a"], ["c"]))
        else:
            ds = tf.data.Dataset.from_generator(
                lambda: iter([(["a", "b", "a"], ["c"])]),
                output_signature=(tf.TensorSpec([None], tf.string),) * 2)
            list(ds.map(lambda a, b: p((a, b))))
    except (ValueError, tf.errors.InvalidArgumentError) as err:
        print(case, type(err).__name__, "batch sizes differ" in str(err))
"""


def test_pairs_that_crashed_the_process():
    """3 texts against 1: a segfault eagerly (rc 139), std::length_error in tf.data (rc 134)."""
    from tests.isolated import run_python

    result = run_python(CRASHED_BEFORE)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == [
        "eager TaskInputError True", "dataset InvalidArgumentError True"], result.stdout


def test_hugging_face_list_of_pairs(tiny):
    """[[q, a], ...] is a batch of pairs (it was read as two segments, transposed)."""
    hf = tiny([["a", "b b"], ["c", "a"]])
    segments = tiny((["a", "c"], ["b b", "a"]))
    for key in segments:
        np.testing.assert_array_equal(hf[key], segments[key])
    assert hf["input_word_ids"].numpy().tolist() == [[2, 5, 3, 6, 6, 3, 0, 0],
                                                     [2, 7, 3, 5, 3, 0, 0, 0]]
    assert tiny([("a", "b", "c")])["input_type_ids"].numpy().tolist() == [[0, 0, 0, 1, 1, 2, 2, 0]]
    # a list of tensors is still one tensor per segment
    listed = tiny([tf.constant(["a", "c"]), tf.constant(["b b", "a"])])
    np.testing.assert_array_equal(listed["input_word_ids"], segments["input_word_ids"])


@pytest.mark.parametrize(
    "bad,error,message",
    [
        ([["a", "b"], ["c", "a", "b"]], ValueError, "the items hold 2 or 3 texts"),
        ([["a"], ["b"]], ValueError, "the items hold 1 texts"),
        (["a", ["b", "c"]], ValueError, "cannot read a list that mixes list, str"),
        ([["a", 1], ["b", "c"]], TypeError, "texts_b holds int value 1 among its texts"),
        ([1, 2], TypeError, "texts holds int value 1 among its texts"),
        ((["a"], ["b"], ["c"], ["a"]), ValueError, "packs 1 to 3 segments, got 4"),
        ({"text": ["a"]}, TypeError, "got a dict"),
        (np.array([["a", "b"], ["c", "a"]]), ValueError, r"texts must be .* got shape \(2, 2\)"),
        (("a", ["b"]), ValueError, r"all strings or all batches, got shapes texts_a: \(\)"),
    ],
)
def test_inputs_it_cannot_read_show_the_accepted_forms(tiny, bad, error, message):
    with pytest.raises(error, match=message) as caught:
        tiny(bad)
    assert "[[text_a, text_b], ...]" in str(caught.value)


def test_inputs_that_are_not_strings(tiny):
    with pytest.raises(TypeError, match="BertPreprocessor texts must be strings .* got dtype int32"):
        tiny(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="texts_b must be strings .* got dtype float32"):
        tiny((tf.constant(["a"]), tf.constant([1.0])))
    with pytest.raises(TypeError, match="must be a string tensor, got a RaggedTensor"):
        tiny(tf.ragged.constant([["a"], ["b", "c"]]))


@pytest.mark.parametrize("bad", [0, -3, 1, 12.7, "128", True])
def test_bad_seq_length(tiny, bad):
    """seq_length=0 at call time once meant the default (`seq_length or self.seq_length`)."""
    with pytest.raises(ValueError, match="seq_length must be"):
        tiny(["a"], seq_length=bad)
    with pytest.raises(ValueError, match="seq_length must be"):
        BertPreprocessor(TINY_VOCAB, seq_length=bad)
    with pytest.raises(ValueError, match=r"seq_length must be at least 7 to hold \[CLS\] a "
                                         r"\[SEP\] b \[SEP\] c \[SEP\]"):
        tiny((["a"], ["b"], ["c"]), seq_length=3)


def test_seq_length_holds_one_token_of_each_text(tiny):
    """seq_length=2 once packed [CLS] [SEP] alone, and the model predicted from no text: a
    preprocessor needs at least 3 (5 for pairs, 7 for triples), checked when it is made and,
    where the number of texts is only known then, when it is called (eagerly, in tf.data, or
    by a graph assertion for a tensor seq_length)."""
    for bad in (2, 1, 0):
        with pytest.raises(ValueError, match=rf"^BertPreprocessor: seq_length must be at least "
                                             rf"3 to hold \[CLS\] a \[SEP\] .*got {bad}"):
            BertPreprocessor(TINY_VOCAB, seq_length=bad)
    short = BertPreprocessor(TINY_VOCAB, seq_length=3)
    assert short(["a b c"])["input_word_ids"].numpy().tolist() == [[2, 5, 3]]
    pairs_need = r"BertPreprocessor: seq_length must be at least 5 to hold \[CLS\] a \[SEP\] " \
                 r"b \[SEP\] \(one token of each of 2 segment\(s\).*got 3"
    with pytest.raises(ValueError, match=pairs_need):
        short((["a"], ["b"]))
    with pytest.raises(ValueError, match=pairs_need):
        short([["a", "b"]])  # a list of pairs
    dataset = tf.data.Dataset.from_tensor_slices((["a"], ["b"])).batch(1)
    with pytest.raises(ValueError, match=pairs_need):
        dataset.map(lambda a, b: short((a, b)))
    assert tiny((["a"], ["b"]), seq_length=5)["input_word_ids"].numpy().tolist() == [
        [2, 5, 3, 6, 3]]
    traced = tf.function(lambda a, b, n: tiny((a, b), seq_length=n))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"BertPreprocessor: seq_length must be an integer in \[5, "):
        traced(tf.constant(["a"]), tf.constant(["b"]), tf.constant(4))


def test_unknown_keyword_arguments():
    with pytest.raises(TypeError, match=r"BertPreprocessor\(\) got unknown keyword argument "
                                        r"'seq_lenght' \(did you mean 'seq_length'\?\)\. It "
                                        r"accepts BertPreprocessor arguments: tokenizer, seq_length"):
        BertPreprocessor(TINY_VOCAB, seq_lenght=64)
    with pytest.raises(TypeError, match=r"from_preset\(\) got unknown keyword argument "
                                        r"'seq_lenght' \(did you mean 'seq_length'\?\)\. It "
                                        r"accepts BertPreprocessor.from_preset arguments: preset, "
                                        r"seq_length, truncator, do_lower_case; Keras layer arguments: name"):
        BertPreprocessor.from_preset("minilm_l6", seq_lenght=64)
    with pytest.raises(ValueError, match="do_lower_case must be True or False"):
        BertPreprocessor(TINY_VOCAB, do_lower_case="no")
    assert BertPreprocessor(TINY_VOCAB, name="pre").name == "pre"
