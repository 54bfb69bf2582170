"""Misspelled keyword arguments to every layer are a TypeError naming them and the accepted ones."""

import pytest

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
from keras_bert import layers
from keras_bert.layers.arguments import check_kwargs

# The smallest arguments that build each public layer, and a misspelling of one of its own.
LAYERS = {
    "BertEmbeddings": (dict(vocab_size=10, hidden_size=8), "hiden_size", "hidden_size"),
    "MaskedLMHead": (dict(vocab_size=10, hidden_size=8), "hidden_ac", "hidden_act"),
    "Pooler": (dict(hidden_size=8), "initializer_rang", "initializer_range"),
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

