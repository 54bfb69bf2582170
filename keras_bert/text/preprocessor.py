"""`BertPreprocessor`: raw strings (single sentences or pairs) -> BERT model inputs, in graph."""

import keras

from keras_bert import checks
from keras_bert.text import truncation
from keras_bert.text.packer import BertPackInputs, checked_seq_length, overflowing_rows
from keras_bert.text.raw_inputs import RawInputReader, TEXTS
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.config import INPUT_NAMES

@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer, RawInputReader):
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
    tensors with Python lists or arrays: ValueError.) These forms are read by
    `keras_bert.text.raw_inputs`, the one reader of raw input, which the task models'
    ``fit``/``predict`` and the serving exports use through their preprocessor.

    Texts longer than ``seq_length`` are cut to it (with ``truncator``); an eager call that
    cuts some warns once (`keras_bert.text.truncation.TruncationWarning`), naming how many.

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
      keras_bert.checks.TaskInputError: inputs it cannot read (the message names the
        segment, the row or the type, and lists the forms): segments whose batch sizes
        differ (naming both), lists of another form, string tensors of rank 2 or more,
        batched mixed with unbatched segments, values that are not strings (numbers,
        ragged tensors, a dict). It is both a ValueError and a TypeError.
      ValueError: a bad `seq_length`/`truncator`/vocabulary.
      TypeError: unknown constructor or `from_preset` arguments.
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
    keras_bert.checks.TaskInputError: ...the batch sizes differ: texts_a has 2, texts_b has 1...
    """

    input_form = TEXTS  # what it reads: keras_bert.text.raw_inputs

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

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        out = self._pack_texts(self.read_inputs(x), seq_length)
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def _pack_texts(self, texts, seq_length=None):
        """Read text segments (`read_inputs`) -> the packed inputs, counting the texts cut
        (`keras_bert.text.truncation`)."""
        sync_packer(self.packer, self.tokenizer)
        # Room for one token of each segment, named after this class (the packer checks too).
        seq_length = checked_seq_length(self.seq_length if seq_length is None else seq_length,
                                        len(texts), where=type(self).__name__)
        segments = [self.tokenizer.tokenize(t) for t in texts]
        out = self.packer(segments, seq_length=seq_length)
        return truncation.record(overflowing_rows(segments, seq_length), seq_length, out,
                                 type(self).__name__)

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        texts = self.read_inputs(x)
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

        `kwargs`: the class's other constructor arguments (a `BertMaskedLMPreprocessor`'s
        ``max_predictions_per_seq``, ``seed``, ...) and Keras layer arguments (`name`, ...);
        others raise TypeError.
        """
        accepted = checks.keyword_parameters(cls.from_preset) + checks.keyword_parameters(
            cls.__init__, skip=("tokenizer", "do_lower_case"))
        checks.check_layer_kwargs(f"{cls.__name__}.from_preset", kwargs, accepted)
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
