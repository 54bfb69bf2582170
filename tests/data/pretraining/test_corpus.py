"""keras_bert/data/pretraining/corpus.py: prose split into sentences, and documents written in
the original corpus format (a sentence a line, a blank line between documents), anywhere
tf.io.gfile writes."""

import pytest

from keras_bert import storage
from keras_bert.data.pretraining import corpus


@pytest.mark.parametrize("text, sentences", [
    ("BERT reads text. It was trained in 2018! Was it? yes.",
     ["BERT reads text.", "It was trained in 2018!", "Was it? yes."]),
    ("Dr. no capital after this. e.g. the 3.5 kg cat. Done", ["Dr. no capital after this. e.g. "
                                                             "the 3.5 kg cat.", "Done"]),
    ("  one line without an end  ", ["one line without an end"]),
    ("", []),
])
def test_split_sentences(text, sentences):
    assert corpus.split_sentences(text) == sentences


def test_write_corpus_in_the_original_format_on_ram():
    path = "ram://corpus_test/corpus.txt"
    documents = [["The cat sat.", "It  ran\naway."], ["One more."]]
    assert corpus.write_corpus(path, documents) == 3
    assert storage.read_bytes(path).decode() == (
        "The cat sat.\nIt ran away.\n\nOne more.\n\n")
