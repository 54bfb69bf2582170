"""`save_to_preset` of the task models (their `from_preset` is
`keras_bert.presets.preset_loader.task_from_preset`).

A task preset is keras_bert's layout (a Google checkpoint directory plus ``keras_bert.json``)
whose checkpoint also holds the head, under Google's names where Google has them
(``cls/predictions/*``, ``cls/seq_relationship/*``, ``cls/squad/*``, and run_classifier's
``output_weights`` / ``output_bias``), and whose metadata records the task (class and head
arguments) and the preprocessor's arguments, so ``BertClassifier.from_preset(saved_dir)``
rebuilds the same model without being told ``num_classes`` again.
"""

import numpy as np

from keras_bert import vocab
from keras_bert.presets.preset_loader import PREPROCESSOR_KEY, TASK_KEY, preprocessor_arguments

def head_weights(model):
    """The head's weights in Google's names and layouts (numpy)."""
    out = {}
    for name, (variable, transposed) in model.head_variables().items():
        value = np.asarray(variable.numpy(), dtype=np.float32)
        out[name] = value.T if transposed else value
    return out


def save_task_to_preset(model, directory):
    """Implements ``Task.save_to_preset``: encoder and head weights, config, vocabulary,
    casing, and the task's and preprocessor's arguments in ``keras_bert.json``."""
    from keras_bert.checkpoints import keras_bert_layout

    weights = model.encoder.get_canonical_weights()
    weights.update(head_weights(model))
    extra = {TASK_KEY: {"class_name": type(model).__name__, "config": model.head_config()}}
    tokenizer = getattr(model.preprocessor, "tokenizer", None)
    if model.preprocessor is not None:
        pre_config = model.preprocessor.get_config()
        extra[PREPROCESSOR_KEY] = {k: pre_config[k] for k in preprocessor_arguments(type(model))
                                   if k in pre_config}
    # The preprocessor's vocabulary and casing; without a preprocessor, the encoder's (what
    # its from_preset recorded), if any.
    if tokenizer is not None:
        tokens, do_lower_case = tokenizer.get_vocabulary(), tokenizer.do_lower_case
    else:
        tokens, do_lower_case = model.encoder.vocabulary, model.encoder.do_lower_case
    with vocab.vocabulary_file(tokens, beside=directory) as vocab_path:
        keras_bert_layout.write(directory, model.encoder.bert_config, weights, vocab_path=vocab_path,
                     do_lower_case=do_lower_case, name=model.name,
                     source=type(model).__name__, extra=extra)
    return directory
