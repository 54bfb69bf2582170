"""SQuAD data for the tests: hand-made cases with known answers, and Wikipedia-made sets."""

import contextlib
import json
import random


@contextlib.contextmanager
def squad_flags(run_squad, **values):
    """Sets run_squad's absl flags (version_2_with_negative, ...) for the block."""
    flags = run_squad.FLAGS
    saved = {name: getattr(flags, name) for name in values}
    for name, value in values.items():
        setattr(flags, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(flags, name, value)



def write_json(tmp_path, data, name="squad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def wiki_squad(lines, num_paragraphs, seed=0, impossible_every=0):
    """SQuAD JSON made from Wikipedia lines: 3 lines a paragraph, 2 questions each.

    Answers are 1 to 6 words at random places; some start or end inside a word (as
    "Japan" in "Japanese"), some are glued to punctuation. Questions are sentence pieces,
    some longer than max_query_length. With `impossible_every`, every n-th question is a
    SQuAD 2.0 unanswerable one.
    """
    rng = random.Random(seed)
    lines = [line for line in lines if len(line.split()) >= 8]
    paragraphs = []
    count = 0
    for p in range(num_paragraphs):
        context = " ".join(lines[3 * p : 3 * p + 3])
        starts = [i for i, c in enumerate(context)
                  if c != " " and (i == 0 or context[i - 1] == " ")]
        qas = []
        for q in range(2):
            first = rng.randrange(len(starts))
            last = min(len(starts) - 1, first + rng.randrange(6))
            start = starts[first] + (rng.randrange(3) if rng.random() < 0.15 else 0)
            end = context.find(" ", starts[last])
            end = len(context) if end < 0 else end
            end -= rng.randrange(2) if rng.random() < 0.2 else 0
            while start < end and context[start] == " ":
                start += 1
            text = context[start:end]
            if not text.strip():
                start, text = starts[first], context[starts[first]]
            words = context.split()
            q_first = rng.randrange(len(words))
            question = " ".join(words[q_first : q_first + rng.choice([3, 8, 40])]) + "?"
            count += 1
            qa = {"id": f"p{p}q{q}", "question": question,
                  "answers": [{"text": text, "answer_start": start}]}
            if impossible_every and count % impossible_every == 0:
                qa.update(is_impossible=True, plausible_answers=qa["answers"], answers=[])
            elif impossible_every:
                qa["is_impossible"] = False
            qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    return {"version": "wiki", "data": [{"title": "wiki", "paragraphs": paragraphs}]}


def qa(qas_id, question, context, answer, nth=0, **fields):
    """A SQuAD question whose answer is the `nth` occurrence of `answer` in `context`."""
    start = -1
    for _ in range(nth + 1):
        start = context.index(answer, start + 1)
    return {"id": qas_id, "question": question,
            "answers": [{"text": answer, "answer_start": start}], **fields}


GLUED = ("The leader was John Smith (1895-1943). The Japanese electronics industry is the "
         "largest in the world. Steve Smith's car, a 1967 Ford Mustang, was red.")
UNICODE = ("Ærøskøbing is a town in Denmark. The café «Le Procope» in Paris serves crème "
           "brûlée. 北京大学 was founded in 1898. Naïve Zoë met Ðorđe in Kraków. It was −40 °C.")
SPACES = ("Tabs\tand\nnewlines  and double  spaces; a\u00a0non-breaking space, a narrow\u202fno-"
          "break space, zero\u200bwidth, ctrl\x07char and " + "x" * 230 + " long words.")
PRIZES = " ".join(
    f"In {1901 + i} the prize went to {name} of {place}." for i, (name, place) in enumerate(
        [("Henri Dunant", "Geneva"), ("Élie Ducommun and Albert Gobat", "Bern"),
         ("Randal Cremer", "London"), ("the Institute of International Law", "Ghent"),
         ("Bertha von Suttner", "Vienna"), ("Theodore Roosevelt", "New York")]))
RIVER = "The Amazon river flows through Brazil, Peru and Colombia into the Atlantic."
LONG_QUESTION = ("Please tell me, in as many words as you like and with all the detail you can "
                 "remember about the whole long history of the company and of its many leaders, "
                 "which year was John Smith born in?")


def hand_made_squad(version_2=False):
    """Hand-made SQuAD JSON (v1.1, or v2.0 with unanswerable questions).

    Answers glued to punctuation, inside a word ("Japan" of "Japanese"), with accents, CJK and
    odd whitespace, long words, a long question, answers spread over a long paragraph (they
    cross window borders with small windows), and one answer run_squad.py cannot find
    ("Brazil" at the offset of "Amazon"), which readers skip in training.
    """
    v2 = {"is_impossible": False} if version_2 else {}
    paragraphs = [
        {"context": GLUED, "qas": [
            qa("glued-year", "What year was John Smith born?", GLUED, "1895", **v2),
            qa("sub-word", "Who is the top exporter of electronics?", GLUED, "Japan", **v2),
            qa("possessive", "Whose car was red?", GLUED, "Steve Smith", **v2),
            qa("comma", "What car?", GLUED, "1967 Ford Mustang", **v2),
            qa("long-question", LONG_QUESTION, GLUED, "1895-1943", **v2),
        ]},
        {"context": UNICODE, "qas": [
            qa("danish", "Where is Ærøskøbing?", UNICODE, "Denmark", **v2),
            qa("accents", "What does the café serve?", UNICODE, "crème brûlée", **v2),
            qa("cjk", "What was founded in 1898?", UNICODE, "北京大学", **v2),
            qa("cjk-char", "Which city?", UNICODE, "北京", **v2),
            qa("polish", "Where did they meet?", UNICODE, "Kraków", **v2),
            qa("minus", "How cold?", UNICODE, "−40 °C", **v2),
        ]},
        {"context": SPACES, "qas": [
            qa("nbsp", "What kind of space?", SPACES, "non-breaking", **v2),
            qa("narrow", "How narrow?", SPACES, "narrow", **v2),
            qa("zero-width", "What width?", SPACES, "zero\u200bwidth", **v2),
            qa("long-word", "What words?", SPACES, "long words", **v2),
            qa("tab", "And?", SPACES, "and\nnewlines", **v2),
        ]},
        {"context": PRIZES, "qas": [
            qa("first", "Who won first?", PRIZES, "Henri Dunant", **v2),
            qa("two-names", "Who won in 1902?", PRIZES, "Élie Ducommun and Albert Gobat", **v2),
            qa("institute", "Which institute?", PRIZES, "the Institute of International Law",
               **v2),
            qa("last", "Where was the last?", PRIZES, "New York.", **v2),
            qa("whole", "What happened in 1903 and 1904?", PRIZES,
               "Randal Cremer of London. In 1904 the prize went to the Institute", **v2),
        ]},
        {"context": RIVER, "qas": [
            qa("river", "Where does the Amazon flow?", RIVER, "Brazil, Peru and Colombia", **v2),
            {"id": "not-found", "question": "Where?", **v2,
             "answers": [{"text": "Brazil", "answer_start": RIVER.index("Amazon")}]},
        ]},
    ]
    if version_2:
        paragraphs[4]["qas"] += [
            {"id": "impossible", "question": "Where does the Nile flow?", "answers": [],
             "is_impossible": True, "plausible_answers": [
                 {"text": "Brazil", "answer_start": RIVER.index("Brazil")}]},
            {"id": "impossible-2", "question": "Who discovered the Amazon?", "answers": [],
             "is_impossible": True},
        ]
        paragraphs[1]["qas"].append({"id": "impossible-3", "question": "Who is Zoë's sister?",
                                     "answers": [], "is_impossible": True})
    return {"version": "2.0" if version_2 else "1.1",
            "data": [{"title": "hand-made", "paragraphs": paragraphs}]}
