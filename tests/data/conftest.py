"""Fixtures of the SQuAD tests: google-research/bert's own run_squad.py, the vocabulary."""

import sys
import types

import pytest

from keras_bert.text import BertTokenizer


@pytest.fixture(scope="session")
def google_squad(google_bert_path):
    """google-research/bert's `run_squad` and `tokenization` (PyPI bert-tensorflow==1.0.4).

    run_squad.py imports modeling.py, which imports `tensorflow.contrib` (gone in TF 2); the
    data functions tested here use neither, so an empty stand-in serves for the import.
    """
    import absl.flags
    import tensorflow as tf

    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = types.ModuleType("tensorflow.contrib.layers")
    saved = {k: sys.modules.get(k) for k in ("tensorflow.contrib", "tensorflow.contrib.layers")}
    sys.modules.update({"tensorflow.contrib": contrib, "tensorflow.contrib.layers": contrib.layers})
    sys.path.insert(0, str(google_bert_path))
    try:
        from bert import run_squad, tokenization
    finally:
        sys.path.remove(str(google_bert_path))
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    tokenization.tf = tf.compat.v1
    absl.flags.FLAGS.mark_as_parsed()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)  # its per-feature logs
    return types.SimpleNamespace(run_squad=run_squad, tokenization=tokenization)


@pytest.fixture(scope="session")
def squad_vocab(minilm_path):
    return str(minilm_path / "vocab.txt")  # the uncased BERT vocabulary


@pytest.fixture(scope="session")
def tokenizers(squad_vocab):
    """keras_bert's in-graph tokenizer, by do_lower_case."""
    return {lower: BertTokenizer(squad_vocab, do_lower_case=lower) for lower in (True, False)}


@pytest.fixture(scope="session")
def full_tokenizers(google_squad, squad_vocab):
    """google-research/bert's FullTokenizer, by do_lower_case."""
    full = google_squad.tokenization.FullTokenizer
    return {lower: full(squad_vocab, do_lower_case=lower) for lower in (True, False)}


@pytest.fixture(scope="session")
def wiki_lines():
    from tests.text import corpus

    return corpus.wikipedia_lines()
