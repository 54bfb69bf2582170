"""Other names of the registered presets, and did-you-mean suggestions that respect them.

The names users of the other BERT homes type map to the registered preset with the same
weights: keras-hub's preset names (``bert_base_en_uncased`` -> ``base``), TF Hub handles of
Google's BERTs and their Kaggle copies
(``https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4``,
``https://www.kaggle.com/models/tensorflow/bert/tensorFlow2/en-uncased-l-12-h-768-a-12/4``,
``kaggle://tensorflow/bert/tensorFlow2/en-uncased-l-12-h-768-a-12``), Google's own
checkpoint names (``uncased_L-12_H-768_A-12``, ``multilingual_L-12_H-768_A-12``), the Hugging
Face Hub's ids of Google's checkpoints (``google/bert_uncased_L-4_H-256_A-4``,
``bert-base-uncased``, ``google-bert/bert-base-multilingual-uncased``; an ``hf://`` handle
still downloads from the Hub) and ``bert_L<n>_H<n>`` for every small BERT, the four named ones
included (``bert_L2_H128`` -> ``tiny``). A TF Hub handle of a BERT of Google's that is not
registered is an `UnregisteredBertError` that says so.

Google's name ``uncased_L-12_H-768_A-12`` is BERT-Base of 2018 (``base``); the small BERTs'
retraining of it (``bert_L12_H768``) is named by where it sits among them: TF Hub's
``small_bert/bert_en_uncased_L-12_H-768_A-12``, the Hub's ``google/bert_uncased_L-12_H-768_A-12``.

>>> registry_name("bert_base_en_uncased"), registry_name("bert_base_en")
('base', 'base_cased')
>>> registry_name("https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-4_H-512_A-8/2")
'small'
>>> registry_name("google/bert_uncased_L-6_H-256_A-4"), registry_name("bert_L4_H256")
('bert_L6_H256', 'mini')
>>> suggestions("bert_large_uncased")
['large', 'large_wwm']
"""

import difflib
import os
import re

from keras_bert.checkpoints.common import CheckpointError
from keras_bert.presets.registry import MINIATURE_RELEASE, PRESETS, miniature_name

# keras-hub's BERT presets (keras_hub/src/models/bert/bert_presets.py): Google's checkpoints.
KERAS_HUB_NAMES = {
    "bert_tiny_en_uncased": "tiny",
    "bert_small_en_uncased": "small",
    "bert_medium_en_uncased": "medium",
    "bert_base_en_uncased": "base",
    "bert_base_en": "base_cased",
    "bert_base_zh": "base_chinese",
    "bert_base_multi": "base_multilingual",
    "bert_large_en_uncased": "large",
    "bert_large_en": "large_cased",
}
# The Hugging Face Hub's ids of Google's checkpoints (google-bert/, formerly without an
# owner); the small BERTs are google/bert_uncased_L-<n>_H-<n>_A-<n> (`_miniature`).
HF_NAMES = {
    "bert-base-uncased": "base",
    "bert-large-uncased": "large",
    "bert-base-cased": "base_cased",
    "bert-large-cased": "large_cased",
    "bert-base-multilingual-cased": "base_multilingual",
    "bert-base-multilingual-uncased": "base_multilingual_uncased",
    "bert-base-chinese": "base_chinese",
    "bert-large-uncased-whole-word-masking": "large_wwm",
    "bert-large-cased-whole-word-masking": "large_wwm_cased",
}
HF_NAMES.update({f"google-bert/{name}": preset for name, preset in list(HF_NAMES.items())})

# Google's checkpoint names (the zips' names): [wwm_|multi_]uncased|cased_L-n_H-n_A-n,
# multilingual_... (the uncased multilingual model), chinese_...
_GOOGLE_NAME = re.compile(r"^(?:(wwm|multi)_)?(uncased|cased)_l-(\d+)_h-(\d+)_a-(\d+)$")
_GOOGLE_MULTILINGUAL = re.compile(r"^multilingual_l-(\d+)_h-(\d+)_a-(\d+)$")
_GOOGLE_CHINESE = re.compile(r"^chinese_l-(\d+)_h-(\d+)_a-(\d+)$")
# The small BERTs: the Hub's google/bert_uncased_L-n_H-n_A-n and keras_bert's bert_Ln_Hn.
_HF_MINIATURE = re.compile(r"^google/bert_uncased_l-(\d+)_h-(\d+)_a-(\d+)$")
_MINIATURE = re.compile(r"^bert_l(\d+)_h(\d+)$")
# TF Hub's names (bert_en_uncased_L-12_H-768_A-12, bert_en_wwm_cased_..., bert_multi_cased_...,
# bert_zh_...) and Kaggle's variations of them (en-uncased-l-12-h-768-a-12), "-" read as "_".
_TFHUB_NAME = re.compile(
    r"^(?:bert_)?(en|multi|zh)_(?:(wwm)_)?(?:(uncased|cased)_)?l_(\d+)_h_(\d+)_a_(\d+)$")
_TFHUB_URL = re.compile(r"^(?:https?://)?tfhub\.dev/tensorflow/(small_bert/)?([^/]+)(?:/\d+)?/?$",
                        re.IGNORECASE)
_KAGGLE_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?kaggle\.com/models/([^/]+)/([^/]+)"
    r"(?:/frameworks)?/([^/]+)(?:/variations)?/([^/]+)(?:(?:/versions)?/(\d+))?/?$",
    re.IGNORECASE)


class UnregisteredBertError(CheckpointError):
    """A TF Hub or Kaggle handle of one of Google's BERTs that is not a registered preset.

    >>> try:
    ...     registry_name("https://tfhub.dev/tensorflow/small_bert/bert_en_cased_L-6_H-256_A-4/2")
    ... except UnregisteredBertError as error:
    ...     print(error)
    https://tfhub.dev/.../bert_en_cased_L-6_H-256_A-4/2 is Google's cased_L-6_H-256_A-4, ...
    """


def _key(variant, wwm, casing, layers, hidden, heads):
    """What tells Google's checkpoints apart: (language, whole-word masking, casing, L, H, A)."""
    if variant == "zh":
        casing = None  # the Chinese model has one casing (it lowercases nothing it cannot)
    return (variant, bool(wwm), casing, int(layers), int(hidden), int(heads))


def _google_key(stem):
    """The key of a Google checkpoint name (``wwm_uncased_L-24_H-1024_A-16``), or None."""
    stem = stem.lower()
    match = _GOOGLE_NAME.match(stem)
    if match:
        prefix, casing, layers, hidden, heads = match.groups()
        variant = "multi" if prefix == "multi" else "en"
        return _key(variant, prefix == "wwm", casing, layers, hidden, heads)
    match = _GOOGLE_MULTILINGUAL.match(stem)
    if match:
        return _key("multi", False, "uncased", *match.groups())
    match = _GOOGLE_CHINESE.match(stem)
    if match:
        return _key("zh", False, None, *match.groups())
    return None


def _registered_keys(miniatures=False):
    """{key: registered name} of Google's checkpoints; a key two releases share (BERT-Base,
    uncased) names the first registered (2018's ``base``), or with ``miniatures`` the small
    BERTs' own."""
    keys = {}
    for spec in PRESETS.values():
        if spec.source == "google" and spec.path:
            stem = os.path.splitext(os.path.basename(spec.path))[0]
            key = _google_key(stem)
            if miniatures and spec.path.startswith(MINIATURE_RELEASE + "/"):
                keys[key] = spec.name
            else:
                keys.setdefault(key, spec.name)
    return keys


def _tfhub_key(name):
    match = _TFHUB_NAME.match(name.lower().replace("-", "_"))
    if not match:
        return None
    variant, wwm, casing, layers, hidden, heads = match.groups()
    if variant == "en" and casing is None:
        return None
    return _key(variant, wwm, casing, layers, hidden, heads)


def _google_stem(key):
    variant, wwm, casing, layers, hidden, heads = key
    size = f"L-{layers}_H-{hidden}_A-{heads}"
    if variant == "zh":
        return f"chinese_{size}"
    return f"{'wwm_' if wwm else 'multi_' if variant == 'multi' else ''}{casing}_{size}"


def _from_key(key, handle, miniatures=False):
    registered = _registered_keys(miniatures)
    if key in registered:
        return registered[key]
    variant, wwm, casing = key[:3]
    alike = [name for k, name in _registered_keys().items() if k[:3] == (variant, wwm, casing)]
    raise UnregisteredBertError(
        f"{handle} is Google's {_google_stem(key)}, which is not a registered preset (Google "
        f"released no such model that keras_bert knows of). Registered of that kind: "
        f"{', '.join(alike) or 'none'}; keras_bert.presets() lists them all.")


def _miniature(lowered):
    """The small BERT a Hub id (``google/bert_uncased_L-4_H-256_A-4``) or a
    ``bert_L4_H256`` names, when it is one of them; else None."""
    match = _HF_MINIATURE.match(lowered)
    if match:
        layers, hidden, heads = map(int, match.groups())
        if heads != hidden // 64:
            return None
    else:
        match = _MINIATURE.match(lowered)
        if not match:
            return None
        layers, hidden = map(int, match.groups())
    name = miniature_name(layers, hidden)
    spec = PRESETS.get(name)
    return name if spec is not None and spec.path.startswith(MINIATURE_RELEASE + "/") else None


def kaggle_tensorflow_bert(owner, model, variation):
    """Whether a Kaggle model is TF Hub's BERT (``tensorflow/bert``: SavedModels, which map to
    the registered presets rather than download)."""
    return owner.lower() == "tensorflow" and model.lower() == "bert" and bool(variation)


def registry_name(name):
    """The registered preset another name stands for, or None when ``name`` is none of them.

    Raises `UnregisteredBertError` for a handle of one of Google's BERTs that is not
    registered.
    """
    lowered = name.strip().lower()
    if lowered in KERAS_HUB_NAMES:
        return KERAS_HUB_NAMES[lowered]
    if lowered in HF_NAMES:
        return HF_NAMES[lowered]
    miniature = _miniature(lowered)
    if miniature is not None:
        return miniature
    key = _google_key(lowered)
    if key is not None and key in _registered_keys():
        return _registered_keys()[key]
    match = _TFHUB_URL.match(name.strip())
    if match:
        key = _tfhub_key(match.group(2))
        if key is None:
            raise CheckpointError(
                f"{name} is not a TF Hub BERT encoder that keras_bert knows (expected "
                "tensorflow/bert_en_uncased_L-12_H-768_A-12 and the like; a preprocessing "
                "model has no weights to load).")
        return _from_key(key, name, miniatures=bool(match.group(1)))
    match = _KAGGLE_URL.match(name.strip())
    parts = None
    if match:
        parts = match.groups()[:4]
    elif lowered.startswith("kaggle://"):
        parts = (name.strip()[len("kaggle://"):].split("/") + [""] * 4)[:4]
    if parts and kaggle_tensorflow_bert(parts[0], parts[1], parts[3]):
        key = _tfhub_key(parts[3])
        if key is None:
            raise CheckpointError(f"{name} is not one of TF Hub's BERT encoders on Kaggle "
                                  "(expected a variation like en-uncased-l-12-h-768-a-12).")
        return _from_key(key, name)
    return None


# ------------------------------------------------------------------------ suggestions
_SIZES = ("tiny", "mini", "small", "medium", "base", "large")


def _features(name):
    """(size, casing, language, whole-word masking) a name says, None where it says nothing."""
    lowered = name.lower()
    tokens = set(re.split(r"[^a-z0-9]+", lowered))
    size = next((s for s in _SIZES if s in tokens), None)
    casing = "uncased" if "uncased" in lowered else "cased" if "cased" in lowered else None
    language = ("multi" if tokens & {"multi", "multilingual"} or "multilingual" in lowered
                else "zh" if tokens & {"zh", "chinese"} else None)
    wwm = True if ("wwm" in tokens or "whole" in lowered) else None
    return size, casing, language, wwm


def _preset_features(spec):
    if spec.source == "builtin":  # random weights: never offered for a size, casing or language
        return None, None, None, None
    size = spec.name.split("_")[0] if spec.name.split("_")[0] in _SIZES else None
    language = ("multi" if "multilingual" in spec.name else "zh" if "chinese" in spec.name
                else "en")
    return size, spec.casing, language, "wwm" in spec.name


def suggestions(name, n=3):
    """Registered presets close to ``name``: those of the size, casing, language and masking
    it names (English unless it names another language), most alike first; else the names
    most alike."""
    lowered = name.lower()
    misspelt = difflib.get_close_matches(lowered, list(KERAS_HUB_NAMES), n=1, cutoff=0.85)
    casing = _features(name)[1]
    if misspelt and casing in (None, PRESETS[KERAS_HUB_NAMES[misspelt[0]]].casing):
        # a keras-hub name misspelt: its preset first, then those like the name
        first = KERAS_HUB_NAMES[misspelt[0]]
        return [first] + [c for c in _alike(name, n) if c != first][:n - 1]
    builtin = [s.name for s in PRESETS.values() if s.source == "builtin"]
    misspelt = difflib.get_close_matches(lowered, builtin, n=1, cutoff=0.85)
    if misspelt:  # a built-in preset misspelt ("tiny_randm"): it first
        return misspelt + [c for c in _alike(name, n) if c not in misspelt][:n - 1]
    return _alike(name, n)


def _alike(name, n):
    """`suggestions` by the features ``name`` names, else by spelling."""
    lowered = name.lower()
    size, casing, language, wwm = _features(name)
    if any(f is not None for f in (size, casing, wwm)) or language:
        language = language or "en"
        candidates = []
        for spec in PRESETS.values():
            p_size, p_casing, p_language, p_wwm = _preset_features(spec)
            if (size is None or p_size == size) and (casing is None or p_casing == casing) \
                    and p_language == language and (wwm is None or p_wwm == wwm):
                candidates.append(spec.name)
        if candidates:
            # whole-word masking only first when asked for, then the most alike
            ranked = sorted(candidates, key=lambda c: (
                wwm is None and "wwm" in c, -difflib.SequenceMatcher(None, lowered, c).ratio(), c))
            return ranked[:n]
    return difflib.get_close_matches(lowered, list(PRESETS), n=n, cutoff=0.5)
