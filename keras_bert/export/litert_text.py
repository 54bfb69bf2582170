"""The tokenizer of a LiteRT export: `BertTokenizer`'s ids from ops LiteRT can run.

`BertTokenizer` normalizes text with core TensorFlow regex ops and ``NormalizeUTF8``, which
LiteRT has no kernels for. A LiteRT export tokenizes with tensorflow-text's
``FastBertNormalize`` and ``FastWordpieceTokenize`` instead, which have LiteRT kernels
(`tensorflow_text.tflite_registrar`). Their stock normalizer differs from the reference
(BERT's Python ``BasicTokenizer``, which `BertTokenizer` matches): it applies NFKC and case
folding (``…`` -> ``...``, ``ß`` -> ``ss``, ``½`` -> ``1⁄2``, ``ς`` -> ``σ``) and turns
control characters into spaces. But ``FastBertNormalize`` maps each code point through a
table held in its model buffer, so `normalizer_model` writes that table from the
reference's own rules, code point by code point:

* dropped: NUL, U+FFFD, control and format characters (Cc, Cf) but tab, newline and
  carriage return, and every byte of invalid UTF-8 (as ``bytes.decode("utf-8", "ignore")``);
* whitespace (the reference's) -> a space;
* with ``do_lower_case``: Python's ``str.lower()``, NFD, non-spacing marks (Mn) dropped.

``FastWordpieceTokenize`` then splits words on whitespace, punctuation and CJK ideographs
as the reference does. The ids equal `BertTokenizer`'s except in two cases, both rare:

* an upper-case Greek word ending in sigma (``ΟΔΟΣ``): Python lower-cases its last letter
  to the final form ``ς``, a table of single code points gives ``σ``;
* a word longer than ``max_chars_per_word`` (200) bytes in UTF-8 but not in characters
  (120 Cyrillic letters without a space or punctuation): `BertTokenizer` counts
  characters, ``FastWordpieceTokenize`` bytes, so it becomes ``[UNK]`` here.

(Punctuation follows the Unicode version of ICU inside tensorflow-text, which may know
characters that Python's ``unicodedata`` does not.)
"""

import functools
import sys
import unicodedata

import numpy as np

from keras_bert.text import normalization

# FastBertNormalize's encoding of a table entry (tensorflow-text's fast_bert_normalizer.h):
# bit 30 set: the code point is replaced; bits 0-5 the UTF-8 length of the replacement,
# bits 6-29 its offset in the string pool.
_DIFFERENT = 0x40000000
_LENGTH_BITS = 6
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1

# darts-clone's unit layout (DartsCloneTrieWrapper): label in bits 0-7, has-leaf bit 8,
# offset from bit 10 (offsets below 2**21 need no extension bit); a value unit has bit 31.
_HAS_LEAF = 0x100
_VALUE = 0x80000000
_MAX_OFFSET = 1 << 21


@functools.lru_cache(maxsize=None)
def normalizer_model(do_lower_case):
    """The ``FastBertNormalize`` model buffer (bytes, a ``FastBertNormalizerModel``
    flatbuffer) that normalizes text as `BertTokenizer` does (see the module docstring)."""
    keys, values, pool, data_for_zero = _table(do_lower_case)
    return _flatbuffer(do_lower_case, darts_trie(keys, values), data_for_zero, pool)


def fast_bert_tokenizer(tokenizer):
    """A `tensorflow_text.FastBertTokenizer` with the ids of the `BertTokenizer`
    ``tokenizer`` (its vocabulary, casing and word length; int32 ids)."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    from keras_bert import vocab as vocab_lib

    return tf_text.FastBertTokenizer(
        vocab=tokenizer.get_vocabulary(),
        suffix_indicator="##",
        max_bytes_per_word=tokenizer.max_chars_per_word,
        token_out_type=tf.int32,
        unknown_token=vocab_lib.UNK,
        no_pretokenization=False,
        fast_bert_normalizer_model_buffer=normalizer_model(tokenizer.do_lower_case),
    )


def replacement(cp, do_lower_case, classes=None):
    """What the reference makes of code point ``cp`` before splitting words (a str)."""
    classes = classes or normalization.character_classes()
    if classes["removed"][cp]:
        return ""
    text = chr(cp)
    if do_lower_case:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if not classes["marks"][ord(c)])
    return "".join(" " if classes["whitespace"][ord(c)] else c for c in text)


def _table(do_lower_case):
    """(UTF-8 keys, encoded values, string pool, the value of NUL) of every code point the
    normalizer replaces, and of every piece of invalid UTF-8 it can meet."""
    classes = normalization.character_classes()
    keys, values, offsets = [], [], {}
    pool = bytearray()

    def encode(text):
        data = text.encode("utf-8")
        if not data:
            return _DIFFERENT
        if len(data) > _MAX_LENGTH:  # no code point expands this far (checked in tests)
            raise ValueError(f"a replacement of {len(data)} bytes: {text!r}")
        if data not in offsets:
            offsets[data] = len(pool)
            pool.extend(data)
        return _DIFFERENT | len(data) | (offsets[data] << _LENGTH_BITS)

    for cp in _candidates(do_lower_case, classes):
        text = replacement(cp, do_lower_case, classes)
        if text != chr(cp):
            keys.append(chr(cp).encode("utf-8"))
            values.append(encode(text))
    removed = encode("")
    for piece in invalid_utf8_pieces():
        keys.append(piece)
        values.append(removed)
    return keys, values, bytes(pool), encode(replacement(0, do_lower_case, classes))


def _candidates(do_lower_case, classes):
    """The code points (but NUL and the surrogates) that `replacement` may change."""
    changed = classes["removed"] | classes["whitespace"]
    if do_lower_case:
        changed = changed | classes["marks"]
        changed[[cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF and (
            chr(cp).lower() != chr(cp) or not unicodedata.is_normalized("NFD", chr(cp)))]] = True
    changed[0] = False
    changed[0xD800:0xE000] = False
    return np.flatnonzero(changed).tolist()


def invalid_utf8_pieces():
    """Every piece of invalid UTF-8 that ICU's ``U8_FWD_1`` (how ``FastBertNormalize`` steps
    through text) takes as one unit: a byte that cannot start a character, a lead byte
    alone, a lead byte with 1 (or 2) valid trail bytes cut short."""
    pieces = [bytes([b]) for b in range(0x80, 0x100)]  # alone: trail bytes, C0, C1, F5-FF
    trail = range(0x80, 0xC0)
    for lead in range(0xE0, 0xF0):
        low, high = (0xA0, 0xBF) if lead == 0xE0 else (0x80, 0x9F) if lead == 0xED else (
            0x80, 0xBF)
        pieces += [bytes([lead, t1]) for t1 in range(low, high + 1)]
    for lead in range(0xF0, 0xF5):
        low, high = (0x90, 0xBF) if lead == 0xF0 else (0x80, 0x8F) if lead == 0xF4 else (
            0x80, 0xBF)
        for t1 in range(low, high + 1):
            pieces.append(bytes([lead, t1]))
            pieces += [bytes([lead, t1, t2]) for t2 in trail]
    return pieces


def darts_trie(keys, values):
    """A darts-clone double-array trie (the uint32 units, as a numpy array) mapping each
    byte string of ``keys`` (non-empty, distinct, none with a NUL byte) to the value at the
    same place in ``values`` (ints in [0, 2**31)): the layout tensorflow-text's
    ``DartsCloneTrieWrapper`` reads.

    Node ``n`` with offset ``o`` has its child of byte ``c`` at ``n ^ o ^ c`` (whose label
    must be ``c``) and its value at ``n ^ o`` (the child of byte 0). Every node gets a base
    ``n ^ o`` of its own, so no look-up can reach another node's child."""
    root = {}
    for key, value in zip(keys, values):
        if not key or 0 in key:
            raise ValueError(f"darts_trie keys must be non-empty with no NUL byte: {key!r}")
        if not 0 <= value < 2**31:
            raise ValueError(f"darts_trie values must be in [0, 2**31): {value}")
        node = root
        for byte in key:
            node = node.setdefault(byte, {})
        if None in node:
            raise ValueError(f"darts_trie keys must be distinct: {key!r} twice")
        node[None] = value  # the value of the key ending here

    size = 1 << 10
    units = np.zeros(size, np.int64)
    used = np.zeros(size, bool)
    used[0] = True  # the root
    bases = set()
    first_free = 1
    queue = [(root, 0)]
    while queue:
        node, index = queue.pop()
        labels = sorted(0 if label is None else label for label in node)
        if not labels:
            continue
        # The lowest base whose slots are all free (and which no other node uses).
        slot = first_free
        while True:
            base = slot ^ labels[0]
            need = max(base ^ label for label in labels) + 1
            if need > size:
                grow = max(size, need - size + 256)
                units = np.concatenate([units, np.zeros(grow, np.int64)])
                used = np.concatenate([used, np.zeros(grow, bool)])
                size += grow
            if (base not in bases and base ^ index < _MAX_OFFSET
                    and not any(used[base ^ label] for label in labels)):
                break
            slot += 1
            while slot < size and used[slot]:
                slot += 1
        bases.add(base)
        units[index] |= (base ^ index) << 10
        for label in labels:
            child = base ^ label
            used[child] = True
            if label == 0:
                units[index] |= _HAS_LEAF
                units[child] = _VALUE | node[None]
            else:
                units[child] |= label
                queue.append((node[label], child))
        while first_free < size and used[first_free]:
            first_free += 1
    last = int(np.flatnonzero(used)[-1]) + 1
    return units[:last].astype(np.uint32)


def _flatbuffer(do_lower_case, trie, data_for_zero, pool):
    """A ``FastBertNormalizerModel`` (tensorflow-text's fast_bert_normalizer_model.fbs):
    lower_case_nfd_strip_accents (bool), trie_array ([uint32]), data_for_codepoint_zero
    (int32), normalized_string_pool ([ubyte])."""
    import flatbuffers

    builder = flatbuffers.Builder(len(trie) * 4 + len(pool) + 1024)
    trie_vector = builder.CreateNumpyVector(np.asarray(trie, np.uint32))
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool, np.uint8))
    builder.StartObject(4)
    builder.PrependBoolSlot(0, bool(do_lower_case), False)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, int(data_for_zero), 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())
