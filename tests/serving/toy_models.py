"""Small SavedModels for the serving tests that need a model but no BERT: they save and load
in a second."""

import tensorflow as tf


class Doubler(tf.Module):
    """``serving_default``: ``x`` float [batch] -> ``y`` = 2x; ``pair``: ``a`` float [batch],
    ``b`` int [batch] -> ``sum``; ``text``: ``s`` string [batch] -> ``s_bytes`` (the same),
    ``length``; ``checked``: ``x`` -> ``x``, an InvalidArgumentError for a negative value."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def double(self, x):
        return {"y": 2 * x}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="a"),
                                  tf.TensorSpec([None], tf.int32, name="b")])
    def pair(self, a, b):
        return {"sum": a + tf.cast(b, tf.float32)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="s")])
    def text(self, s):
        return {"s_bytes": s, "length": tf.strings.length(s)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def checked(self, x):
        with tf.control_dependencies([tf.debugging.assert_non_negative(x, message="negative")]):
            return {"x": tf.identity(x)}


def write_doubler(path):
    """Saves a `Doubler` with its four signatures to ``path`` (created); returns it as str."""
    model = Doubler()
    tf.saved_model.save(model, str(path), signatures={
        "serving_default": model.double, "pair": model.pair, "text": model.text,
        "checked": model.checked})
    return str(path)
