"""Whether a checkpoint's text is lower-cased (``do_lower_case``), from what its files say.

Sources, strongest first: the directory's metadata (``keras_bert.json``'s ``do_lower_case``,
Hugging Face ``tokenizer_config.json``'s ``do_lower_case``, keras-hub ``tokenizer.json``'s
``lowercase``), then the registry entry for registry presets, then the vocabulary itself.
Never the directory's name. Sources that disagree are an error naming both; an explicit
``do_lower_case=`` from the caller is not a source, it decides.

The vocabulary as evidence: lower-casing makes capitalised pieces unreachable, so a
vocabulary with a real share of them is cased for certain. Measured: the uncased BERT
vocabulary (all-MiniLM-L6-v2's, 30,522 tokens, 26,930 with cased letters besides the
``[...]`` specials) has no capitalised piece; WordPiece vocabularies learned with
``do_lower_case=False`` from the gensim English Wikipedia sample have 17% (2,000 tokens) and
19% (8,000 tokens) capitalised pieces among those with letters, and its 8,000 most frequent
cased words 27%. `CASED_SHARE` (5%) sits far from both, so a few stray capitalised tokens
do not make an uncased vocabulary cased. A vocabulary without capitalised pieces says
"uncased" only when nothing else speaks: a cased model may still have one (a user's cased
copy of an uncased vocabulary), so it contradicts no source.
"""

from keras_bert.checkpoints.common import CheckpointError
from keras_bert.vocab import load_vocabulary

CASED_SHARE = 0.05  # of the pieces with cased letters, at least this share capitalised ...
MIN_CAPITALISED = 2  # ... and at least this many, for a vocabulary to count as cased


def _has_case(token):
    return any(c.lower() != c.upper() for c in token)


def capitalised_pieces(tokens):
    """``(capitalised, with_letters)``: the pieces holding a capital letter, and how many
    pieces hold cased letters at all; bracketed specials (``[CLS]``, ``[unused0]``) aside."""
    pieces = [t for t in tokens if not (t.startswith("[") and t.endswith("]"))]
    lettered = [t for t in pieces if _has_case(t)]
    return [t for t in lettered if t != t.lower()], len(lettered)


def _enough(capitalised, lettered):
    return len(capitalised) >= max(MIN_CAPITALISED, CASED_SHARE * lettered)


def recorded(path, key, value):
    """A metadata source ``(what, value)`` for ``key`` of the file ``path``; None when the
    file does not say (key absent or null); `CheckpointError` when it is not a boolean."""
    if value is None:
        return None
    if not isinstance(value, bool):
        raise CheckpointError(f"{path}: {key} is {value!r}; expected true or false.")
    return (f"{path} ({key})", value)


def _describe(value):
    return f"do_lower_case={bool(value)} ({'uncased' if value else 'cased'})"


def resolve(sources, vocab_path=None, override=None, where="", tokens=None):
    """The ``do_lower_case`` of a checkpoint.

    Args:
        sources: ``[(what, do_lower_case)]``, strongest first; ``what`` names the file and
            key (or the registry entry) so that errors can say who said what.
        vocab_path: the vocabulary, the last source; None when there is none.
        tokens: the vocabulary's tokens when they are read already (from ``vocab_path``, a
            ``tokenizer.json``), else None.
        override: the caller's explicit choice; when given it is the answer, unchecked.
        where: the checkpoint, for error messages.

    With no source and no cased vocabulary, the answer is True (uncased, BERT's default).
    """
    if override is not None:
        return bool(override)
    for what, value in sources[1:]:
        if bool(value) != bool(sources[0][1]):
            raise CheckpointError(
                f"{where}: contradictory casing: {sources[0][0]} says "
                f"{_describe(sources[0][1])} but {what} says {_describe(value)}. Correct the "
                "wrong one, or pass do_lower_case= to choose."
            )
    if tokens is None and vocab_path is not None:
        tokens = load_vocabulary(vocab_path)
    if tokens is not None:
        capitalised, lettered = capitalised_pieces(tokens)
        if _enough(capitalised, lettered):
            for what, value in sources:
                if value:
                    raise CheckpointError(
                        f"{where}: contradictory casing: {what} says {_describe(value)} but "
                        f"the vocabulary {vocab_path} is cased ({len(capitalised)} of its "
                        f"{lettered} pieces with letters are capitalised, e.g. "
                        f"{', '.join(capitalised[:5])}), and lower-cased text never reaches "
                        "them. Correct the wrong one, or pass do_lower_case= to choose."
                    )
            return False
    return bool(sources[0][1]) if sources else True
