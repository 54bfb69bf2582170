"""learn_vocabulary: its numeric and bool arguments are checked before any learning."""

import pytest

from keras_bert.text.vocab_learner import learn_vocabulary


@pytest.mark.parametrize("name,bad", [
    ("vocab_size", 4), ("vocab_size", 40.0), ("vocab_size", "40"), ("vocab_size", True),
    ("batch_size", 0), ("batch_size", 2.5), ("do_lower_case", "yes"),
])
def test_bad_arguments(name, bad):
    kwargs = {"vocab_size": 40, name: bad}
    with pytest.raises(ValueError, match=f"{name} must be"):
        learn_vocabulary(["the cat sat"], **kwargs)


def test_learns():
    vocab = learn_vocabulary(["the cat sat on the mat"] * 5, vocab_size=30, lower_thresh=1)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and "the" in vocab
