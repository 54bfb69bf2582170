"""keras_bert/export/task_serving.py: what every task's serving adapter shares (the base class
`TaskServing`): the options checked before anything is traced, each refusal naming the
option, the model and what it takes; the signatures' input specs; text packed by the model's
own preprocessor."""

import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertTokenClassifier
from keras_bert.export import ExportError, task_adapters
from keras_bert.export.task_serving import TaskServing, strings
from keras_bert.text.token_classifier_preprocessor import BertTokenClassifierPreprocessor


@pytest.fixture(scope="module")
def classifier():
    return BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)


def test_every_adapter_is_a_task_serving():
    assert all(issubclass(adapter, TaskServing)
               for adapter in task_adapters.SERVING_ADAPTERS.values())


def test_input_specs(classifier):
    serving = task_adapters.for_model(classifier)
    assert list(serving.text_specs()) == ["text"] and serving.describe_inputs() == "text"
    pairs = task_adapters.for_model(classifier, pairs=True)
    assert pairs.describe_inputs() == "text_a, text_b"
    assert sorted(pairs.ids_specs()) == ["input_mask", "input_type_ids", "input_word_ids"]
    spec = strings("text", shape=(None, 3))["text"]
    assert spec.dtype == tf.string and spec.shape.as_list() == [None, 3]


def test_text_is_packed_by_the_models_preprocessor(classifier):
    serving = task_adapters.for_model(classifier)
    texts = ["a great movie", "dull"]
    inputs, extras = serving.pack({"text": tf.constant(texts)})
    want = classifier.preprocessor(tf.constant(texts))
    for name in want:
        assert inputs[name].numpy().tolist() == want[name].numpy().tolist(), name
    assert extras == {}


def test_a_preprocessor_of_another_kind_is_refused():
    model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    model.preprocessor = BertTokenClassifierPreprocessor(model.preprocessor.tokenizer,
                                                         seq_length=8)
    with pytest.raises(ExportError, match="packs text with a BertPreprocessor; this model's "
                                          "preprocessor is a BertTokenClassifierPreprocessor"):
        task_adapters.for_model(model)


@pytest.mark.parametrize("options, message", [
    (dict(pairs="yes"), "pairs"),
    (dict(top_k=0), "top_k"),
    (dict(max_answer_length=-1), "max_answer_length"),
    (dict(label_names=["only one"]), "label_names must be 2 strings"),
])
def test_bad_options_are_refused_by_name(classifier, options, message):
    with pytest.raises((ExportError, ValueError, TypeError), match=message):
        task_adapters.for_model(classifier, **options)


def test_pairs_and_labels_only_where_the_task_has_them():
    tagger = BertTokenClassifier.from_preset("tiny_random", num_classes=3, seq_length=8)
    with pytest.raises(ExportError, match="BertTokenClassifier takes no sentence pairs"):
        task_adapters.for_model(tagger, pairs=True)
    from keras_bert import BertTextEmbedder

    embedder = BertTextEmbedder.from_preset("tiny_random", seq_length=8)
    with pytest.raises(ExportError, match="BertTextEmbedder has no class labels"):
        task_adapters.for_model(embedder, label_names=["a", "b"])
