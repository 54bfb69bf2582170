"""keras_bert/export/modules.py: an export's root module holds the Keras model's variables
once, as SavedModel and TF Hub's reusable-SavedModel API read them; flat float32 outputs."""

import numpy as np
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.config import INPUT_NAMES
from keras_bert.export import modules


def test_a_saved_module_holds_the_model_s_variables_once_and_runs(tmp_path):
    encoder = BertEncoder.from_preset("tiny_random")
    root = modules.attach_variables(modules.Module(), encoder)
    assert [id(v) for v in root.variables] == [id(v.value) for v in encoder.variables]
    assert len(root.trainable_variables) == len(encoder.trainable_variables) < len(
        root.variables)  # the dropout layers' seed states are variables, not trainable
    assert root.regularization_losses == []
    specs = modules.packed_specs()
    root.serve = tf.function(
        lambda inputs: modules.flat(encoder(inputs, training=False)), input_signature=[specs])
    ids = tf.constant([[2, 11, 50, 45, 3]])
    inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
              "input_type_ids": tf.zeros_like(ids)}
    want = root.serve(inputs)
    tf.saved_model.save(root, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    assert len(loaded.variables) == len(encoder.variables)  # not twice
    got = loaded.serve(inputs)
    assert sorted(got) == ["encoder_outputs_0", "pooled_output", "sequence_output"]
    for key in got:
        np.testing.assert_allclose(got[key], want[key], atol=1e-6)


def test_specs_and_outputs():
    specs = modules.packed_specs(extra=("masked_lm_positions",))
    assert list(specs) == list(INPUT_NAMES) + ["masked_lm_positions"]
    assert {(s.dtype, tuple(s.shape.as_list())) for s in specs.values()} == {(tf.int32,
                                                                               (None, None))}
    out = modules.float32({"logits": tf.constant([1.5], tf.bfloat16), "ids": tf.constant([2])})
    assert (out["logits"].dtype, out["ids"].dtype) == (tf.float32, tf.int32)
    assert sorted(modules.flat({"a": [1, 2], "b": 3})) == ["a_0", "a_1", "b"]
