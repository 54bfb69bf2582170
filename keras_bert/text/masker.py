"""`MaskedLMMasker`: dynamic masked-LM masking of packed BERT inputs, in graph."""

import os

import keras
import tensorflow as tf

from keras_bert import checks, storage
from keras_bert import vocab as vocab_lib
from keras_bert.presets.preset_loader import text_preset

MAX_PREDICTIONS = 2**20


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
        and the ids random replacement draws from). None makes a masker without one yet (as
        `from_config` does), given one by `set_vocabulary` or `load_assets`; calling it
        before raises ValueError saying so. As `BertTokenizer`'s, the vocabulary is a file
        asset (`vocabulary.txt` of a `.keras` file), not part of `get_config`.
      mask_rate: share of the maskable tokens to predict, in (0, 1].
      max_predictions_per_seq: most predictions per sequence (the output width), an int >= 1.
      mask_token_rate, random_token_rate: the 80/10 of 80/10/10 (each in [0, 1], sum <= 1).
      whole_word_masking: choose whole words.
      seed: int seed, or None for a random one.

    Inputs: a dict with `input_word_ids` (integer [batch, seq], ids of the vocabulary) and
    optionally `input_mask` (0/1 or bool, the same shape; other entries pass through), or the
    ids tensor alone; `seed=` a shape [2] integer tensor.

    Raises:
      ValueError: ids of rank other than 2 or outside the vocabulary, an `input_mask` of
        another shape or with values other than 0 and 1 (weights are not masks), a dict
        without `input_word_ids`, a `seed=` not of shape [2], bad arguments (rates out of
        range, `max_predictions_per_seq` < 1, not numbers, bool for a number) or vocabulary.
      TypeError: ids that are not integers (float, string), a non-numeric `input_mask`,
        ragged ids, unknown constructor arguments.
      tf.errors.InvalidArgumentError: inside a graph, ids outside the vocabulary, mask values
        other than 0/1 or batch/sequence sizes the traced shapes leave unknown (checked before
        any masking op).

    Example:

    >>> masker = MaskedLMMasker.from_preset("tiny_random", max_predictions_per_seq=2, seed=1)
    >>> out = masker({"input_word_ids": [[2, 5, 6, 7, 5, 3, 0, 0]],
    ...               "input_mask": [[1, 1, 1, 1, 1, 1, 0, 0]]})
    >>> sorted(out)
    ['input_mask', 'input_word_ids', 'masked_lm_ids', 'masked_lm_positions', 'masked_lm_weights']
    >>> out["masked_lm_weights"].numpy()  # round(0.15 * 4) = 1 prediction
    array([[1., 0.]], dtype=float32)
    """

    def __init__(
        self,
        vocabulary=None,
        mask_rate=0.15,
        max_predictions_per_seq=20,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word_masking=False,
        seed=None,
        **kwargs,
    ):
        checks.check_layer_kwargs(
            "MaskedLMMasker", kwargs, checks.keyword_parameters(MaskedLMMasker.__init__)
        )
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.mask_rate = checks.number("mask_rate", mask_rate, 0.0, 1.0, low_open=True)
        self.max_predictions_per_seq = checks.integer(
            "max_predictions_per_seq", max_predictions_per_seq, minimum=1, maximum=MAX_PREDICTIONS
        )
        self.mask_token_rate = checks.number("mask_token_rate", mask_token_rate, 0.0, 1.0)
        self.random_token_rate = checks.number("random_token_rate", random_token_rate, 0.0, 1.0)
        if self.mask_token_rate + self.random_token_rate > 1:
            raise ValueError(
                f"mask_token_rate + random_token_rate must be <= 1, got {self.mask_token_rate} "
                f"+ {self.random_token_rate}"
            )
        self.whole_word_masking = checks.boolean("whole_word_masking", whole_word_masking)
        if seed is not None:
            seed = checks.integer("seed", seed, minimum=0, maximum=2**63 - 1)
        self.seed = seed
        self.set_vocabulary(vocabulary)
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True

    def set_vocabulary(self, vocabulary):
        """Sets (or with None, clears) the vocabulary: a `vocab.txt` path or a list of tokens."""
        if vocabulary is None:
            self.vocabulary = self.mask_token_id = self._never = None
            self._is_continuation = self._random_ids = None
            return
        tokens = vocab_lib.load_vocabulary(vocabulary)
        vocab_lib.check_vocabulary(tokens)
        # Random replacements: ordinary tokens only, no "[...]" specials or unused slots.
        random_ids = [i for i, t in enumerate(tokens)
                      if not (t.startswith("[") and t.endswith("]"))]
        if not random_ids and self.random_token_rate > 0:
            raise ValueError(
                "random_token_rate > 0 needs ordinary tokens to draw from, but every token of "
                "the vocabulary is a [...] special one; use random_token_rate=0"
            )
        ids = vocab_lib.special_token_ids(tokens)
        self.vocabulary = tokens
        self.mask_token_id = ids[vocab_lib.MASK]
        self._never = [ids[vocab_lib.CLS], ids[vocab_lib.SEP], ids[vocab_lib.PAD]]
        self._is_continuation = [t.startswith("##") for t in tokens]
        self._random_ids = random_ids

    def save_assets(self, dir_path):
        """Writes the vocabulary to `dir_path`/vocabulary.txt (Keras calls it when saving)."""
        if self.vocabulary is not None:
            vocab_lib.write_vocabulary(self.vocabulary,
                                       os.path.join(dir_path, vocab_lib.ASSET_FILE))

    def load_assets(self, dir_path):
        """Reads the vocabulary `save_assets` wrote; without that file (an older `.keras`
        whose config held the vocabulary) it stays as it is."""
        path = os.path.join(dir_path, vocab_lib.ASSET_FILE) if dir_path else None
        if path and storage.isfile(path):
            self.set_vocabulary(path)

    def _checked_inputs(self, inputs):
        """(features, ids int32 [B, S], valid bool [B, S]), every check passed before them."""
        where = "MaskedLMMasker"
        vocab_lib.require(self.vocabulary, where)
        features = dict(inputs) if isinstance(inputs, dict) else {}
        if isinstance(inputs, dict) and "input_word_ids" not in inputs:
            raise ValueError(f"{where}: the inputs have no 'input_word_ids' (keys: "
                             f"{sorted(inputs)})")
        ids = checks.integer_tensor(features.get("input_word_ids", inputs), "input_word_ids")
        if isinstance(ids, tf.RaggedTensor) or ids.shape.rank != 2:
            raise ValueError(f"{where}: input_word_ids must be a dense [batch, seq] tensor, got "
                             f"{'a ragged tensor of ' if isinstance(ids, tf.RaggedTensor) else ''}"
                             f"shape {ids.shape}")
        assertions = checks.values_in(ids, "input_word_ids", 0, len(self.vocabulary), where,
                                      " (the vocabulary)")
        mask = features.get("input_mask")
        if mask is not None:
            mask = tf.convert_to_tensor(mask)
            if not (mask.dtype.is_integer or mask.dtype.is_floating or mask.dtype == tf.bool):
                raise TypeError(f"{where}: input_mask must be 0/1 numbers or bools, got dtype "
                                f"{mask.dtype.name}")
            if mask.shape.rank != 2:
                raise ValueError(f"{where}: input_mask must be [batch, seq] like "
                                 f"input_word_ids {ids.shape}, got shape {mask.shape}")
            for axis, what in ((0, "batch size"), (1, "sequence length")):
                assertions += checks.same_dims(
                    [ids, mask], ["input_word_ids", "input_mask"], axis, what, where)
            assertions += checks.zero_or_one(mask, "input_mask", where)
        ids, mask = checks.after(assertions, (tf.cast(ids, tf.int32), mask))
        valid = tf.not_equal(ids, self._never[2]) if mask is None else tf.cast(mask, tf.bool)
        return features, ids, valid

    def _checked_seed(self, seed):
        if seed is None:
            seed = self.seed_generator.next()
        seed = tf.convert_to_tensor(seed)
        if not seed.dtype.is_integer or seed.shape.rank != 1 or seed.shape[0] not in (2, None):
            raise ValueError(f"MaskedLMMasker: seed= must be a shape [2] integer tensor, e.g. "
                             f"tf.constant([i, 0]); got {seed.dtype.name} of shape {seed.shape}")
        return tf.cast(seed, tf.int64)

    def call(self, inputs, seed=None):
        features, ids, valid = self._checked_inputs(inputs)
        seeds = tf.random.experimental.stateless_split(self._checked_seed(seed), num=4)

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
        padded = tf.pad(ids, [[0, 0], [0, 1]])  # position 0 exists even when length is 0
        masked_lm_ids = tf.where(is_real, tf.gather(padded, masked_positions, batch_dims=1), 0)

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
                "mask_rate": self.mask_rate,
                "max_predictions_per_seq": self.max_predictions_per_seq,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "whole_word_masking": self.whole_word_masking,
                "seed": self.seed,
            }
        )
        return config

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The masker of a preset: its vocabulary. `kwargs`: the other constructor arguments
        (`mask_rate`, `max_predictions_per_seq`, `whole_word_masking`, `seed`, ...); others
        raise TypeError."""
        accepted = checks.keyword_parameters(cls.__init__, skip=("vocabulary",))
        checks.check_layer_kwargs("MaskedLMMasker.from_preset", kwargs, accepted)
        return cls(text_preset(preset).load_vocabulary(), **kwargs)


def _greedy_fit(lengths, budget):
    """lengths [B, W] (0: no word), budget [B] -> chosen [B, W]: visiting words in order,
    take each one that still fits (BERT's skip-and-continue), in one scan over W.

    The scan runs on float32 (exact for these small integers): TensorFlow's oneDNN build logs
    an error line ("oneDNN supports DT_INT32 only ...") for a transpose of any other dtype.
    """
    budget = tf.cast(budget, tf.float32)
    # One more word of length 0, never taken: a scan over no words fails in a graph.
    lengths = tf.pad(lengths, [[0, 0], [0, 1]])

    def step(used, length):
        take = tf.cast((length > 0) & (used + length <= budget), tf.float32)
        return used + take * length, take

    _, chosen = tf.scan(
        lambda carry, length: step(carry[0], length),
        tf.transpose(tf.cast(lengths, tf.float32)),  # [W, B]
        initializer=(tf.zeros_like(budget), tf.zeros_like(budget)),
    )
    return tf.transpose(chosen)[:, :-1] > 0  # [B, W]
