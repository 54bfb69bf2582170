"""`BertTokenizer`: raw strings -> WordPiece ids inside the TensorFlow graph."""

import os
import warnings

import keras
import tensorflow as tf

from keras_bert import checks, storage
from keras_bert import vocab as vocab_lib
from keras_bert.presets.preset_loader import text_preset
from keras_bert.text import normalization

MAX_CHARS_PER_WORD = 2**20


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenizer(keras.layers.Layer):
    """BERT's tokenizer (basic tokenization + WordPiece) as a Keras layer of graph ops.

    Gives the same ids as google-research/bert's `FullTokenizer` and Hugging Face's Python
    `BertTokenizer`: control characters dropped, whitespace normalised, CJK ideographs and
    punctuation split off, and with `do_lower_case` Python's `str.lower()` + NFD + accent
    stripping; a word longer than `max_chars_per_word` characters becomes `[UNK]`, and so does
    a word WordPiece cannot cover. Invalid UTF-8 bytes are dropped, as the reference's
    `decode("utf-8", "ignore")` does. Special tokens written in the text (`"[CLS]"`) are plain
    text, as in the original BERT.

    Args:
      vocabulary: path to a BERT `vocab.txt` (UTF-8; a byte-order mark is dropped), or a list
        of tokens (id = position). It must hold `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and
        `[MASK]`, no token twice, none over 256 UTF-8 bytes (after a `##`) or with a NUL.
        None makes a tokenizer without one yet (as `from_config` does), to be given one by
        `set_vocabulary` or `load_assets`; using it before raises ValueError saying so.
      do_lower_case: lower-case and strip accents (uncased models) or not (cased models).
      max_chars_per_word: words longer than this (in characters, 1 to 2**20) become `[UNK]`.

    Inputs: a string tensor of any shape (a scalar, a batch [batch], [batch, n], ...), or
    str/bytes or (nested, rectangular) lists of them; the ids are ragged int32 with one
    more dimension, [..., (tokens)].

    The vocabulary is a file asset, as in keras-hub's `WordPieceTokenizer`: `get_config`
    does not hold it; a `.keras` file keeps it as `vocabulary.txt` in its assets
    (`save_assets`/`load_assets`). An older config that still holds a `"vocabulary"` list
    loads as before.

    Raises:
      ValueError: a bad vocabulary (missing special token, duplicates, a token WordPiece
        cannot hold, a file that is not UTF-8: naming the file and line), bad arguments
        (`do_lower_case` not a bool, `max_chars_per_word` not an int in range), nested lists
        of different lengths; in `detokenize`, ids outside [0, vocabulary_size) or of rank 0.
      TypeError: inputs that are not strings (numbers, ragged tensors), ids that are not
        integers, unknown constructor or `from_preset` arguments.
      tf.errors.InvalidArgumentError: `detokenize` inside a graph with ids outside the
        vocabulary (the check runs before the look-up).

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick",
    ...          "fox", "."]
    >>> tokenizer = BertTokenizer(vocab)
    >>> tokenizer(["The quick fox.", "Fox!"]).to_list()
    [[5, 6, 7, 8, 9], [8, 1]]
    >>> tokenizer.detokenize([[5, 6, 7, 8, 9]]).numpy()
    array([b'the quick fox .'], dtype=object)
    """

    def __init__(self, vocabulary=None, do_lower_case=True, max_chars_per_word=200, **kwargs):
        checks.check_layer_kwargs(
            "BertTokenizer", kwargs, checks.keyword_parameters(BertTokenizer.__init__)
        )
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        # Strings in, ids out: no float casting of inputs; no weights to build.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        self.set_vocabulary(vocabulary)
        self.do_lower_case = checks.boolean("do_lower_case", do_lower_case)
        self.max_chars_per_word = checks.integer(
            "max_chars_per_word", max_chars_per_word, minimum=1, maximum=MAX_CHARS_PER_WORD
        )
        normalization.patterns()  # build the character classes now, outside any tracing

    # ---- vocabulary ---------------------------------------------------------------------
    def set_vocabulary(self, vocabulary):
        """Sets (or with None, clears) the vocabulary: a `vocab.txt` path or a list of tokens,
        checked as the constructor checks it."""
        self._wordpiece = None
        if vocabulary is None:
            self.vocabulary = None
            self._ids = None
            self.special_token_ids = None
            return
        tokens = vocab_lib.load_vocabulary(vocabulary)
        path = vocabulary if isinstance(vocabulary, (str, os.PathLike)) else None
        vocab_lib.check_vocabulary(tokens, path=path)
        self.vocabulary = tokens
        self._ids = {t: i for i, t in enumerate(tokens)}
        self.special_token_ids = vocab_lib.special_token_ids(tokens)

    def _tokens(self):
        return vocab_lib.require(self.vocabulary, "BertTokenizer")

    def save_assets(self, dir_path):
        """Writes the vocabulary to `dir_path`/vocabulary.txt (Keras calls it when saving a
        `.keras` file); a tokenizer without one writes nothing."""
        if self.vocabulary is not None:
            vocab_lib.write_vocabulary(self.vocabulary,
                                       os.path.join(dir_path, vocab_lib.ASSET_FILE))

    def load_assets(self, dir_path):
        """Reads the vocabulary `save_assets` wrote (Keras calls it when loading a `.keras`
        file). Without that file (a file saved before the vocabulary was an asset, whose
        config held it) the vocabulary stays as it is."""
        path = os.path.join(dir_path, vocab_lib.ASSET_FILE) if dir_path else None
        if path and storage.isfile(path):
            self.set_vocabulary(path)

    @property
    def vocabulary_size(self):
        return len(self._tokens())

    def get_vocabulary(self):
        return list(self._tokens())

    def token_to_id(self, token):
        self._tokens()
        if token not in self._ids:
            raise ValueError(f"{token!r} is not in the vocabulary")
        return self._ids[token]

    def id_to_token(self, token_id):
        return self._tokens()[
            checks.integer("token_id", token_id, minimum=0, maximum=self.vocabulary_size - 1)
        ]

    def _special(self, token):
        self._tokens()
        return self.special_token_ids[token]

    @property
    def pad_token_id(self):
        return self._special(vocab_lib.PAD)

    @property
    def unk_token_id(self):
        return self._special(vocab_lib.UNK)

    @property
    def cls_token_id(self):
        return self._special(vocab_lib.CLS)

    @property
    def sep_token_id(self):
        return self._special(vocab_lib.SEP)

    @property
    def mask_token_id(self):
        return self._special(vocab_lib.MASK)

    def _wordpiece_tokenizer(self):
        if self._wordpiece is None:
            import tensorflow_text as tf_text

            with tf.init_scope():
                self._wordpiece = tf_text.FastWordpieceTokenizer(
                    vocab=self._tokens(),
                    suffix_indicator="##",
                    # Words are limited in characters below; every byte length passes here.
                    max_bytes_per_word=4 * self.max_chars_per_word + 4,
                    token_out_type=tf.int32,
                    unknown_token=vocab_lib.UNK,
                    no_pretokenization=True,
                )
        return self._wordpiece

    # ---- tokenization -------------------------------------------------------------------
    def words(self, inputs):
        """The basic tokenization: string tensor of shape [...] -> ragged words [..., (words)]."""
        inputs = checks.string_tensor(inputs, "BertTokenizer input")
        if inputs.shape.rank == 0:
            return self.words(inputs[tf.newaxis])[0]
        words = normalization.basic_tokenize(inputs, lower_case=self.do_lower_case)
        flat = words.flat_values
        max_chars = self.max_chars_per_word

        def unk_long_words():
            too_long = tf.strings.length(flat, unit="UTF8_CHAR") > max_chars
            return tf.where(too_long, tf.constant(vocab_lib.UNK), flat)

        # Counting characters means decoding; a word can only be too long in characters if it
        # is in bytes, so batches without such words (nearly all) skip it.
        flat = tf.cond(
            tf.reduce_any(tf.strings.length(flat) > max_chars), unk_long_words, lambda: flat
        )
        return words.with_flat_values(flat)

    def tokenize(self, inputs, per_word=False):
        """Strings of shape [batch] (or a scalar) -> ragged int32 ids [batch, (tokens)].

        With `per_word=True` the ids keep the words: [batch, (words), (pieces)], the input of
        whole-word masking.
        """
        per_word = checks.boolean("per_word", per_word)
        self._tokens()
        words = self.words(inputs)
        ids = self._wordpiece_tokenizer().tokenize(words)  # [..., (words), (pieces)]
        if per_word:
            return ids
        return ids.merge_dims(-2, -1)

    def call(self, inputs):
        return self.tokenize(inputs)

    def detokenize(self, ids):
        """Ids [..., tokens] (dense or ragged) -> strings [...], pieces joined as in HF/BERT."""
        ids = checks.integer_tensor(ids, "detokenize ids")
        if ids.shape.rank == 0:
            raise ValueError("detokenize takes ids of shape [..., tokens], got a scalar")
        tokens = self._tokens()
        in_vocab = checks.values_in(
            ids, "ids", 0, len(tokens), "BertTokenizer.detokenize", " (the vocabulary)"
        )
        ids = checks.after(in_vocab, tf.cast(ids, tf.int32))  # (gather takes no uint8 ids)
        tokens = tf.gather(tf.constant(tokens), ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    def compute_output_spec(self, inputs):
        shape = tuple(inputs.shape) + (None,)
        return keras.KerasTensor(shape, dtype="int32", ragged=True)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "do_lower_case": self.do_lower_case,
                "max_chars_per_word": self.max_chars_per_word,
            }
        )
        return config

    @classmethod
    def from_preset(cls, preset, do_lower_case=None, **kwargs):
        """The tokenizer of a preset (a name in the registry or a preset directory).

        `do_lower_case` defaults to the preset's casing; giving a different one warns, since
        the ids then no longer match what the model was trained on. `kwargs`: the other
        constructor arguments (`max_chars_per_word`, `name`, ...); others raise TypeError.
        """
        accepted = checks.keyword_parameters(BertTokenizer.from_preset)
        accepted += checks.keyword_parameters(BertTokenizer.__init__, skip=("vocabulary",))
        checks.check_layer_kwargs("BertTokenizer.from_preset", kwargs, accepted)
        loaded = text_preset(preset)
        preset_lower = bool(loaded.do_lower_case)
        if do_lower_case is None:
            do_lower_case = preset_lower
        elif bool(do_lower_case) != preset_lower:
            warnings.warn(
                f"do_lower_case={do_lower_case} disagrees with preset {preset!r}, which is "
                f"{'uncased' if preset_lower else 'cased'} (do_lower_case={preset_lower}); "
                "the ids will not match what the model was trained on.",
                stacklevel=2,
            )
        return loaded.load_tokenizer(cls, do_lower_case=do_lower_case, **kwargs)
