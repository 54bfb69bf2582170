"""WordPiece vocabularies: loading `vocab.txt` and checking BERT's special tokens are there;
writing one (`write_vocabulary`, and `vocabulary_file` for writers that take a path)."""

import contextlib
import io
import os
import tempfile

PAD = "[PAD]"
UNK = "[UNK]"
CLS = "[CLS]"
SEP = "[SEP]"
MASK = "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
SUFFIX_INDICATOR = "##"
# tensorflow-text's FastWordpieceTokenizer takes tokens of at most this many UTF-8 bytes
# (not counting the "##" of a suffix) and none with a NUL character.
MAX_TOKEN_BYTES = 256
# The file a text layer's vocabulary is saved to in a `.keras` archive's assets
# (`save_assets`/`load_assets`), as keras-hub's WordPiece tokenizers name it.
ASSET_FILE = "vocabulary.txt"


def load_vocabulary(vocabulary):
    """Returns the vocabulary as a list of str tokens; id = position.

    Args:
      vocabulary: a path to a `vocab.txt` (UTF-8, one token per line, as in BERT checkpoints;
        a byte-order mark at the start is dropped), or a sequence of str (or UTF-8 bytes).

    Raises:
      FileNotFoundError: no such file.
      ValueError: a file that is not UTF-8 (naming the file and the 1-based line), bytes
        tokens that are not UTF-8 (naming the item).
      TypeError: bytes instead of a path or list, or items that are not str/bytes.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        return _read_vocab_file(os.fspath(vocabulary))
    if isinstance(vocabulary, bytes):
        raise TypeError("vocabulary must be a path or a list of tokens, got bytes")
    try:
        items = list(vocabulary)
    except TypeError:
        raise TypeError(
            f"vocabulary must be a path or a list of tokens, got {type(vocabulary).__name__}"
        ) from None
    return [_token(t, i) for i, t in enumerate(items)]


def _read_vocab_file(path):
    from keras_bert import storage  # local paths, gs://, ram://; TensorFlow when used

    if not storage.isfile(path):
        raise FileNotFoundError(f"vocabulary file not found: {path!r}")
    data = storage.read_bytes(path)
    try:
        text = data.decode("utf-8-sig")  # drops a byte-order mark
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ValueError(
            f"vocabulary file {path!r}, line {line}: not valid UTF-8 (byte "
            f"0x{data[err.start]:02x} at byte {column} of the line); save it as UTF-8"
        ) from None
    # As open(..., "r") reads it (universal newlines), and like the reference's load_vocab
    # strip only the line end: a token may hold spaces.
    tokens = [line.rstrip("\n") for line in io.StringIO(text, newline=None)]
    if tokens and tokens[-1] == "":
        tokens.pop()
    return tokens


def _token(token, index):
    if isinstance(token, bytes):
        try:
            return token.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"vocabulary item {index} ({token!r:.60}) is not UTF-8") from None
    if not isinstance(token, str):
        raise TypeError(
            f"vocabulary item {index} must be a str, got {token!r:.60} ({type(token).__name__})"
        )
    return token


def check_vocabulary(tokens, required=SPECIAL_TOKENS, path=None):
    """Raises ValueError naming every required special token missing from `tokens`, the first
    duplicate tokens, or a token tensorflow-text's WordPiece cannot hold (by its id, and by
    file and line when the vocabulary was read from `path`)."""
    source = f"vocabulary file {path!r}" if path else "the vocabulary"
    if not tokens:
        raise ValueError(f"{source} is empty")
    present = set(tokens)
    missing = [t for t in required if t not in present]
    if missing:
        raise ValueError(
            "%s lacks the special token(s) %s, which BERT needs; a BERT vocab.txt "
            "has %s" % (source, ", ".join(missing), ", ".join(required))
        )
    if len(present) != len(tokens):
        seen, dups = set(), []
        for t in tokens:
            if t in seen:
                dups.append(t)
            seen.add(t)
        raise ValueError("%s has duplicate tokens: %r" % (source, dups[:10]))
    for i, token in enumerate(tokens):
        problem = _wordpiece_problem(token)
        if problem:
            line = f", line {i + 1}" if path else ""
            raise ValueError(f"{source}{line}: the token with id {i} ({token!r:.60}) {problem}")


def _wordpiece_problem(token):
    """Why FastWordpieceTokenizer cannot take `token`, or None."""
    if "\x00" in token:
        return "holds a NUL character"
    try:
        size = len(token.removeprefix(SUFFIX_INDICATOR).encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    if size > MAX_TOKEN_BYTES:
        return f"is {size} UTF-8 bytes long; WordPiece takes at most {MAX_TOKEN_BYTES}"
    return None


def special_token_ids(tokens):
    """{token: id} of the BERT special tokens present in `tokens`."""
    index = {t: i for i, t in enumerate(tokens)}
    return {t: index[t] for t in SPECIAL_TOKENS if t in index}


def require(tokens, owner):
    """`tokens`, or ValueError saying that `owner` (a layer name) has no vocabulary yet."""
    if tokens is None:
        raise ValueError(
            f"{owner} has no vocabulary: it was made without one (get_config() holds none; "
            f"a .keras file keeps it as the asset {ASSET_FILE}). Pass vocabulary= (a vocab.txt "
            "path or a list of tokens), call set_vocabulary(...), or open the saved model "
            "with keras.saving.load_model."
        )
    return tokens


def write_vocabulary(tokens, path):
    """Writes `tokens` to `path` (local, gs://, ...), one per line, UTF-8, atomically (see
    `keras_bert.storage`), so that `load_vocabulary(path)` reads back the same list.

    Raises:
      ValueError: a token a line cannot hold (one with a line break; an empty last token or
        a byte-order mark opening the first, which reading drops), naming its id.
    """
    from keras_bert import storage  # TensorFlow when used

    for i, token in enumerate(tokens):
        problem = None
        if "\n" in token or "\r" in token:
            problem = "holds a line break"
        elif i == len(tokens) - 1 and token == "":
            problem = "is empty and the last token"
        elif i == 0 and token.startswith("\ufeff"):
            problem = "starts with a byte-order mark"
        if problem:
            raise ValueError(f"cannot write the vocabulary to {path!r}: the token with id {i} "
                             f"({token!r:.60}) {problem}, which a vocab.txt cannot keep")
    storage.write_bytes(path, "".join(token + "\n" for token in tokens).encode("utf-8"))


@contextlib.contextmanager
def vocabulary_file(tokens, beside=None):
    """A temporary ``vocab.txt`` holding ``tokens`` (None for None), for writers that take
    a path (the preset saver, the TF Hub exports); removed afterwards. It is written in a
    temporary directory in ``beside`` (a directory on the store being written: local,
    gs://, ram://), else in the local temporary directory.

    >>> with vocabulary_file(["[PAD]", "[UNK]", "hello"]) as path:
    ...     load_vocabulary(path)
    ['[PAD]', '[UNK]', 'hello']
    >>> import os
    >>> os.path.exists(path)
    False
    """
    from keras_bert import storage  # TensorFlow when used

    if tokens is None:
        yield None
        return
    parent = beside or tempfile.gettempdir()
    with storage.staging_dir(parent, prefix=".tmp-keras_bert_vocab_") as tmp:
        path = os.path.join(tmp, "vocab.txt")
        write_vocabulary(list(tokens), path)
        yield path
