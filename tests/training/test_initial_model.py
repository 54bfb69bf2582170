"""keras_bert/training/initial_model.py: the model a pre-training run starts from is built
once from its preset and is not compiled (the pre-training loop brings its own optimizer)."""

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
from keras_bert.training.initial_model import build_pretrainer
from tests.models.tiny import tiny_encoder


def test_the_pretrainer_is_built_without_an_optimizer(tmp_path):
    path = str(tmp_path / "preset")
    tiny_encoder().save_to_preset(path)
    from_config = build_pretrainer(bert_config_file=path + "/bert_config.json",
                                   max_seq_length=16, max_predictions_per_seq=2)
    from_checkpoint = build_pretrainer(init_checkpoint=path, max_seq_length=16,
                                       max_predictions_per_seq=2)
    for model in (from_config, from_checkpoint):
        assert getattr(model, "optimizer", None) is None and not model.compiled
