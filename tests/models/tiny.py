"""A tiny vocabulary and encoder for the task-model tests."""

import keras
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder

WORDS = ("a the movie film great good fun dull bad boring plot actor is was not very "
         "and but it this what who why sat cat dog ran red blue paris london").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s", "##ing", "##ed", ".",
                                                                   ",", "!", "?"]


def tiny_encoder(seed=None, **overrides):
    """A random 2-layer `BertEncoder` (hidden size 16) on VOCAB; ``overrides`` are `BertConfig`
    fields. ``seed``: Keras' random seed is set to it first (`keras.utils.set_random_seed`), so
    the same seed gives the same weights and two seeds different ones; None leaves the seed
    as it is."""
    if seed is not None:
        keras.utils.set_random_seed(seed)
    config = dict(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    config.update(overrides)
    return BertEncoder(BertConfig(**config))


# BERT's initializer_range (0.02) gives a random tiny model outputs that hardly depend on its
# input (a classifier's logits differ across texts by ~3e-5, a float32 test's tolerance). A
# test that tells two computations apart by their outputs builds its models with this
# (``tiny_encoder(seed, **TEXT_DEPENDENT)``, heads included: they take the encoder's
# initializer_range): logits then differ across texts, and between (a, b) and (b, a), by ~0.1.
TEXT_DEPENDENT = {"initializer_range": 0.2}


POSITIVE = ["a great movie", "good fun", "a very good film", "great plot", "the actor is good",
            "fun and great", "a good movie", "very fun"]
NEGATIVE = ["a dull movie", "bad plot", "a very boring film", "dull and bad", "the actor is bad",
            "boring", "not good", "a bad film"]


def feed_forward_rows(model, inputs, intermediate_size=32):
    """How many rows each block's intermediate (feed-forward) matmul multiplies, in the
    inference graph of ``model`` on ``inputs`` (a dict of arrays, shapes fixed)."""
    spec = {k: tf.TensorSpec(v.shape, tf.int32) for k, v in inputs.items()}
    graph = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec).graph
    return [op.outputs[0].shape[0] for op in graph.get_operations()
            if op.type == "MatMul" and op.outputs[0].shape[-1] == intermediate_size]
