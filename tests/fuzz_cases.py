"""The fuzzing driver of tests/test_fuzz.py, run in its own process (`python -m tests.fuzz_cases`).

Random inputs (fixed seeds) for `BertPreprocessor`, `BertPackInputs`, `BertTokenizer`,
`MaskedLMMasker` and a tiny `BertEncoder`: shapes, batch sizes, ranks, dtypes, byte strings,
bad arguments; called eagerly, in a `tf.function` (static and unknown shapes) and in
`dataset.map`. Every outcome must be a result of the documented shape and values, or an
exception of a documented type. It prints `CASE <n> <description>` before each case (so a
crash names the case that killed it) and at the end one line `RESULT <json>` with the cases
run and the bad outcomes.
"""

import json
import re
import sys
import time

import keras_bert  # noqa: F401  (selects the backend, loads TensorFlow quietly)
import numpy as np
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.text import BertPackInputs, BertPreprocessor, MaskedLMMasker

DOCUMENTED = (ValueError, TypeError, tf.errors.InvalidArgumentError)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", ".", "a",
         "##b", "é", "中"]
KEYS = ("input_word_ids", "input_mask", "input_type_ids")


class Bad(Exception):
    """An outcome that is neither a documented result nor a documented error."""


# ---- random values --------------------------------------------------------------------------
def random_text(rng):
    kind = rng.integers(6)
    if kind == 0:
        return ""
    if kind == 1:  # arbitrary bytes, mostly invalid UTF-8
        return bytes(rng.integers(0, 256, size=rng.integers(1, 12)).astype(np.uint8).tolist())
    if kind == 2:  # arbitrary code points (no surrogates)
        points = rng.integers(1, 0x2FFFF, size=rng.integers(1, 8))
        return "".join(chr(int(p)) for p in points if not 0xD800 <= p <= 0xDFFF)
    words = rng.choice(VOCAB[5:] + ["quick", "The", "ab", "zzz", "[CLS]"], size=rng.integers(1, 9))
    return " ".join(str(w) for w in words)


def random_texts(rng, n):
    return [random_text(rng) for _ in range(n)]


def random_ids(rng, shape, low=0, high=len(VOCAB)):
    return rng.integers(low, high, size=shape)


def random_dtype(rng, choices=("int32", "int32", "int64", "float32", "string", "bool", "uint8")):
    return str(rng.choice(choices))


def as_dtype(values, dtype):
    values = np.asarray(values)
    if dtype == "string":
        return tf.constant(values.astype(str))
    return tf.constant(values.astype(dtype))


def random_number(rng, good):
    """Mostly `good`, else one of the values a numeric argument must refuse (None: default)."""
    if rng.random() < 0.7:
        return good
    return [0, -3, 1, 12.7, "8", True, None, 2**40][rng.integers(8)]


# ---- how a case is run ----------------------------------------------------------------------
def run_modes(rng, fn, args):
    """fn(*args) eagerly, in a tf.function (traced shapes, or every dimension unknown), or in
    dataset.map; `args` are tensors (ragged or not) or plain Python values."""
    mode = ["eager", "eager", "eager", "function", "unknown_shapes", "dataset"][rng.integers(6)]
    tensors = all(isinstance(a, (tf.Tensor, tf.RaggedTensor)) for a in args)
    if mode == "eager" or not tensors:
        return "eager", fn(*args)
    if mode == "function":
        return mode, tf.function(fn)(*args)
    specs = [_unknown_spec(a) for a in args]
    if mode == "unknown_shapes":
        return mode, tf.function(fn, input_signature=specs)(*args)
    ds = tf.data.Dataset.from_generator(lambda: iter([tuple(args)]), output_signature=tuple(specs))
    return mode, next(iter(ds.map(fn)))


def _unknown_spec(x):
    if isinstance(x, tf.RaggedTensor):
        return tf.RaggedTensorSpec([None] * x.shape.rank, x.dtype, x.ragged_rank,
                                   row_splits_dtype=x.row_splits.dtype)
    return tf.TensorSpec([None] * x.shape.rank, x.dtype)


# ---- checks of results ------------------------------------------------------------------------
def check_packed(out, batch_shape, seq_length, vocab_size=len(VOCAB)):
    if sorted(out) != sorted(KEYS):
        raise Bad(f"keys {sorted(out)}")
    for key in KEYS:
        value = out[key]
        if value.dtype != tf.int32 or tuple(value.shape) != tuple(batch_shape) + (seq_length,):
            raise Bad(f"{key}: {value.dtype.name} {value.shape}, want {batch_shape}+({seq_length},)")
    ids, mask, types = (np.asarray(out[k]) for k in KEYS)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):  # memory read as ids
        raise Bad(f"input_word_ids out of the vocabulary: {ids.min()}..{ids.max()}")
    if not np.isin(mask, [0, 1]).all() or not np.isin(types, [0, 1, 2]).all():
        raise Bad("input_mask or input_type_ids values")


def texts_batch_shape(x):
    """The batch shape a preprocessor result must have for inputs x (read as documented)."""
    first = x[0] if isinstance(x, tuple) else x
    if isinstance(x, list) and x and all(isinstance(t, (list, tuple)) for t in x):
        first = [t[0] for t in x]  # a batch of pairs
    elif isinstance(x, list) and x and all(isinstance(t, (tf.Tensor, np.ndarray)) for t in x):
        first = x[0]
    if isinstance(first, (str, bytes)):
        return ()
    return (len(first),) if isinstance(first, list) else tuple(first.shape)


# ---- the five classes -------------------------------------------------------------------------
def preprocessor_case(rng, pre):
    n = int(rng.integers(0, 4))
    kind = rng.integers(9)
    if kind == 0:
        x = random_text(rng)
    elif kind == 1:
        x = random_texts(rng, n)
    elif kind == 2:  # segments, batch sizes sometimes differ
        x = tuple(random_texts(rng, n + int(rng.integers(0, 2) * rng.integers(-1, 2)))
                  for _ in range(rng.integers(1, 5)))
    elif kind == 3:  # Hugging Face pairs, sometimes ragged
        x = [random_texts(rng, int(rng.choice([2, 2, 3, 1]))) for _ in range(max(n, 1))]
    elif kind == 4:  # string tensors of rank 0 to 3
        shape = [(), (8,), (2, 4), (2, 2, 2)][rng.integers(4)]
        x = tf.constant(np.array(random_texts(rng, int(np.prod(shape))), dtype=object)
                        .reshape(shape))
    elif kind == 5:  # tensors of other dtypes
        x = as_dtype(random_ids(rng, (n,)), random_dtype(rng))
    elif kind == 6:  # a tuple of tensors, for the graph modes
        x = tuple(tf.constant(random_texts(rng, n + int(rng.integers(0, 2))), tf.string)
                  for _ in range(rng.integers(1, 4)))
    elif kind == 7:
        x = tf.ragged.constant([random_texts(rng, 2), random_texts(rng, 1)])
    else:
        x = [[random_text(rng)], random_text(rng), 3, None, {"a": 1}][rng.integers(5)]
    seq_length = random_number(rng, int(rng.integers(2, 20)))
    args = list(x) if isinstance(x, tuple) else [x]
    fn = (lambda *a: pre(tuple(a), seq_length=seq_length)) if isinstance(x, tuple) else (
        lambda a: pre(a, seq_length=seq_length))
    return fn, args, lambda out: check_packed(out, texts_batch_shape(x),
                                              seq_length or pre.seq_length)


def packer_case(rng, packer):
    segments = []
    unbatched = rng.integers(5) == 0
    batch = int(rng.integers(0, 4))
    for _ in range(int(rng.choice([1, 1, 2, 2, 3, 4]))):
        size = batch + int(rng.integers(-1, 2)) if rng.integers(6) == 0 else batch
        dtype = random_dtype(rng) if rng.integers(3) == 0 else "int32"
        low, high = (-3, 2**33) if rng.integers(6) == 0 else (0, len(VOCAB))
        form = rng.integers(4)
        if unbatched:
            segment = as_dtype(random_ids(rng, (rng.integers(0, 9),), low, high), dtype)
        elif form == 0:
            segment = as_dtype(random_ids(rng, (max(size, 0), rng.integers(0, 9)), low, high),
                               dtype)
        elif form == 3:  # per-word ids, ragged_rank 2
            segment = tf.ragged.constant([[[5, 6], [7]]] * max(size, 0), ragged_rank=2,
                                         dtype=tf.int32)
        else:
            rows = [random_ids(rng, (rng.integers(0, 9),), low, high).tolist()
                    for _ in range(max(size, 0))]
            segment = tf.ragged.constant(rows, dtype=tf.int64, ragged_rank=1, inner_shape=())
            if dtype not in ("int32", "int64"):
                segment = tf.ragged.map_flat_values(lambda v: as_dtype(v.numpy(), dtype), segment)
        segments.append(segment)
    seq_length = random_number(rng, int(rng.integers(2, 20)))
    batch_shape = () if unbatched else (segments[0].shape[0],)
    return (lambda *s: packer(list(s), seq_length=seq_length)), segments, (
        lambda out: check_packed(out, batch_shape, seq_length or packer.seq_length, 2**33))


def tokenizer_case(rng, tok):
    if rng.integers(3) == 0:  # detokenize
        shape = [(), (3,), (2, 3), (2, 2, 3)][rng.integers(4)]
        ids = as_dtype(random_ids(rng, shape, -2, len(VOCAB) + 2), random_dtype(rng))

        def check_text(out):
            if out.dtype != tf.string or tuple(out.shape) != shape[:-1]:
                raise Bad(f"detokenize gave {out.dtype.name} {out.shape} for ids {shape}")

        return tok.detokenize, [ids], check_text
    shape = [(), (3,), (0,), (2, 2), (1, 2, 2)][rng.integers(5)]
    texts = np.array(random_texts(rng, int(np.prod(shape))), dtype=object).reshape(shape)
    x = tf.constant(texts) if rng.integers(4) else as_dtype(random_ids(rng, shape),
                                                            random_dtype(rng))
    per_word = bool(rng.integers(2))

    def check_ids(out):
        flat = out.flat_values if isinstance(out, tf.RaggedTensor) else out
        rank = len(shape) + 1 + int(per_word)
        if out.dtype != tf.int32 or out.shape.rank != rank or (shape and out.shape[0] != shape[0]):
            raise Bad(f"tokenize gave {out.dtype.name} {out.shape} for {shape}")
        if tf.size(flat) and (tf.reduce_min(flat) < 0 or tf.reduce_max(flat) >= len(VOCAB)):
            raise Bad("token ids outside the vocabulary")

    return (lambda t: tok.tokenize(t, per_word=per_word)), [x], check_ids


def masker_case(rng, maskers):
    masker = maskers[rng.integers(len(maskers))]
    shape = [(2, 8), (2, 8), (4, 5), (1, 3), (0, 8), (3, 0), (8,), (1, 2, 8)][rng.integers(8)]
    high = len(VOCAB) + (5 if rng.integers(10) == 0 else 0)
    ids = as_dtype(random_ids(rng, shape, -1 if rng.integers(8) == 0 else 0, high),
                   random_dtype(rng) if rng.integers(6) == 0 else "int32")
    mask_shape = shape if rng.integers(6) else (1,) + tuple(shape[1:])
    mask_values = rng.choice([0, 1, 1, 1] + ([2] if rng.integers(6) == 0 else []), size=mask_shape)
    mask_dtype = ["int32", "int32", "int32", "int64", "float32", "bool", "string"][rng.integers(7)]
    mask = as_dtype(mask_values, mask_dtype)
    with_mask = rng.integers(4) > 0
    args = [ids, mask] if with_mask else [ids]
    seed = ([None] * 5 + [tf.constant([1, 2]), tf.constant([1, 2, 3]), 5])[rng.integers(8)]

    def fn(i, m=None):
        inputs = {"input_word_ids": i, "input_mask": m} if m is not None else i
        return masker(inputs, seed=seed)

    def check_masked(out):
        width = masker.max_predictions_per_seq
        want = {"input_word_ids": shape, "masked_lm_positions": (shape[0], width),
                "masked_lm_ids": (shape[0], width), "masked_lm_weights": (shape[0], width)}
        for key, key_shape in want.items():
            if tuple(out[key].shape) != tuple(key_shape):
                raise Bad(f"{key}: {out[key].shape}, want {key_shape}")
        positions = np.asarray(out["masked_lm_positions"])
        if positions.size and (positions.min() < 0 or positions.max() >= max(shape[1], 1)):
            raise Bad("masked_lm_positions outside the sequence")

    return fn, args, check_masked


def encoder_case(rng, encoder):
    batch, seq = int(rng.integers(0, 4)), int(rng.integers(0, 20))
    shapes = {k: (batch, seq) for k in KEYS}
    if rng.integers(6) == 0:  # one input of another shape or rank
        shapes[KEYS[rng.integers(3)]] = [(1, seq), (batch, seq + 1), (seq,), (1, batch, seq)][
            rng.integers(4)]
    highs = {"input_word_ids": 20, "input_mask": 2, "input_type_ids": 2}
    inputs = {}
    for key in KEYS:
        high = highs[key] + (3 if rng.integers(12) == 0 else 0)
        dtype = random_dtype(rng) if rng.integers(10) == 0 else "int32"
        inputs[key] = as_dtype(random_ids(rng, shapes[key], 0, high), dtype)
    if rng.integers(15) == 0:
        del inputs[KEYS[rng.integers(3)]]
    names = sorted(inputs)

    def check_outputs(out):
        sequence, pooled = np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])
        if sequence.shape != (batch, seq, 8) or pooled.shape != (batch, 8):
            raise Bad(f"outputs {sequence.shape} {pooled.shape} for inputs {shapes}")
        if not (np.isfinite(sequence).all() and np.isfinite(pooled).all()):
            raise Bad("non-finite outputs")

    return (lambda *v: encoder(dict(zip(names, v)))), [inputs[n] for n in names], check_outputs


def main(cases=300, seed=0):
    pre = BertPreprocessor(VOCAB, seq_length=12)
    layers = {
        "BertPreprocessor": (preprocessor_case, pre),
        "BertPackInputs": (packer_case, BertPackInputs(seq_length=12)),
        "BertTokenizer": (tokenizer_case, pre.tokenizer),
        "MaskedLMMasker": (masker_case, [
            MaskedLMMasker(VOCAB, max_predictions_per_seq=3, seed=1),
            MaskedLMMasker(VOCAB, max_predictions_per_seq=5, whole_word_masking=True)]),
        "BertEncoder": (encoder_case, BertEncoder(BertConfig(
            vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=16, max_position_embeddings=16))),
    }
    names = list(layers)
    bad, outcomes, start = [], {}, time.time()
    for case in range(cases):
        name = names[case % len(names)]
        case_fn, layer = layers[name]
        print(f"CASE {case} {name}", flush=True)
        case_rng = np.random.default_rng([seed, case])
        fn, args, check = case_fn(case_rng, layer)
        try:
            mode, out = run_modes(case_rng, fn, args)
        except DOCUMENTED as err:
            outcome = type(err).__name__
            if not _names_the_problem(err):
                bad.append(f"case {case} {name}: unclear {outcome}: {str(err)[:300]}")
        except Exception as err:  # noqa: BLE001  (every other type is a finding)
            bad.append(f"case {case} {name}: undocumented {type(err).__name__}: "
                       f"{str(err)[:300]}")
            outcome = "undocumented"
        else:
            try:
                check(out)
                outcome = f"{mode} result"
            except Bad as err:
                bad.append(f"case {case} {name}: {err}")
                outcome = "bad"
        key = f"{name}: {'result' if outcome.endswith('result') else outcome}"
        outcomes[key] = outcomes.get(key, 0) + 1
    result = {"cases": cases, "bad": bad, "outcomes": outcomes,
              "seconds": round(time.time() - start, 1)}
    print("RESULT " + json.dumps(result), flush=True)


# Phrases of keras_bert's own messages (and of the Keras one the preprocessor documents).
OWN_PHRASES = re.compile(
    r"must be|must have|must hold|differ|lack|takes|cannot read|could not read|unexpected keyword|unknown keyword|"
    r"too short|have no|only 0 and 1|at least one token|max_position_embeddings|packs 1 to 3|"
    r"got a dict|got a list of|in a pair|you cannot mix tensors and non-tensors"
)


def _names_the_problem(err):
    """Our errors say what is wrong; a kernel's or a conversion's message does not. In a
    graph ours come from tf.debugging.Assert ("assertion failed: [BertPackInputs: ...")."""
    text = str(err)
    if isinstance(err, tf.errors.InvalidArgumentError):
        return "assertion failed" in text and bool(OWN_PHRASES.search(text))
    return bool(OWN_PHRASES.search(text)) and "Tried to convert" not in text


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
