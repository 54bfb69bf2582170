"""Reading fine-tuning examples from TSV, CSV and JSON Lines files, and every bad file."""

import json

import pytest

from keras_bert.data.files import DataFileError, read_examples


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_tsv_csv_jsonl_read_alike(tmp_path):
    rows = [("a great movie", "it rocks", 1), ("dull, \"slow\"", "meh", 0)]
    tsv = "s1\ts2\tlabel\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in rows)
    csv_text = "s1,s2,label\n" + "".join(
        '"{}","{}",{}\n'.format(a.replace('"', '""'), b, c) for a, b, c in rows)
    jsonl = "".join(json.dumps({"s1": a, "s2": b, "label": c}) + "\n" for a, b, c in rows)
    for name, text in (("d.tsv", tsv), ("d.csv", csv_text), ("d.jsonl", jsonl)):
        examples = read_examples(_write(tmp_path, name, text), "s1", "s2", "label")
        assert examples.texts == [r[0] for r in rows], name
        assert examples.texts_b == [r[1] for r in rows]
        assert examples.labels == [1, 0] and examples.label_names is None
        assert examples.x == (examples.texts, examples.texts_b)


def test_string_labels_map_to_ids_the_same_way_across_files(tmp_path):
    train = read_examples(_write(tmp_path, "t.tsv", "text\tlabel\na\tpos\nb\tneg\nc\tpos\n"),
                          "text", label_column="label")
    assert train.labels == [1, 0, 1] and train.label_names == ["neg", "pos"]
    dev = read_examples(_write(tmp_path, "d.tsv", "text\tlabel\nd\tpos\n"), "text",
                        label_column="label", label_names=train.label_names)
    assert dev.labels == [1]
    with pytest.raises(DataFileError, match=r"d2.tsv line 2: label 'maybe' is not one of"):
        read_examples(_write(tmp_path, "d2.tsv", "text\tlabel\nd\tmaybe\n"), "text",
                      label_column="label", label_names=train.label_names)


def test_regression_labels(tmp_path):
    path = _write(tmp_path, "s.csv", "a,b,score\nx,y,4.5\nz,w,0\n")
    assert read_examples(path, "a", "b", "score", label_type="float").labels == [4.5, 0.0]
    bad = _write(tmp_path, "bad.csv", "a,b,score\nx,y,4.5\nz,w,high\n")
    with pytest.raises(DataFileError, match=r"bad.csv line 3: label 'high' is not a number"):
        read_examples(bad, "a", "b", "score", label_type="float")


def test_a_third_column_of_texts_for_an_embedder_s_negatives(tmp_path):
    path = _write(tmp_path, "t.jsonl", "".join(json.dumps(r) + "\n" for r in [
        {"anchor": "a cat", "positive": "the cat", "negative": "a dog"},
        {"anchor": "paris", "positive": "london", "negative": "red"}]))
    examples = read_examples(path, "anchor", "positive", text_c_column="negative")
    assert examples.texts_c == ["a dog", "red"] and examples.labels is None
    assert examples.x == (["a cat", "paris"], ["the cat", "london"], ["a dog", "red"])
    with pytest.raises(DataFileError, match=r"t.jsonl: no column 'hard'"):
        read_examples(path, "anchor", "positive", text_c_column="hard")
    with pytest.raises(ValueError, match=r"text_c_column is a third column of texts: give "
                                         r"text_b_column too"):
        read_examples(path, "anchor", text_c_column="negative")


def test_no_label_column_for_test_files(tmp_path):
    examples = read_examples(_write(tmp_path, "test.tsv", "id\tsentence\n1\thello\n"),
                             "sentence")
    assert examples.labels is None and examples.texts == ["hello"]


@pytest.mark.parametrize("name, text, message", [
    ("e.tsv", "", r"e.tsv: the file is empty"),
    ("h.tsv", "sentence\tlabel\n", r"h.tsv: a header but no rows"),
    ("c.tsv", "text\tlabel\na\t1\n", r"c.tsv: no column 'sentence'; the columns are \['label', 'text'\]"),
    ("f.tsv", "sentence\tlabel\na\t1\nb\t0\textra\n", r"f.tsv line 3: 3 fields, but the header has 2"),
    ("j.jsonl", '{"sentence": "a", "label": 1}\n{"sentence": "b", "label": \n', r"j.jsonl line 2: not valid JSON"),
    ("k.jsonl", '{"sentence": "a", "label": 1}\n[1, 2]\n', r"k.jsonl line 2: expected a JSON object"),
    ("m.jsonl", '{"sentence": "a", "label": 1}\n{"label": 0}\n', r"m.jsonl line 2: no 'sentence'"),
    ("n.jsonl", '{"sentence": 3, "label": 1}\n', r"n.jsonl line 1: 'sentence' is 3, not text"),
    ("x.txt", "sentence\n", r"x.txt: unknown data file type"),
])
def test_bad_files_name_file_and_line(tmp_path, name, text, message):
    path = _write(tmp_path, name, text)
    with pytest.raises(DataFileError, match=message):
        read_examples(path, "sentence", label_column="label")


def test_missing_file_and_bad_bytes(tmp_path):
    with pytest.raises(DataFileError, match="no such data file"):
        read_examples(str(tmp_path / "nope.tsv"), "sentence")
    path = tmp_path / "bytes.tsv"
    path.write_bytes(b"sentence\tlabel\nok\t1\nbad \xff\t0\n")
    with pytest.raises(DataFileError, match=r"bytes.tsv line 3: not UTF-8"):
        read_examples(str(path), "sentence", label_column="label")
