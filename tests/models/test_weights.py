"""keras_bert/models/weights.py, assign: every name and shape checked before anything is
assigned, errors that name the variable, both shapes and the source."""

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import BertEncoder
from keras_bert.models.weights import WeightsMismatchError, assign


def _variables():
    return {"bert/embeddings/word_embeddings": keras.Variable(np.zeros((5, 4), "float32")),
            "bert/pooler/dense/bias": keras.Variable(np.zeros(4, "float32"))}


def test_assigns_every_variable_and_ignores_names_it_has_no_place_for():
    variables = _variables()
    weights = {"bert/embeddings/word_embeddings": np.ones((5, 4)),
               "bert/pooler/dense/bias": np.arange(4.0), "cls/predictions/output_bias": np.ones(5)}
    assign(variables, weights)
    np.testing.assert_array_equal(variables["bert/pooler/dense/bias"].numpy(), np.arange(4.0))
    assert variables["bert/embeddings/word_embeddings"].dtype == "float32"


def test_a_bad_file_leaves_the_model_untouched_and_is_named():
    variables = _variables()
    weights = {"bert/embeddings/word_embeddings": np.ones((5, 4)),
               "bert/pooler/dense/bias": np.ones(3)}
    with pytest.raises(WeightsMismatchError, match=r"^model.ckpt: variable "
                                                   r"bert/pooler/dense/bias has shape \(3,\) "
                                                   r"but the config expects \(4,\)\.$"):
        assign(variables, weights, source="model.ckpt")
    # checked first: the embeddings, which fit, were not assigned either
    assert not variables["bert/embeddings/word_embeddings"].numpy().any()
    with pytest.raises(WeightsMismatchError, match=r"missing variable\(s\) bert/pooler"):
        assign(variables, {"bert/embeddings/word_embeddings": np.ones((5, 4))})


def test_a_vocabulary_of_another_size_is_said_so():
    weights = {"bert/embeddings/word_embeddings": np.ones((7, 4)),
               "bert/pooler/dense/bias": np.ones(4)}
    with pytest.raises(WeightsMismatchError, match=r"the vocabulary has 7 entries but the "
                                                   r"config says vocab_size=5"):
        assign(_variables(), weights)


def test_set_canonical_weights_shape_error_names_both_shapes():
    encoder = BertEncoder(keras_bert.BertConfig(vocab_size=20, hidden_size=8,
                                                num_hidden_layers=1, num_attention_heads=2,
                                                intermediate_size=16))
    weights = encoder.get_canonical_weights()
    weights["bert/pooler/dense/kernel"] = np.zeros((8, 9), "float32")
    with pytest.raises(WeightsMismatchError, match=r"bert/pooler/dense/kernel.*\(8, 9\).*\(8, 8\)"):
        encoder.set_canonical_weights(weights)
