"""Input files as a stream of documents in bounded chunks."""

import pytest
import tensorflow as tf

from keras_bert.data.pretraining import text_files as text
from keras_bert.data.pretraining.text_files import PretrainingDataError


def _write(path, content):
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return str(path)


def test_documents_split_at_blank_lines_as_the_original_sees_them(tmp_path):
    # Whitespace-only lines (tabs, CR, Unicode spaces such as U+3000 and U+00A0) end a
    # document, as the original's str.strip() sees them; invalid UTF-8 bytes are ignored.
    path = _write(tmp_path / "c.txt", "  A one.\r\nA two.\n \t\r\n\u3000\nB one.\n\u00a0\xa0\n"
                  .encode("utf-8") + b"\xff\n" + b"C one.\n\n\n")
    assert list(text.read_documents(path)) == [[b"A one.", b"A two."], [b"B one."],
                                               [b"C one."]]


def test_lines_cross_block_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "BLOCK_BYTES", 7)
    lines = [f"sentence number {i}." for i in range(50)]
    path = _write(tmp_path / "c.txt", "\n".join(lines[:20]) + "\n\n" + "\n".join(lines[20:]))
    documents = list(text.read_documents(path))
    assert [len(d) for d in documents] == [20, 30]
    assert [line.decode() for d in documents for line in d] == lines


def test_long_documents_are_cut(tmp_path):
    path = _write(tmp_path / "c.txt", "\n".join(f"s{i}" for i in range(25)))
    assert [len(d) for d in text.read_documents(path, max_document_lines=10)] == [10, 10, 5]


def test_input_files_globs_and_lists(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        _write(tmp_path / name, "x\n")
    files = text.expand_input_files(f"{tmp_path}/*.txt,{tmp_path}/c.md,{tmp_path}/a.txt")
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.txt", "b.txt", "c.md"]
    assert text.expand_input_files([str(tmp_path / "c.md")]) == [str(tmp_path / "c.md")]


def test_input_files_through_gfile():
    with tf.io.gfile.GFile("ram://corpus/part-1.txt", "w") as f:
        f.write("One.\nTwo.\n\nThree.\n")
    files = text.expand_input_files("ram://corpus/*.txt")
    assert files == ["ram://corpus/part-1.txt"]
    assert list(text.read_documents(files[0])) == [[b"One.", b"Two."], [b"Three."]]


@pytest.mark.parametrize("content, make, message", [
    (None, "missing", "no such file"),
    (b"", "file", "is empty"),
    (None, "dir", "is a directory"),
])
def test_bad_input_files_are_named(tmp_path, content, make, message):
    path = tmp_path / "input.txt"
    if make == "file":
        path.write_bytes(content)
    elif make == "dir":
        path.mkdir()
    with pytest.raises(PretrainingDataError, match=f"{path}.*{message}|{message}"):
        text.expand_input_files(str(path))
    with pytest.raises(PretrainingDataError, match="no input file"):
        text.expand_input_files(" , ")


def test_a_file_of_blank_lines_is_named(tmp_path):
    path = _write(tmp_path / "blank.txt", "\n  \n\t\n")
    with pytest.raises(PretrainingDataError, match=f"{path} holds no text"):
        list(text.read_documents(path))


def test_chunks_are_bounded_and_lazy(tmp_path, monkeypatch):
    """However long the input, a chunk holds about chunk_lines lines, and the reader is at
    most one chunk ahead of what it has handed out."""
    path = _write(tmp_path / "c.txt", "\n\n".join(
        "\n".join(f"doc {d} line {i}." for i in range(1 + d % 7)) for d in range(2000)))
    produced = []
    original = text.read_documents

    def counting(*args, **kwargs):
        for document in original(*args, **kwargs):
            produced.append(len(document))
            yield document

    monkeypatch.setattr(text, "read_documents", counting)
    handed_out = 0
    chunks = 0
    for chunk in text.read_chunks([path], chunk_lines=300):
        lines = sum(len(d) for d in chunk)
        handed_out += lines
        chunks += 1
        assert lines <= 300 + 150 + 6  # a chunk, plus a merged small last one
        assert sum(produced) - handed_out <= 300 + 6  # read ahead: at most one chunk
    assert handed_out == sum(1 + d % 7 for d in range(2000)) and chunks > 20


def test_a_small_last_chunk_joins_the_one_before(tmp_path):
    path = _write(tmp_path / "c.txt", "\n\n".join(f"d{i}a\nd{i}b" for i in range(9)))
    sizes = [sum(map(len, c)) for c in text.read_chunks([path], chunk_lines=8)]
    assert sizes == [8, 10]  # 8, 8 and 2 lines -> the 2 join the 8 before
    sizes = [sum(map(len, c)) for c in text.read_chunks([path], chunk_lines=6)]
    assert sizes == [6, 6, 6]
