"""The tokenizer files of a Hugging Face BERT directory, for `keras_bert.checkpoints.huggingface`:
``vocab.txt``, ``tokenizer_config.json`` and ``tokenizer.json``.

transformers 5 saves a BERT tokenizer as ``tokenizer.json`` and ``tokenizer_config.json`` only
(no ``vocab.txt``): the vocabulary is then the WordPiece model of ``tokenizer.json``
(`read_tokenizer_json`, the one reader of that file, which the ``hf://`` route uses as much as
a local directory), and the casing comes from ``tokenizer_config.json`` (``do_lower_case``) and
the ``BertNormalizer`` of ``tokenizer.json`` (``lowercase``), which must agree.
"""

import os

from keras_bert import storage
from keras_bert.checkpoints import casing
from keras_bert.checkpoints.common import CheckpointError, read_json_object
from keras_bert.vocab import load_vocabulary

VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_FILE = "tokenizer.json"


class TokenizerJson:
    """What keras_bert reads of a Hugging Face ``tokenizer.json`` (`read_tokenizer_json`):
    ``tokens`` (the WordPiece vocabulary, by id), and the ``BertNormalizer``'s ``lowercase``
    and ``strip_accents`` (None where it does not say).

    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> with open(path, "w") as f:
    ...     json.dump({"normalizer": {"type": "BertNormalizer", "lowercase": True},
    ...                "model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "the": 2,
    ...                                                         "[UNK]": 1}}}, f)
    >>> tokenizer = read_tokenizer_json(path)
    >>> tokenizer.tokens, tokenizer.lowercase, tokenizer.strip_accents
    (['[PAD]', '[UNK]', 'the'], True, None)
    """

    def __init__(self, path, tokens, lowercase=None, strip_accents=None):
        self.path, self.tokens = path, tokens
        self.lowercase, self.strip_accents = lowercase, strip_accents


def read_tokenizer_json(path):
    """The `TokenizerJson` of a Hugging Face ``tokenizer.json``: a WordPiece model with BERT's
    ``##`` continuation, its ids 0..n-1. Anything else (a BPE or Unigram tokenizer, another
    prefix, gaps in the ids) is a `CheckpointError` naming the file and what it holds."""
    values = read_json_object(path, "Hugging Face tokenizer file")
    model = values.get("model")
    kind = model.get("type") if isinstance(model, dict) else None
    if kind != "WordPiece":
        raise CheckpointError(
            f"{path}: a {kind or 'typeless'} tokenizer, not WordPiece; keras_bert's "
            "BertTokenizer reads BERT's WordPiece vocabularies only. Give the directory the "
            f"model's WordPiece {VOCAB_FILE}, or remove {TOKENIZER_FILE} to load the "
            "weights alone.")
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise CheckpointError(f"{path}: its WordPiece model continues words with {prefix!r}; "
                              "keras_bert's BertTokenizer takes BERT's '##'.")
    pieces = model.get("vocab")
    if not isinstance(pieces, dict) or not pieces:
        raise CheckpointError(f'{path}: its WordPiece model has no "vocab" object.')
    by_id = sorted(pieces.items(), key=lambda item: item[1])
    ids = [i for _, i in by_id]
    if ids != list(range(len(by_id))):
        gap = next(n for n, i in enumerate(ids) if i != n)
        raise CheckpointError(f"{path}: the WordPiece ids are not 0..{len(by_id) - 1} (no token "
                              f"has id {gap}).")
    normalizer = values.get("normalizer")
    lowercase = strip_accents = None
    if isinstance(normalizer, dict) and normalizer.get("type") == "BertNormalizer":
        lowercase, strip_accents = normalizer.get("lowercase"), normalizer.get("strip_accents")
    return TokenizerJson(path, [token for token, _ in by_id], lowercase, strip_accents)


def _tokenizer_json(directory):
    """The directory's `TokenizerJson`, or None when it has no ``tokenizer.json``."""
    path = os.path.join(directory, TOKENIZER_FILE)
    return read_tokenizer_json(path) if storage.isfile(path) else None


def recorded_casing(directory):
    """``[(what, do_lower_case)]`` from ``tokenizer_config.json`` (``do_lower_case``) and
    ``tokenizer.json`` (its ``BertNormalizer``'s ``lowercase``), where they say.

    keras_bert's tokenizer strips accents exactly when it lower-cases (BERT's rule, and
    transformers' when ``strip_accents`` is unset): a file that sets ``strip_accents`` the
    other way is a `CheckpointError`, since the ids would differ from transformers'."""
    sources = []
    path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
    if storage.isfile(path):
        values = read_json_object(path, "Hugging Face tokenizer config")
        _check_accents(path, values.get("do_lower_case"), values.get("strip_accents"))
        sources.append(casing.recorded(path, "do_lower_case", values.get("do_lower_case")))
    tokenizer = _tokenizer_json(directory)
    if tokenizer is not None:
        _check_accents(tokenizer.path, tokenizer.lowercase, tokenizer.strip_accents)
        sources.append(casing.recorded(f"{tokenizer.path} (BertNormalizer)", "lowercase",
                                       tokenizer.lowercase))
    return [source for source in sources if source is not None]


def _check_accents(path, lowercase, strip_accents):
    if strip_accents is None or lowercase is None or bool(strip_accents) == bool(lowercase):
        return
    raise CheckpointError(
        f"{path}: strip_accents={strip_accents} with lower-casing {lowercase}: keras_bert's "
        "BertTokenizer strips accents exactly when it lower-cases (as Google's BERT does), "
        "so its ids would differ from this tokenizer's. Pass do_lower_case= to load it "
        "with keras_bert's rule anyway.")


def vocabulary(directory):
    """``(vocab.txt, None)`` when the directory has one, else ``(None, tokens)`` from
    ``tokenizer.json``'s WordPiece model, else ``(None, None)``. With both files, their
    tokens must be the same (transformers reads ``tokenizer.json``)."""
    path = os.path.join(directory, VOCAB_FILE)
    tokenizer = _tokenizer_json(directory)
    if storage.isfile(path):
        if tokenizer is not None and load_vocabulary(path) != tokenizer.tokens:
            raise CheckpointError(
                f"{directory}: {VOCAB_FILE} and {TOKENIZER_FILE} hold different vocabularies "
                f"({len(load_vocabulary(path))} and {len(tokenizer.tokens)} tokens); "
                "transformers reads tokenizer.json. Remove the one that does not belong.")
        return path, None
    return None, (tokenizer.tokens if tokenizer is not None else None)


def vocab_file(directory):
    """Where the vocabulary is: ``vocab.txt``, else ``tokenizer.json`` when only it is there."""
    path = os.path.join(directory, VOCAB_FILE)
    tokenizer = os.path.join(directory, TOKENIZER_FILE)
    return tokenizer if not storage.isfile(path) and storage.isfile(tokenizer) else path


# ---- writing ------------------------------------------------------------------------------
SPECIAL_TOKENS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]",
                  "sep_token": "[SEP]", "mask_token": "[MASK]"}


def tokenizer_json(tokens, do_lower_case):
    """The ``tokenizer.json`` of BERT's WordPiece tokenizer over ``tokens`` (id = position),
    as transformers 5 saves a ``BertTokenizer``: ``BertNormalizer`` (lower-casing and accent
    stripping as ``do_lower_case`` says, Chinese characters split), ``BertPreTokenizer``,
    ``[CLS] A [SEP] (B [SEP])`` with segment ids 0 and 1, and the special tokens."""
    ids = {token: i for i, token in enumerate(tokens)}
    missing = [t for t in ("[UNK]", "[CLS]", "[SEP]") if t not in ids]
    if missing:
        raise CheckpointError(f"The vocabulary has no {', '.join(missing)}: transformers' "
                              "BERT tokenizer needs them.")

    def special(token, type_id):
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    added = [{"id": ids[token], "content": token, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for token in SPECIAL_TOKENS.values() if token in ids]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": sorted(added, key=lambda entry: entry["id"]),
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None,
                       "lowercase": bool(do_lower_case)},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
            "pair": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0),
                     sequence("B", 1), special("[SEP]", 1)],
            "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]}
                               for token in ("[CLS]", "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }


def write_tokenizer(directory, vocab_path, do_lower_case, model_max_length):
    """Writes the tokenizer files transformers' ``AutoTokenizer`` reads into ``directory``:
    ``vocab.txt`` (a copy of ``vocab_path``), ``tokenizer.json`` and ``tokenizer_config.json``
    (``BertTokenizer``, ``do_lower_case``, ``model_max_length``). ``do_lower_case`` None: the
    vocabulary decides (`keras_bert.checkpoints.casing`)."""
    tokens = load_vocabulary(vocab_path)
    if do_lower_case is None:
        do_lower_case = casing.resolve([], tokens=tokens)
    storage.copy(vocab_path, os.path.join(directory, VOCAB_FILE))
    storage.write_json(os.path.join(directory, TOKENIZER_FILE),
                       tokenizer_json(tokens, do_lower_case))
    storage.write_json(os.path.join(directory, TOKENIZER_CONFIG_FILE), {
        "tokenizer_class": "BertTokenizer", "do_lower_case": bool(do_lower_case),
        "strip_accents": None, "tokenize_chinese_chars": True,
        "model_max_length": model_max_length, **SPECIAL_TOKENS})
