"""checks.py: the argument and tensor checks the text layers and BertEncoder share."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import checks, layers
from keras_bert.checks import check_kwargs


def test_integer():
    assert checks.integer("n", np.int64(7), minimum=1) == 7
    for bad, message in [(True, "n must be an integer, got True"), (12.7, r"got 12.7 \(float\)"),
                         ("128", r"got '128' \(str\)"), (None, "got None"), (7.0, "got 7.0")]:
        with pytest.raises(ValueError, match=message):
            checks.integer("n", bad)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        checks.integer("n", 0, minimum=1)
    with pytest.raises(ValueError, match=r"n must be in \[1, 5\], got 6"):
        checks.integer("n", 6, minimum=1, maximum=5)


def test_number_and_boolean():
    assert checks.number("r", 1, 0.0, 1.0) == 1.0
    with pytest.raises(ValueError, match=r"r must be in \(0.0, 1.0\], got 0.0"):
        checks.number("r", 0.0, 0.0, 1.0, low_open=True)
    for bad in (float("nan"), False, "0.5", 1.5):
        with pytest.raises(ValueError, match="r must be"):
            checks.number("r", bad, 0.0, 1.0)
    assert checks.boolean("b", np.bool_(True)) is True
    with pytest.raises(ValueError, match="b must be True or False, got 'False'"):
        checks.boolean("b", "False")


def test_check_layer_kwargs_for_a_method_that_ends_in_a_layer():
    def function(self, alpha, beta=1, *args, gamma=2, **kwargs):
        pass

    assert checks.keyword_parameters(function) == ("alpha", "beta", "gamma")
    assert checks.keyword_parameters(function, skip=("beta",)) == ("alpha", "gamma")
    checks.check_layer_kwargs("F", {"beta": 1, "name": "x", "dtype": "int32"}, ["alpha", "beta"])
    with pytest.raises(TypeError, match=r"F\(\) got unknown keyword arguments 'zeta', 'delta'\. "
                                        r"It accepts F arguments: alpha; Keras layer arguments: "
                                        r"name, dtype, trainable, autocast, "
                                        r"activity_regularizer, input_shape, input_dim\.$"):
        checks.check_layer_kwargs("F", {"zeta": 1, "delta": 2}, ["alpha"])
    # A name of both groups is listed once, with the owner's.
    with pytest.raises(TypeError, match=r"It accepts F arguments: alpha, name; Keras layer "
                                        r"arguments: dtype, trainable"):
        checks.check_layer_kwargs("F", {"zeta": 1}, ["alpha", "name", "alpha"])


def test_keras_layer_kwargs_are_what_a_keras_layer_takes():
    own = set(checks.keyword_parameters(keras.layers.Layer.__init__))
    assert set(checks.KERAS_LAYER_KWARGS) == own | {"input_shape", "input_dim"}
    with pytest.warns(UserWarning, match="input_shape"):  # (taken from **kwargs)
        keras.layers.Layer(input_shape=(3,))


def test_tensor_conversions():
    assert checks.integer_tensor([[1, 2], [3]], "x").shape.as_list() == [2, None]
    assert checks.integer_tensor([], "x").dtype == tf.int32
    with pytest.raises(TypeError, match="x must hold integer ids, got dtype float32"):
        checks.integer_tensor([1.5], "x")
    assert checks.string_tensor([], "s").dtype == tf.string
    with pytest.raises(TypeError, match="s must be strings .* got dtype int32"):
        checks.string_tensor(tf.constant([1]), "s")


def test_dims_values_and_after_in_a_graph():
    spec = tf.TensorSpec([None], tf.int32)

    @tf.function(input_signature=[spec, spec])
    def checked(a, b):
        assertions = checks.same_dims([a, b], ["a", "b"], 0, "size", "F")
        assertions += checks.values_in(a, "a", 0, 10, "F")
        return checks.after(assertions, (a + b, None))[0]

    assert checked(tf.constant([1, 2]), tf.constant([3, 4])).numpy().tolist() == [4, 6]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"F: the sizes differ: a has\] \[2\]"):
        checked(tf.constant([1, 2]), tf.constant([3]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"F: a must be in \[0, 10\); it holds values from\] \[1\] \[to\] \[12\]"):
        checked(tf.constant([1, 12]), tf.constant([3, 4]))
    # eagerly everything is known: ValueError at once
    with pytest.raises(ValueError, match="F: the sizes differ: a has 2, b has 1"):
        checks.same_dims([tf.constant([1, 2]), tf.constant([3])], ["a", "b"], 0, "size", "F")
    with pytest.raises(ValueError, match=r"F: a must be in \[0, 10\) \(hint\); it holds -1"):
        checks.values_in(tf.ragged.constant([[1], [-1]]), "a", 0, 10, "F", " (hint)")
    with pytest.raises(ValueError, match="F: m must hold only 0 and 1; it holds 3"):
        checks.zero_or_one(tf.constant([0, 1, 3]), "m", "F")
    with pytest.raises(ValueError, match=r"a and b must have the same shape; got a \(2, 1\), b \(1, 1\)"):
        checks.same_shape([tf.zeros([2, 1]), tf.zeros([1, 1])], ["a", "b"], "F")


# The smallest arguments that build each public layer, and a misspelling of one of its own.
LAYERS = {
    "BertEmbeddings": (dict(vocab_size=10, hidden_size=8), "hiden_size", "hidden_size"),
    "Dense": (dict(units=3), "activaton", "activation"),
    "MaskedLMHead": (dict(vocab_size=10, hidden_size=8), "hidden_ac", "hidden_act"),
    "Pooler": (dict(hidden_size=8), "initializer_rang", "initializer_range"),
    "SentencePooling": (dict(mode="mean"), "mdoe", "mode"),
    "TransformerBlock": (
        dict(hidden_size=8, num_attention_heads=2, intermediate_size=16), "dropuot", "dropout"),
}
# Layers that load an export: the misspelling is refused before anything is read.
LOADING_LAYERS = {"SavedModelEncoder": (dict(path="/nonexistent/export"), "trainble", "trainable")}


def test_every_public_layer_is_covered():
    assert sorted({**LAYERS, **LOADING_LAYERS}) == sorted(layers.__all__)


@pytest.mark.parametrize("name", sorted(LOADING_LAYERS))
def test_a_loading_layer_refuses_a_misspelling_before_it_loads(name):
    args, wrong, right = LOADING_LAYERS[name]
    with pytest.raises(TypeError, match=rf"{name}\(\) got unknown keyword argument '{wrong}' "
                                        rf"\(did you mean '{right}'\?\)"):
        getattr(layers, name)(**args, **{wrong: False})


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_misspelled_argument_is_a_type_error_naming_it(name):
    args, wrong, right = LAYERS[name]
    cls = getattr(layers, name)
    with pytest.raises(TypeError, match=rf"{name}\(\) got unknown keyword argument '{wrong}' "
                                        rf"\(did you mean '{right}'\?\)\. It accepts {name} "
                                        rf"arguments: .*{right}.*; Keras layer arguments: .*name"):
        cls(**args, **{wrong: 0.2})


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_keras_arguments_and_config_round_trip_still_work(name):
    args, _, _ = LAYERS[name]
    cls = getattr(layers, name)
    layer = cls(**args, name="mine", dtype="mixed_bfloat16", trainable=False)
    again = cls.from_config(layer.get_config())
    assert (again.name, again.dtype_policy.name, again.trainable) == (
        "mine", "mixed_bfloat16", False)


def test_check_kwargs_lists_every_unknown_and_each_group():
    with pytest.raises(TypeError, match=r"f\(\) got unknown keyword arguments 'zzz', 'alhpa' "
                                        r"\(did you mean 'alpha'\?\)\. It accepts fields: alpha, "
                                        r"beta; options: url\.$"):
        check_kwargs("f()", {"zzz": 1, "alhpa": 2, "url": 3},
                     {"fields": ("alpha", "beta"), "options": ("url",), "empty": ()})
    check_kwargs("f()", {"beta": 1}, {"fields": ("alpha", "beta")})  # all known: no error

