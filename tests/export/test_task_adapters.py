"""The serving adapters (keras_bert/export/task_adapters.py) are chosen by the task model's
class, a subclass by its nearest base's; other models are refused naming the task models.
What each adapter's signatures compute is tested through the exports (test_task_export.py,
test_litert.py)."""

import keras
import pytest

import keras_bert
from keras_bert.export import ExportError, task_adapters
from keras_bert.models import Task
from tests.models.tiny import VOCAB, tiny_encoder


def test_every_task_model_of_the_package_has_a_serving_adapter():
    tasks = {getattr(keras_bert.models, name) for name in keras_bert.models.__all__}
    tasks = {cls for cls in tasks if issubclass(cls, Task) and cls is not Task}
    assert tasks == set(task_adapters.SERVING_ADAPTERS)
    assert task_adapters.describe_tasks(litert=True) == (
        "BertClassifier, BertMultipleChoice, BertTextEmbedder")


class _MyClassifier(keras_bert.BertClassifier):
    pass


class _MeanScore(Task):
    def __init__(self, encoder, preprocessor=None, **kwargs):
        pooled = encoder(encoder.input)["pooled_output"]
        outputs = keras.layers.Dense(1)(pooled)
        super().__init__(inputs=encoder.input, outputs=outputs, encoder=encoder,
                         preprocessor=preprocessor, **kwargs)

    def default_loss(self):
        return "mse"


def test_a_subclass_gets_its_base_adapter_and_another_task_is_refused(tmp_path):
    preprocessor = keras_bert.BertPreprocessor(VOCAB, 8)
    mine = _MyClassifier(tiny_encoder(), 2, preprocessor=preprocessor)
    assert type(task_adapters.for_model(mine)) is task_adapters.ClassifierServing
    other = _MeanScore(tiny_encoder(), preprocessor=preprocessor)
    assert task_adapters.adapter_class(other) is None
    with pytest.raises(ExportError, match=r"A serving export is made from a keras_bert task "
                                          r"model \(BertClassifier, BertMultipleChoice, "
                                          r".*BertPretrainer, BertTextEmbedder\), "
                                          r"got _MeanScore\."):
        task_adapters.for_model(other)
    with pytest.raises(ExportError, match=r"export_model takes a keras_bert task model "
                                          r"\(BertClassifier, .*\), got _MeanScore\."):
        other.export(str(tmp_path / "m" / "1"))
    assert not (tmp_path / "m").exists()
