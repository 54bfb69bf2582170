"""read_squad_examples: identical to google-research/bert run_squad.read_squad_examples."""

import json
import warnings

import pytest

from keras_bert.data import read_squad_examples
from keras_bert.data.squad.examples import split_words
from tests.data.squad.squad_cases import hand_made_squad, squad_flags, wiki_squad, write_json

FIELDS = ("qas_id", "question_text", "doc_tokens", "orig_answer_text", "start_position",
          "end_position", "is_impossible")


def reference_examples(google_squad, path, is_training, version_2):
    run_squad = google_squad.run_squad
    with squad_flags(run_squad, version_2_with_negative=version_2):
        return run_squad.read_squad_examples(path, is_training)


def assert_same_examples(mine, reference):
    assert [e.qas_id for e in mine] == [e.qas_id for e in reference]
    for ours, theirs in zip(mine, reference):
        for field in FIELDS:
            assert getattr(ours, field) == getattr(theirs, field), (ours.qas_id, field)


def read_quietly(source, is_training, version_2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_squad_examples(source, is_training, version_2_with_negative=version_2)


@pytest.mark.parametrize("is_training", [True, False])
@pytest.mark.parametrize("version_2", [False, True])
def test_hand_made_as_run_squad(google_squad, tmp_path, is_training, version_2):
    path = write_json(tmp_path, hand_made_squad(version_2))
    mine = read_quietly(path, is_training, version_2)
    assert_same_examples(mine, reference_examples(google_squad, path, is_training, version_2))
    by_id = {e.qas_id: e for e in mine}
    if is_training:
        assert "not-found" not in by_id  # skipped, as run_squad.py skips it
        assert by_id["glued-year"].doc_tokens[by_id["glued-year"].start_position] == "(1895-1943)."
    else:
        assert by_id["not-found"].start_position is None


@pytest.mark.parametrize("is_training", [True, False])
def test_wikipedia_as_run_squad(google_squad, wiki_lines, tmp_path, is_training):
    path = write_json(tmp_path, wiki_squad(wiki_lines, 60, impossible_every=5))
    mine = read_quietly(path, is_training, True)
    assert len(mine) > 100
    assert_same_examples(mine, reference_examples(google_squad, path, is_training, True))


def test_skipped_answers_are_counted():
    with pytest.warns(UserWarning, match=r"skipped 1 training question.*'not-found'.*Amazon"):
        read_squad_examples(hand_made_squad(), is_training=True)


def test_words_and_offsets():
    words, offsets = split_words(" a\u00a0b\u202fc\t d ")
    assert words == ["a\u00a0b", "c", "d"]  # U+202F splits, U+00A0 does not (run_squad.py)
    assert offsets == [-1, 0, 0, 0, 0, 1, 1, 1, 2, 2]


def test_paragraph_questions_share_words_and_keep_answers():
    data = hand_made_squad(version_2=True)
    examples = read_squad_examples(data, is_training=False)
    river = [e for e in examples if e.context_text.startswith("The Amazon")]
    assert all(e.doc_tokens is river[0].doc_tokens for e in river)
    by_id = {e.qas_id: e for e in examples}
    assert by_id["river"].answers == ["Brazil, Peru and Colombia"]
    assert by_id["impossible"].answers == [] and by_id["impossible"].plausible_answers == ["Brazil"]


# ---------------------------------------------------------------------------- bad inputs
def squad(qas, context="Paris is in France."):
    return {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"SQuAD file .*nowhere\.json does not exist"):
        read_squad_examples(str(tmp_path / "nowhere.json"), is_training=False)


def test_bad_json_names_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json is not valid UTF-8 JSON"):
        read_squad_examples(str(path), is_training=False)


def test_not_squad_names_file(tmp_path):
    path = write_json(tmp_path, {"version": "1.1"}, "other.json")
    with pytest.raises(ValueError, match=r"other\.json is not SQuAD JSON: .*\"data\" list"):
        read_squad_examples(path, is_training=False)
    with pytest.raises(TypeError, match="SQuAD source must be a path or the parsed JSON dict"):
        read_squad_examples(["a"], is_training=False)


@pytest.mark.parametrize(
    "qas,context,version_2,match",
    [
        ([{"question": "q?", "answers": []}], "c", False,
         r" qas\[0\] has no 'id'"),
        ([{"id": 7, "question": "q?"}], "c", False, r"qas\[0\]: 'id' must be a str, got int"),
        ([{"id": "a", "question": None}], "c", False, r"\(id 'a'\): 'question' must be a str"),
        ([{"id": "a", "question": "q", "answers": []}], "c", False,
         r"\(id 'a'\): for training, each answerable question needs exactly 1 answer.*got 0"),
        ([{"id": "a", "question": "q", "answers": [{"text": "France", "answer_start": 15}]}],
         None, False, r"\(id 'a'\) answers\[0\]: answer_start 15 with text of 6 characters "
         r"runs outside the context \(19 characters\)"),
        ([{"id": "a", "question": "q", "answers": [{"text": "France", "answer_start": -1}]}],
         None, False, r"answer_start -1 with text"),
        ([{"id": "a", "question": "q", "answers": [{"text": "France", "answer_start": "12"}]}],
         None, False, r"answers\[0\]: 'answer_start' must be a int, got str"),
        ([{"id": "a", "question": "q", "answers": [{"text": " ", "answer_start": 5}]}],
         None, False, r"answers\[0\]: the answer text is empty"),
        ([{"id": "a", "question": "q", "answers": []}], None, True,
         r"\(id 'a'\) has no 'is_impossible'"),
        ([{"id": "a", "question": "q", "answers": [], "is_impossible": "yes"}], None, True,
         r"'is_impossible' must be a bool, got str"),
        ([{"id": "a", "question": "q\ud800", "answers": []}], None, False,
         r"'question' is not valid Unicode: lone surrogate '\\ud800' at character 1"),
        ([{"id": "a", "question": "q", "answers": [{"text": "Paris", "answer_start": 0}]},
          {"id": "a", "question": "r", "answers": [{"text": "Paris", "answer_start": 0}]}],
         None, False, r"qas\[1\] \(id 'a'\): the id is used twice \(also at .*qas\[0\]"),
        ([], "  \n", False, r": the context is empty"),
    ],
)
def test_bad_entries_name_file_and_entry(tmp_path, qas, context, version_2, match):
    data = squad(qas) if context is None else squad(qas, context)
    path = write_json(tmp_path, data, "entries.json")
    with pytest.raises(ValueError, match=r"entries\.json: data\[0\] paragraphs\[0\].*" + match):
        read_squad_examples(path, is_training=True, version_2_with_negative=version_2)


def test_squad_2_read_as_1_says_so():
    with pytest.raises(ValueError, match=r"\(id 'impossible-3'\): for training, each answerable "
                                         r"question needs exactly 1 answer in 'answers', got 0; "
                                         r"it is SQuAD 2.0 \(is_impossible\): pass "
                                         r"version_2_with_negative=True"):
        read_squad_examples(hand_made_squad(version_2=True), is_training=True)


def test_bad_structure_names_entry():
    with pytest.raises(ValueError, match=r"the SQuAD dict: data\[0\] has no 'paragraphs'"):
        read_squad_examples({"data": [{"title": "t"}]}, is_training=False)
    with pytest.raises(ValueError, match=r"data\[0\] paragraphs\[0\]: 'qas' must be a list"):
        read_squad_examples({"data": [{"paragraphs": [{"context": "c", "qas": {}}]}]}, False)
    with pytest.raises(ValueError, match=r"qas\[0\] \(id 'a'\) answers\[0\] has no 'text'"):
        read_squad_examples(squad([{"id": "a", "question": "q", "answers": [{}]}]), False)


def test_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(squad([])).replace("Paris", "Par\u00eds").encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.json is not valid UTF-8 JSON"):
        read_squad_examples(str(path), is_training=False)
