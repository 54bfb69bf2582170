"""WordPiece vocabularies: loading `vocab.txt` and checking BERT's special tokens are there."""

import os

PAD = "[PAD]"
UNK = "[UNK]"
CLS = "[CLS]"
SEP = "[SEP]"
MASK = "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)


def load_vocabulary(vocabulary):
    """Returns the vocabulary as a list of str tokens; id = position.

    Args:
      vocabulary: a path to a `vocab.txt` (one token per line, as in BERT checkpoints), or a
        sequence of tokens.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"vocabulary file not found: {path!r}")
        with open(path, "r", encoding="utf-8") as f:
            # Like the reference's load_vocab: strip only the line end; a token may hold spaces.
            tokens = [line.rstrip("\n").rstrip("\r") for line in f]
        if tokens and tokens[-1] == "":
            tokens.pop()
        return tokens
    if isinstance(vocabulary, bytes):
        raise TypeError("vocabulary must be a path or a list of tokens, got bytes")
    tokens = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in vocabulary]
    return tokens


def check_vocabulary(tokens, required=SPECIAL_TOKENS):
    """Raises ValueError naming every required special token missing from `tokens`."""
    if not tokens:
        raise ValueError("the vocabulary is empty")
    present = set(tokens)
    missing = [t for t in required if t not in present]
    if missing:
        raise ValueError(
            "the vocabulary lacks the special token(s) %s, which BERT needs; a BERT vocab.txt "
            "has %s" % (", ".join(missing), ", ".join(required))
        )
    if len(present) != len(tokens):
        seen, dups = set(), []
        for t in tokens:
            if t in seen:
                dups.append(t)
            seen.add(t)
        raise ValueError("the vocabulary has duplicate tokens: %r" % dups[:10])


def special_token_ids(tokens):
    """{token: id} of the BERT special tokens present in `tokens`."""
    index = {t: i for i, t in enumerate(tokens)}
    return {t: index[t] for t in SPECIAL_TOKENS if t in index}
