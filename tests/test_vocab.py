"""vocab.py: reading vocab.txt (byte-order mark, bad UTF-8, line ends) and checking tokens."""

import pytest

from keras_bert.text import BertTokenizer
from keras_bert import vocab as vocab_lib

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _write(tmp_path, data):
    path = tmp_path / "vocab.txt"
    path.write_bytes(data)
    return str(path)


def test_byte_order_mark_is_dropped(tmp_path):
    text = "\n".join(SPECIALS + ["hello", "world"]) + "\n"
    path = _write(tmp_path, b"\xef\xbb\xbf" + text.encode("utf-8"))
    tokens = vocab_lib.load_vocabulary(path)
    assert tokens[0] == "[PAD]" and len(tokens) == 7
    assert BertTokenizer(path)(["hello world"]).to_list() == [[5, 6]]


def test_bad_utf8_names_the_file_and_line(tmp_path):
    lines = [t.encode() for t in SPECIALS] + [b"caf\xe9", b"ok"]
    path = _write(tmp_path, b"\n".join(lines) + b"\n")
    with pytest.raises(ValueError, match=r"vocab\.txt', line 6: not valid UTF-8 \(byte 0xe9 "
                                         r"at byte 4 of the line\)"):
        vocab_lib.load_vocabulary(path)
    with pytest.raises(ValueError, match="line 6: not valid UTF-8"):
        BertTokenizer(path)


def test_lines_end_as_python_reads_them(tmp_path):
    path = _write(tmp_path, b"[PAD]\r\n[UNK]\r[CLS]\n[SEP]\n[MASK]\na b\n\nlast")
    assert vocab_lib.load_vocabulary(path) == SPECIALS + ["a b", "", "last"]


def test_list_items_must_be_text():
    assert vocab_lib.load_vocabulary([b"[PAD]", "x"]) == ["[PAD]", "x"]
    with pytest.raises(ValueError, match=r"vocabulary item 1 \(b'\\xff'\) is not UTF-8"):
        vocab_lib.load_vocabulary(["a", b"\xff"])
    with pytest.raises(TypeError, match=r"vocabulary item 2 must be a str, got 7 \(int\)"):
        vocab_lib.load_vocabulary(["a", "b", 7])
    with pytest.raises(TypeError, match="a path or a list of tokens, got int"):
        vocab_lib.load_vocabulary(5)


@pytest.mark.parametrize(
    "token,problem",
    [
        ("a\x00b", "holds a NUL character"),
        ("\ud800", r"is not valid Unicode \(a lone surrogate\)"),
        ("q" * 257, "is 257 UTF-8 bytes long; WordPiece takes at most 256"),
        ("##" + "é" * 129, "is 258 UTF-8 bytes long"),
    ],
)
def test_tokens_wordpiece_cannot_hold(tmp_path, token, problem):
    """tensorflow-text failed on these at the first call, with a RuntimeError from darts."""
    with pytest.raises(ValueError, match=rf"the vocabulary: the token with id 5 .*{problem}"):
        BertTokenizer(SPECIALS + [token])
    if "\ud800" not in token:
        path = _write(tmp_path, "\n".join(SPECIALS + ["ok", token]).encode("utf-8"))
        with pytest.raises(ValueError, match=rf"vocab\.txt', line 7: the token with id 6 .*{problem}"):
            BertTokenizer(path)
    # the longest tokens it takes
    BertTokenizer(SPECIALS + ["q" * 256, "##" + "q" * 256])(["q"])


def test_vocabulary_file_is_read_through_gfile():
    # ram:// stands for gs://: the file is read with tf.io.gfile, not open().
    import tensorflow as tf

    path = "ram://keras_bert_test_vocab/vocab.txt"
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write("\ufeff[PAD]\n[UNK]\ncaf\u00e9\n".encode("utf-8"))
    assert vocab_lib.load_vocabulary(path) == ["[PAD]", "[UNK]", "caf\u00e9"]
    with pytest.raises(FileNotFoundError, match="ram://keras_bert_test_vocab/none.txt"):
        vocab_lib.load_vocabulary("ram://keras_bert_test_vocab/none.txt")


def test_vocabulary_file_is_a_temporary_file_on_the_store_it_is_given():
    from keras_bert import storage

    tokens = ["[PAD]", "[UNK]", "caf\u00e9"]
    with vocab_lib.vocabulary_file(None) as none:
        assert none is None
    storage.rmtree("ram://keras_bert_test_vocab_file")
    with vocab_lib.vocabulary_file(tokens, beside="ram://keras_bert_test_vocab_file") as path:
        assert path.startswith("ram://keras_bert_test_vocab_file/.tmp-keras_bert_vocab_")
        assert vocab_lib.load_vocabulary(path) == tokens
    assert storage.listdir("ram://keras_bert_test_vocab_file") == []
