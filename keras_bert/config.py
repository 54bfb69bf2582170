"""`BertConfig`: the hyper-parameters of a BERT encoder.

Field names are those of Google's original ``bert_config.json`` so that file reads without a
mapping. ``hidden_act`` is stored as what the code really computes:

* ``"gelu"``: the exact GELU, ``x * Phi(x)`` with the error function (Hugging Face's "gelu").
* ``"gelu_tanh"``: the tanh approximation. Google's ``modeling.py`` computes this one even
  though its ``bert_config.json`` files say ``"gelu"``; Hugging Face calls it ``"gelu_new"``.
* ``"relu"``, ``"tanh"``, ``"silu"``, ``"linear"``.

Each reader maps its format's spelling onto these, and each writer maps back.
"""

import copy
import difflib
import json
import os

ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh", "silu", "linear")

# What each file format's "hidden_act" string really computes.
_GOOGLE_ACT_TO_OURS = {
    "gelu": "gelu_tanh",  # google-research/bert modeling.gelu is the tanh approximation.
    "gelu_exact": "gelu",  # written by us for erf-GELU models; Google's code cannot run it.
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
    "silu": "silu",
}
_OURS_TO_GOOGLE_ACT = {"gelu_tanh": "gelu", "gelu": "gelu_exact"}

_HF_ACT_TO_OURS = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
    "linear": "linear",
}
_OURS_TO_HF_ACT = {"gelu": "gelu", "gelu_tanh": "gelu_new"}

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
    """A BERT configuration that cannot describe a working model."""


class UnknownFieldError(BertConfigError, TypeError):
    """A field name `BertConfig` does not have: a misspelled keyword argument, so a
    `TypeError` as well (as for every keras_bert constructor)."""


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

    # ------------------------------------------------- Google bert_config.json
    @classmethod
    def from_bert_config_json(cls, path):
        """Reads Google's ``bert_config.json`` ("gelu" there means the tanh approximation)."""
        values = _read_json(path)
        act = values.get("hidden_act", "gelu")
        if act not in _GOOGLE_ACT_TO_OURS:
            raise BertConfigError(
                f"{path}: hidden_act {act!r} is not one Google's modeling.py computes "
                f"({sorted(_GOOGLE_ACT_TO_OURS)})."
            )
        values["hidden_act"] = _GOOGLE_ACT_TO_OURS[act]
        # Fields of the original file we do not model (e.g. "directionality" in multilingual
        # and Chinese checkpoints, pooler_* in some) are ignored.
        return cls._from_file_values(path, values)

    def to_bert_config_json(self):
        values = self.to_dict()
        values["hidden_act"] = _OURS_TO_GOOGLE_ACT.get(self.hidden_act, self.hidden_act)
        return values

    def save_bert_config_json(self, path):
        _write_json(path, self.to_bert_config_json())

    # ------------------------------------------------- Hugging Face config.json
    @classmethod
    def from_hf_config(cls, path_or_dict):
        """Reads a Hugging Face ``config.json`` (``"gelu"`` there is the exact erf form)."""
        if isinstance(path_or_dict, dict):
            values, path = dict(path_or_dict), "<dict>"
        else:
            values, path = _read_json(path_or_dict), path_or_dict
        model_type = values.get("model_type", "bert")
        if model_type != "bert":
            raise BertConfigError(f"{path}: model_type is {model_type!r}, not 'bert'.")
        position_type = values.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise BertConfigError(
                f"{path}: position_embedding_type {position_type!r} is not supported "
                "(BERT uses 'absolute')."
            )
        act = values.get("hidden_act", "gelu")
        if act not in _HF_ACT_TO_OURS:
            raise BertConfigError(
                f"{path}: hidden_act {act!r} is not supported ({sorted(_HF_ACT_TO_OURS)})."
            )
        values["hidden_act"] = _HF_ACT_TO_OURS[act]
        return cls._from_file_values(path, values)

    def to_hf_config(self):
        values = self.to_dict()
        values["hidden_act"] = _OURS_TO_HF_ACT.get(self.hidden_act, self.hidden_act)
        values.update(
            {
                "model_type": "bert",
                "architectures": ["BertModel"],
                "position_embedding_type": "absolute",
                "pad_token_id": 0,
            }
        )
        return values

    def save_hf_config(self, path):
        _write_json(path, self.to_hf_config())

    @classmethod
    def _from_file_values(cls, path, values):
        known = {k: v for k, v in values.items() if k in _FIELDS}
        try:
            return cls(**known)
        except BertConfigError as e:
            raise BertConfigError(f"{path}: {e}") from None


def _read_json(path):
    import tensorflow as tf  # tf.io.gfile: local paths, gs://, ram://

    path = os.fspath(path)
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"Config file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        try:
            values = json.loads(f.read().decode("utf-8"))
        except json.JSONDecodeError as e:
            raise BertConfigError(f"{path}: not valid JSON ({e}).") from None
    if not isinstance(values, dict):
        raise BertConfigError(f"{path}: expected a JSON object, got {type(values).__name__}.")
    return values


def _write_json(path, values):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
