"""`MaskedLMMasker`: dynamic masked-LM masking of packed BERT inputs, in graph."""

import keras
import tensorflow as tf

from keras_bert.text import vocab as vocab_lib


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMMasker(keras.layers.Layer):
    """Picks tokens to predict and masks them, as BERT pre-training does, anew on every call.

    Per sequence, `round(mask_rate * n)` of its `n` maskable tokens are chosen (at least one,
    at most `max_predictions_per_seq`); `[CLS]`, `[SEP]`, `[PAD]` and positions where
    `input_mask` is 0 are never chosen. A chosen token becomes `[MASK]` with probability
    `mask_token_rate`, a random ordinary vocabulary token with `random_token_rate`, and stays
    as it is otherwise (80/10/10). With `whole_word_masking`, a word's WordPiece pieces
    (`##` continuations with the piece before them) are chosen together: as in BERT's
    `create_pretraining_data.py`, words are visited in random order and a word is taken when
    it still fits into the sequence's budget, skipped otherwise.

    Outputs, besides the masked `input_word_ids` and the untouched other inputs:
    `masked_lm_positions` and `masked_lm_ids` (int32, [batch, max_predictions_per_seq], the
    original ids, 0-padded, positions ascending) and `masked_lm_weights` (float32, 1.0 where
    a prediction is real), the names of the original BERT TFRecords.

    Randomness: with `seed`, the sequence of masks is the same run after run (a
    `keras.random.SeedGenerator` state advances on each call); passing `seed=` to a call (a
    shape [2] int tensor) makes that call stateless and reproducible on its own. In a
    `dataset.map` with parallel calls the order in which the state advances is not fixed; for
    masks reproducible there, derive the seed from the element, e.g.
    `dataset.enumerate().map(lambda i, x: masker(x, seed=tf.stack([i, 0])))`.

    Args:
      vocabulary: list of tokens or path to `vocab.txt` (for the special ids, the `##` pieces
        and the ids random replacement draws from).
      mask_rate: share of the maskable tokens to predict.
      max_predictions_per_seq: most predictions per sequence (the output width).
      mask_token_rate, random_token_rate: the 80/10 of 80/10/10.
      whole_word_masking: choose whole words.
      seed: int seed, or None for a random one.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"]
    >>> masker = MaskedLMMasker(vocab, max_predictions_per_seq=2, seed=1)
    >>> out = masker({"input_word_ids": [[2, 5, 6, 7, 5, 3, 0, 0]],
    ...               "input_mask": [[1, 1, 1, 1, 1, 1, 0, 0]]})
    >>> sorted(out)
    ['input_mask', 'input_word_ids', 'masked_lm_ids', 'masked_lm_positions', 'masked_lm_weights']
    >>> out["masked_lm_weights"].numpy()  # round(0.15 * 4) = 1 prediction
    array([[1., 0.]], dtype=float32)
    """

    def __init__(
        self,
        vocabulary,
        mask_rate=0.15,
        max_predictions_per_seq=20,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word_masking=False,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.vocabulary = vocab_lib.load_vocabulary(vocabulary)
        vocab_lib.check_vocabulary(self.vocabulary)
        if not 0.0 < mask_rate <= 1.0:
            raise ValueError(f"mask_rate must be in (0, 1], got {mask_rate}")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ValueError("mask_token_rate and random_token_rate must be >= 0, sum <= 1")
        self.mask_rate = float(mask_rate)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.whole_word_masking = bool(whole_word_masking)
        self.seed = seed
        ids = vocab_lib.special_token_ids(self.vocabulary)
        self.mask_token_id = ids[vocab_lib.MASK]
        self._never = [ids[vocab_lib.CLS], ids[vocab_lib.SEP], ids[vocab_lib.PAD]]
        self._is_continuation = [t.startswith("##") for t in self.vocabulary]
        # Random replacements: ordinary tokens only, no "[...]" specials or unused slots.
        self._random_ids = [
            i for i, t in enumerate(self.vocabulary)
            if not (t.startswith("[") and t.endswith("]"))
        ]
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True

    def call(self, inputs, seed=None):
        if isinstance(inputs, dict):
            features = dict(inputs)
            ids = tf.convert_to_tensor(features["input_word_ids"], tf.int32)
            if "input_mask" in features:
                valid = tf.convert_to_tensor(features["input_mask"]) > 0
            else:
                valid = tf.not_equal(ids, self._never[2])
        else:
            ids = tf.convert_to_tensor(inputs, tf.int32)
            features = {}
            valid = tf.not_equal(ids, self._never[2])
        if seed is None:
            seed = self.seed_generator.next()
        seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
        seeds = tf.random.experimental.stateless_split(seed, num=4)

        batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
        # [B, S]: which tokens may be chosen, and which start a word.
        candidate = valid
        for never_id in self._never:
            candidate &= tf.not_equal(ids, never_id)
        if self.whole_word_masking:
            continuation = tf.gather(tf.constant(self._is_continuation), ids) & candidate
            prev_candidate = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
            start = candidate & ~(continuation & prev_candidate)
        else:
            start = candidate
        num_candidates = tf.reduce_sum(tf.cast(candidate, tf.float32), axis=1)  # [B]
        num_to_predict = tf.minimum(
            tf.cast(self.max_predictions_per_seq, tf.float32),
            tf.maximum(tf.minimum(num_candidates, 1.0), tf.round(num_candidates * self.mask_rate)),
        )
        num_to_predict = tf.cast(num_to_predict, tf.int32)[:, None]  # [B, 1]

        # Every candidate token's word, as a global segment id (non-candidates: a dummy one).
        word_index = tf.cumsum(tf.cast(start, tf.int32), axis=1) - 1  # [B, S]
        dummy = batch * length
        rows = tf.range(batch)[:, None] * length
        segment = tf.where(candidate, rows + word_index, dummy)  # [B, S]
        word_len = tf.math.unsorted_segment_sum(
            tf.cast(candidate, tf.int32), segment, num_segments=dummy + 1
        )
        len_at_start = tf.where(start, tf.gather(word_len, segment), 0)  # [B, S]

        # Words in random order; take them while they fit into the budget.
        scores = tf.random.stateless_uniform(tf.shape(ids), seed=seeds[0])
        order = tf.argsort(tf.where(start, scores, 2.0), axis=1)  # word starts first
        sorted_len = tf.gather(len_at_start, order, batch_dims=1)
        if self.whole_word_masking:
            chosen_sorted = _greedy_fit(sorted_len, num_to_predict[:, 0])
        else:  # words of one token: the first num_to_predict of them
            chosen_sorted = (sorted_len > 0) & (tf.cumsum(sorted_len, axis=1) <= num_to_predict)
        chosen_start = tf.gather(chosen_sorted, tf.argsort(order, axis=1), batch_dims=1)
        word_chosen = tf.math.unsorted_segment_max(
            tf.cast(chosen_start & start, tf.int32), segment, num_segments=dummy + 1
        )
        chosen = candidate & (tf.gather(word_chosen, segment) > 0)  # [B, S]

        # 80/10/10.
        u = tf.random.stateless_uniform(tf.shape(ids), seed=seeds[1])
        random_ids = tf.gather(
            tf.constant(self._random_ids, tf.int32),
            tf.random.stateless_uniform(
                tf.shape(ids), seed=seeds[2], maxval=len(self._random_ids), dtype=tf.int32
            ),
        )
        to_mask = chosen & (u < self.mask_token_rate)
        to_random = chosen & ~to_mask & (u < self.mask_token_rate + self.random_token_rate)
        masked_ids = tf.where(to_mask, self.mask_token_id, ids)
        masked_ids = tf.where(to_random, random_ids, masked_ids)

        # Positions of the chosen tokens, ascending, padded to max_predictions_per_seq.
        width = self.max_predictions_per_seq
        positions = tf.broadcast_to(tf.range(length)[None, :], tf.shape(ids))
        key = tf.where(chosen, positions, length + positions)
        key = tf.pad(key, [[0, 0], [0, tf.maximum(width - length, 0)]], constant_values=2**30)
        key = tf.sort(key, axis=1)[:, :width]
        is_real = key < length
        masked_positions = tf.where(is_real, key, 0)
        masked_lm_ids = tf.where(is_real, tf.gather(ids, masked_positions, batch_dims=1), 0)

        features.update(
            {
                "input_word_ids": masked_ids,
                "masked_lm_positions": masked_positions,
                "masked_lm_ids": masked_lm_ids,
                "masked_lm_weights": tf.cast(is_real, tf.float32),
            }
        )
        return features

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": list(self.vocabulary),
                "mask_rate": self.mask_rate,
                "max_predictions_per_seq": self.max_predictions_per_seq,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "whole_word_masking": self.whole_word_masking,
                "seed": self.seed,
            }
        )
        return config


def _greedy_fit(lengths, budget):
    """lengths [B, W] (0: no word), budget [B] -> chosen [B, W]: visiting words in order,
    take each one that still fits (BERT's skip-and-continue), in one scan over W."""

    def step(used, length):
        take = (length > 0) & (used + length <= budget)
        return used + tf.where(take, length, 0), take

    _, chosen = tf.scan(
        lambda carry, length: step(carry[0], length),
        tf.transpose(lengths),
        initializer=(tf.zeros_like(budget), tf.zeros_like(budget, tf.bool)),
    )
    return tf.transpose(chosen)
