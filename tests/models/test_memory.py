"""Encoder sizes whose weights cannot fit in memory are refused up front, before any variable
is made."""

import re

import keras
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.models import memory
from keras_bert.models.memory import ModelTooLargeError

BASE = dict(vocab_size=100, hidden_size=768, num_hidden_layers=2, num_attention_heads=12,
            intermediate_size=3072)


@pytest.fixture
def variables_made(monkeypatch):
    """The paths of the Keras variables created while the test runs."""
    made = []
    init = keras.Variable.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self.path)

    monkeypatch.setattr(keras.Variable, "__init__", recording_init)
    return made


def _meminfo_total():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemTotal:\s+(\d+) kB", f.read()).group(1)) * 1024


def test_available_memory_is_a_positive_number_below_the_total():
    available = memory.available_memory()
    assert isinstance(available, int)
    assert 0 < available <= _meminfo_total()


@pytest.mark.parametrize("field, value, table", [
    ("max_position_embeddings", 10**9, r"position_embeddings \[1000000000, 768\]"),
    ("vocab_size", 10**9, r"word_embeddings \[1000000000, 768\]"),
    ("hidden_size", 1_200_000, r"attention/self/query/kernel \[1200000, 1200000\]"),
])
def test_huge_sizes_are_refused_when_the_encoder_is_built(field, value, table, variables_made):
    config = BertConfig(**dict(BASE, **{field: value}))
    weights = config.num_parameters() * 4
    with pytest.raises(ModelTooLargeError,
                       match=rf"^BertEncoder: the weights of this BertConfig take {weights:,} "
                             rf"bytes \(.*, float32\) and building them about [\d,]+ bytes .*"
                             rf"{table}, from \w+=\d+\), but only [\d,]+ bytes \(.*\) of memory "
                             rf"are available\.") as info:
        BertEncoder(config)
    # Refused by the arithmetic check, before any layer made a variable.
    assert info.traceback[-1].name == "check_weights_fit"
    assert variables_made == []


def test_mixed_precision_variables_are_counted_as_float32():
    config = BertConfig(**dict(BASE, max_position_embeddings=10**9))
    with pytest.raises(ModelTooLargeError, match=r"bytes \(.*, float32\)"):
        BertEncoder(config, dtype="mixed_bfloat16")


def test_weights_that_fit_but_whose_initializer_would_not_are_refused():
    # Weights of about half the memory available: the initializer's copies of the table
    # would take it past what is there. Only the check runs here, nothing is allocated.
    available = memory.available_memory()
    vocab_size = available // 2 // (4 * 768)
    config = BertConfig(**dict(BASE, vocab_size=vocab_size))
    assert config.num_parameters() * 4 < available
    with pytest.raises(ModelTooLargeError, match=rf"word_embeddings \[{vocab_size}, 768\]"):
        memory.check_weights_fit(config)


def test_sizes_that_fit_are_built(variables_made):
    memory.check_weights_fit(BertConfig())  # BERT-base: 440 MB of float32 weights
    encoder = BertEncoder(BertConfig(**BASE))
    assert encoder.count_params() == BertConfig(**BASE).num_parameters()
    assert {v.path for v in encoder.weights} <= set(variables_made)  # the recorder sees them
