"""`BertPreprocessor`: raw strings (single sentences or pairs) -> BERT model inputs, in graph."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import checks
from keras_bert.text.packer import BertPackInputs, checked_seq_length
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.config import INPUT_NAMES

ACCEPTED_FORMS = (
    "BertPreprocessor takes: a string, or a batch of strings (a list, array or tensor of "
    "shape [batch]); a tuple of 1 to 3 such batches, (texts_a, texts_b), one per segment "
    "(also a list of tensors); or a list of pairs (or triples) of strings, "
    "[[text_a, text_b], ...], as Hugging Face tokenizers take them."
)
SEGMENT_NAMES = ("texts_a", "texts_b", "texts_c")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """`BertTokenizer` + `BertPackInputs`: strings in, `input_word_ids`/`input_mask`/
    `input_type_ids` out, all TensorFlow graph ops.

    Works three ways: called eagerly; in `tf.data` as `dataset.map(preprocessor,
    num_parallel_calls=tf.data.AUTOTUNE)` (elements `text`, `(text, label)` or
    `((text_a, text_b), label)`; labels and sample weights pass through); and as the first layer
    of a Keras model whose inputs are `tf.string`, which then saves to `.keras` with its
    vocabulary.

    Inputs, and how each is read:

    - a string, or a batch of strings (a list of str, an array or tensor of shape [batch]):
      single segments;
    - a tuple of 1 to 3 batches, `(texts_a, texts_b)`: one batch per segment (the keras-hub
      and `tf.data` convention); a list of tensors or arrays is read the same way;
    - a list whose items are each a list/tuple of 2 (or 3) strings,
      `[["q1", "a1"], ["q2", "a2"]]`: a batch of pairs (triples), as Hugging Face tokenizers
      read it.

    Anything else (list items of different lengths, strings mixed with lists, a string
    tensor of rank 2) is an error that shows these forms; nothing is ever transposed to make
    it fit. The segments' batch sizes must agree. (Keras itself refuses one call that mixes
    tensors with Python lists or arrays: ValueError.)

    Args:
      tokenizer: a `BertTokenizer`, or a vocabulary (path to `vocab.txt` or list of tokens)
        to build one with `do_lower_case`.
      seq_length: length of the packed sequences, an int in [3, 2**20] (can be overridden
        per call). It must hold [CLS], one token of each text and a [SEP] after each: a call
        on pairs needs at least 5 (``[CLS] a [SEP] b [SEP]``), on triples 7; a shorter one is
        a ValueError (in a graph, with a tensor ``seq_length``, an assertion).
      truncator: "round_robin" or "waterfall" (see `BertPackInputs`).
      do_lower_case: only used when `tokenizer` is a vocabulary.

    Raises:
      ValueError: segments whose batch sizes differ (naming both), inputs of a form above
        it cannot read (the message lists the forms), string tensors of rank 2 or more,
        batched mixed with unbatched segments, a bad `seq_length`/`truncator`/vocabulary.
      TypeError: inputs that are not strings (numbers, ragged tensors, a dict), unknown
        constructor or `from_preset` arguments.
      tf.errors.InvalidArgumentError: inside a graph (`tf.function`, `dataset.map`) when
        batch sizes are unknown while tracing and differ at run time. The assertion runs
        before any tokenization op.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick",
    ...          "fox", "."]
    >>> preprocessor = BertPreprocessor(vocab, seq_length=6)
    >>> out = preprocessor(["The quick fox."])
    >>> out["input_word_ids"].numpy()
    array([[2, 5, 6, 7, 8, 3]], dtype=int32)
    >>> pair = preprocessor((["The fox"], ["Quick."]))
    >>> pair["input_word_ids"].numpy(), pair["input_type_ids"].numpy()
    (array([[2, 5, 8, 3, 6, 3]], dtype=int32), array([[0, 0, 0, 0, 1, 1]], dtype=int32))
    >>> hf_pairs = preprocessor([["The fox", "Quick."]])  # a list of pairs: the same
    >>> bool((hf_pairs["input_word_ids"] == pair["input_word_ids"]).numpy().all())
    True
    >>> preprocessor((["The fox", "the"], ["Quick."]))
    Traceback (most recent call last):
    ...
    ValueError: ...the batch sizes differ: texts_a has 2, texts_b has 1...
    """

    def __init__(
        self, tokenizer, seq_length=128, truncator="round_robin", do_lower_case=True, **kwargs
    ):
        checks.check_layer_kwargs(
            "BertPreprocessor", kwargs, checks.keyword_parameters(BertPreprocessor.__init__)
        )
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        do_lower_case = checks.boolean("do_lower_case", do_lower_case)
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        if not isinstance(tokenizer, BertTokenizer):
            tokenizer = BertTokenizer(tokenizer, do_lower_case=do_lower_case)
        self.tokenizer = tokenizer
        self.packer = BertPackInputs(
            seq_length=checked_seq_length(seq_length, where=type(self).__name__),
            truncator=truncator, **special_ids(tokenizer)
        )
        self.seq_length = self.packer.seq_length
        self.truncator = truncator
        self.built = True

    def _checked_texts(self, x):
        """The segments of x as string tensors of one rank (0 or 1) and, when batched, one
        batch size: ValueError now, or assertions in front of them in a graph."""
        segments = text_segments(x)
        names = SEGMENT_NAMES[: len(segments)] if len(segments) > 1 else ("texts",)
        texts = [checks.string_tensor(s, f"BertPreprocessor {n}") for s, n in zip(segments, names)]
        ranks = [tf.TensorShape(t.shape).rank for t in texts]  # (KerasTensor: a tuple)
        for text, name, rank in zip(texts, names, ranks):
            if rank not in (0, 1):
                raise ValueError(
                    f"BertPreprocessor: {name} must be a string or a batch of strings "
                    f"[batch], got shape {tuple(text.shape)}. {ACCEPTED_FORMS}"
                )
        if len(set(ranks)) > 1:
            raise ValueError(
                "BertPreprocessor: segments must be all strings or all batches, got shapes "
                + ", ".join(f"{n}: {tuple(t.shape)}" for n, t in zip(names, texts))
                + f". {ACCEPTED_FORMS}"
            )
        if ranks[0] == 0 or isinstance(texts[0], keras.KerasTensor):
            return texts
        batch_sizes = checks.same_dims(texts, names, 0, "batch size", "BertPreprocessor")
        return checks.after(batch_sizes, texts)

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        sync_packer(self.packer, self.tokenizer)
        texts = self._checked_texts(x)
        # Room for one token of each segment, named after this class (the packer checks too).
        seq_length = checked_seq_length(self.seq_length if seq_length is None else seq_length,
                                        len(texts), where=type(self).__name__)
        segments = [self.tokenizer.tokenize(t) for t in texts]
        out = self.packer(segments, seq_length=seq_length)
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        texts = self._checked_texts(x)
        seq_length = self.seq_length if seq_length is None else seq_length
        shape = tuple(texts[0].shape) + (
            checked_seq_length(seq_length, len(texts), where=type(self).__name__),)
        out = {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in INPUT_NAMES
        }
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "seq_length": self.seq_length,
                "truncator": self.truncator,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, seq_length=128, truncator="round_robin", do_lower_case=None,
                    **kwargs):
        """The preprocessor of a preset: its vocabulary and casing (see `BertTokenizer`).

        `kwargs`: Keras layer arguments (`name`, ...); others raise TypeError.
        """
        checks.check_layer_kwargs(
            "BertPreprocessor.from_preset", kwargs, checks.keyword_parameters(cls.from_preset)
        )
        tokenizer = BertTokenizer.from_preset(preset, do_lower_case=do_lower_case)
        return cls(tokenizer, seq_length=seq_length, truncator=truncator, **kwargs)


def special_ids(tokenizer):
    """The packer's id arguments from `tokenizer`; none (the packer's defaults, replaced by
    `sync_packer` before use) while the tokenizer waits for its vocabulary asset."""
    if tokenizer.vocabulary is None:
        return {}
    return {"start_of_sequence_id": tokenizer.cls_token_id,
            "end_of_segment_id": tokenizer.sep_token_id,
            "padding_id": tokenizer.pad_token_id}


def sync_packer(packer, tokenizer):
    """Gives `packer` the special ids of `tokenizer`'s vocabulary, which may have come after
    the packer was made (from a `.keras` file's assets, or `set_vocabulary`). ValueError
    when the tokenizer has none."""
    ids = special_ids(tokenizer) or {"start_of_sequence_id": tokenizer.cls_token_id}
    for name, value in ids.items():
        if getattr(packer, name) != value:
            setattr(packer, name, value)


def text_segments(x):
    """The 1 to 3 segments x holds (each a string, a batch of strings or a tensor), read as
    the class docstring says; ValueError/TypeError with the accepted forms otherwise."""
    if isinstance(x, dict):
        raise TypeError(f"BertPreprocessor got a dict. {ACCEPTED_FORMS}")
    if isinstance(x, tuple):
        segments = list(x)
    elif isinstance(x, list):
        segments = _list_segments(x)
    else:
        segments = [x]
    if not 1 <= len(segments) <= 3:
        raise ValueError(f"BertPreprocessor packs 1 to 3 segments, got {len(segments)}. "
                         f"{ACCEPTED_FORMS}")
    return segments


def _list_segments(items):
    """A Python list: one batch of texts, a batch of pairs/triples, or a list of tensors."""
    if not items or all(_is_text(t) for t in items):
        return [items]  # one batch (maybe empty)
    if all(isinstance(t, (list, tuple)) for t in items):
        sizes = sorted({len(t) for t in items})
        if len(sizes) > 1 or sizes[0] not in (2, 3):
            raise ValueError(
                "BertPreprocessor got a list of lists, read as a batch of pairs or triples, "
                f"but the items hold {' or '.join(map(str, sizes))} texts. {ACCEPTED_FORMS}"
            )
        leaves = [s for t in items for s in t]
        if not all(_is_text(s) for s in leaves):
            bad = next(s for s in leaves if not _is_text(s))
            raise TypeError(f"BertPreprocessor got {bad!r} ({type(bad).__name__}) in a pair; "
                            f"texts must be str or bytes. {ACCEPTED_FORMS}")
        return [[t[i] for t in items] for i in range(sizes[0])]  # pairs -> segments
    if all(_is_tensor(t) for t in items):
        return list(items)  # one tensor per segment
    kinds = sorted({type(t).__name__ for t in items})
    if not any(isinstance(t, (list, tuple)) or _is_tensor(t) for t in items):
        raise TypeError(f"BertPreprocessor got a list of {', '.join(kinds)}; texts must be str "
                        f"or bytes. {ACCEPTED_FORMS}")
    raise ValueError(f"BertPreprocessor cannot read a list that mixes {', '.join(kinds)}. "
                     f"{ACCEPTED_FORMS}")


def _is_text(x):
    return isinstance(x, (str, bytes))


def _is_tensor(x):
    return isinstance(x, (tf.Tensor, tf.RaggedTensor, np.ndarray, keras.KerasTensor))
