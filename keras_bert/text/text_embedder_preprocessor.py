"""`BertTextEmbedderPreprocessor`: texts, or columns of texts, -> one packed sequence per text."""

import keras
import tensorflow as tf

from keras_bert import checks
from keras_bert.checkpoints.sentence_transformers import METADATA_KEY
from keras_bert.config import INPUT_NAMES
from keras_bert.presets.preset_loader import text_preset
from keras_bert.text.packer import checked_seq_length
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.raw_inputs import COLUMNS
from keras_bert.text.tokenizer import BertTokenizer

DEFAULT_SEQ_LENGTH = 256  # keras-hub's, for embedding models; a preset may say its own


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedderPreprocessor(BertPreprocessor):
    """Packs each text on its own (``[CLS] text [SEP]``), for `BertTextEmbedder`.

    A batch of texts gives ``[batch, seq_length]`` inputs. Columns of texts, as an embedder
    trains on them, give ``[batch, columns, seq_length]``: a tuple ``(anchors, positives)`` or
    ``(anchors, positives, negatives)`` of batches, or a list of pairs (triples)
    ``[[anchor, positive], ...]``; each text is still packed alone, never as the segment of a
    pair (`keras_bert.text.raw_inputs`, the ``"columns"`` form). Labels and sample weights
    pass through. Texts longer than ``seq_length`` are cut to it, as sentence-transformers
    cuts them at its ``max_seq_length``.

    Args: as `BertPreprocessor`'s; ``seq_length`` defaults to 256. ``from_preset`` takes the
    preset's ``max_seq_length`` when it is a sentence-transformers model (256 for
    ``minilm_l6``), else 256.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat", "dog", "sat"]
    >>> preprocessor = BertTextEmbedderPreprocessor(vocab, seq_length=5)
    >>> preprocessor(["a cat sat"])["input_word_ids"].numpy()
    array([[2, 5, 6, 8, 3]], dtype=int32)
    >>> pairs = preprocessor((["a cat"], ["a dog"]))  # (anchors, positives)
    >>> pairs["input_word_ids"].numpy()
    array([[[2, 5, 6, 3, 0],
            [2, 5, 7, 3, 0]]], dtype=int32)
    """

    input_form = COLUMNS  # what it reads: keras_bert.text.raw_inputs

    def __init__(self, tokenizer, seq_length=DEFAULT_SEQ_LENGTH, truncator="round_robin",
                 do_lower_case=True, **kwargs):
        super().__init__(tokenizer, seq_length=seq_length, truncator=truncator,
                         do_lower_case=do_lower_case, **kwargs)

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        columns = self.read_inputs(x)  # 1 to 3 tf.string tensors [batch] (or scalars)
        if len(columns) == 1:
            out = self._pack_texts(columns, seq_length)
        else:
            stacked = tf.stack(columns, axis=-1)  # [batch, columns]
            packed = self._pack_texts((tf.reshape(stacked, [-1]),), seq_length)
            shape = tf.concat([tf.shape(stacked), [-1]], axis=0)
            out = {k: tf.reshape(v, shape) for k, v in packed.items()}  # [batch, columns, seq]
            out = {k: tf.ensure_shape(v, stacked.shape.concatenate(packed[k].shape[-1:]))
                   for k, v in out.items()}
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        columns = self.read_inputs(x)
        seq_length = checked_seq_length(self.seq_length if seq_length is None else seq_length,
                                        1, where=type(self).__name__)
        shape = tuple(columns[0].shape) + ((len(columns),) if len(columns) > 1 else ()) + (
            seq_length,)
        out = {name: keras.KerasTensor(shape, dtype="int32") for name in INPUT_NAMES}
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    @classmethod
    def from_preset(cls, preset, seq_length=None, truncator="round_robin", do_lower_case=None,
                    **kwargs):
        """The preprocessor of a preset: its vocabulary and casing, and ``seq_length`` its
        ``max_seq_length`` when it is a sentence-transformers model (else 256).

        `kwargs`: Keras layer arguments (`name`, ...); others raise TypeError.
        """
        checks.check_layer_kwargs(
            f"{cls.__name__}.from_preset", kwargs, checks.keyword_parameters(cls.from_preset))
        loaded = text_preset(preset)
        if seq_length is None:
            seq_length = preset_seq_length(loaded.metadata)
        tokenizer = BertTokenizer.from_preset(loaded.preset, do_lower_case=do_lower_case)
        return cls(tokenizer, seq_length=seq_length, truncator=truncator, **kwargs)


def preset_seq_length(metadata):
    """The sequence length a preset's embedding model reads (sentence-transformers'
    ``max_seq_length``), or `DEFAULT_SEQ_LENGTH`."""
    description = metadata.get(METADATA_KEY) or {}
    return description.get("max_seq_length") or DEFAULT_SEQ_LENGTH
