"""`BertConfig`: the hyper-parameters of a BERT encoder.

Field names are those of Google's original ``bert_config.json`` so that file reads without a
mapping. ``hidden_act`` is stored as what the code really computes:

* ``"gelu"``: the exact GELU, ``x * Phi(x)`` with the error function (Hugging Face's "gelu").
* ``"gelu_tanh"``: the tanh approximation. Google's ``modeling.py`` computes this one even
  though its ``bert_config.json`` files say ``"gelu"``; Hugging Face calls it ``"gelu_new"``.
* ``"relu"``, ``"tanh"``, ``"silu"``, ``"linear"``.

Each checkpoint format (`keras_bert.checkpoints.google`, `.huggingface`, `.keras_hub`) maps its
file's spelling onto these fields when reading and back when writing; this module knows no
file format.
"""

import copy
import difflib

# The encoder's inputs, with TF Hub BERT's names, in this order everywhere.
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")

ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh", "silu", "linear")

_FIELDS = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
}
_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_RATE_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob")


class BertConfigError(ValueError):
    """A BERT configuration that cannot describe a working model.

    >>> from keras_bert import BertConfig
    >>> from keras_bert.config import BertConfigError
    >>> try:
    ...     BertConfig(hidden_size=30, num_attention_heads=4)
    ... except BertConfigError as error:
    ...     print(error)
    BertConfig.hidden_size (30) must be divisible by num_attention_heads (4).
    """


class UnknownFieldError(BertConfigError, TypeError):
    """A field name `BertConfig` does not have: a misspelled keyword argument, so a
    `TypeError` as well (as for every keras_bert constructor).

    >>> from keras_bert import BertConfig
    >>> try:
    ...     BertConfig(hiden_size=64)
    ... except TypeError as error:
    ...     print(type(error).__name__, error)
    UnknownFieldError Unknown BertConfig field(s) ['hiden_size'] (did you mean 'hidden_size'?);
    known fields: [...].
    """


class BertConfig:
    """Hyper-parameters of a BERT encoder, named as in Google's ``bert_config.json``.

    Args:
        vocab_size: number of WordPiece ids.
        hidden_size: width of every layer; must be divisible by ``num_attention_heads``.
        num_hidden_layers: number of transformer blocks.
        num_attention_heads: attention heads per block.
        intermediate_size: width of the feed-forward layer.
        hidden_act: ``"gelu"`` (exact, erf), ``"gelu_tanh"`` (tanh approximation), ``"relu"``,
            ``"tanh"``, ``"silu"`` or ``"linear"``.
        hidden_dropout_prob: dropout after embeddings, attention output and feed-forward.
        attention_probs_dropout_prob: dropout on attention probabilities.
        max_position_embeddings: longest sequence the position table covers.
        type_vocab_size: number of segment ids.
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon.

    Example:

    >>> from keras_bert import BertConfig
    >>> config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
    ...                     num_attention_heads=4, intermediate_size=64)
    >>> config.head_size
    8
    >>> BertConfig.from_dict(config.to_dict()) == config
    True
    """

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(_FIELDS))
        if unknown:
            close = [m for name in unknown for m in difflib.get_close_matches(name, _FIELDS, n=1)]
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            raise UnknownFieldError(
                f"Unknown BertConfig field(s) {unknown}{hint}; known fields: {sorted(_FIELDS)}."
            )
        for name, default in _FIELDS.items():
            setattr(self, name, kwargs.get(name, default))
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self):
        """Raises `BertConfigError` naming the first field that cannot work."""
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BertConfigError(f"BertConfig.{name} must be a positive int, got {value!r}.")
        for name in _RATE_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise BertConfigError(f"BertConfig.{name} must be in [0, 1), got {value!r}.")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise BertConfigError(f"BertConfig.{name} must be a positive number, got {value!r}.")
        if self.hidden_size % self.num_attention_heads:
            raise BertConfigError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})."
            )
        if self.hidden_act not in ACTIVATIONS:
            raise BertConfigError(
                f"BertConfig.hidden_act {self.hidden_act!r} is not supported; use one of "
                f"{list(ACTIVATIONS)}."
            )

    @property
    def head_size(self):
        """Width of one attention head."""
        return self.hidden_size // self.num_attention_heads

    def num_parameters(self, with_pooler=True):
        """Number of encoder weights (embeddings, blocks and, by default, the pooler)."""
        h, i = self.hidden_size, self.intermediate_size
        embeddings = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * h
        embeddings += 2 * h
        block = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 4 * h
        pooler = h * h + h if with_pooler else 0
        return embeddings + self.num_hidden_layers * block + pooler

    # ------------------------------------------------------------ plain dicts
    def to_dict(self):
        return {name: copy.deepcopy(getattr(self, name)) for name in _FIELDS}

    @classmethod
    def from_dict(cls, values):
        return cls(**values)

    def replace(self, **changes):
        """A copy with some fields changed."""
        values = self.to_dict()
        values.update(changes)
        return BertConfig(**values)

    def __eq__(self, other):
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"BertConfig({fields})"

    @classmethod
    def from_file_values(cls, path, values):
        """A config from a checkpoint file's fields (read by `keras_bert.checkpoints`): fields
        BERT does not model (``directionality``, ``pooler_*``, HF's bookkeeping) are ignored;
        errors name ``path``."""
        known = {k: v for k, v in values.items() if k in _FIELDS}
        try:
            return cls(**known)
        except BertConfigError as e:
            raise BertConfigError(f"{path}: {e}") from None

