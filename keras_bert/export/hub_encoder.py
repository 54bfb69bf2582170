"""`export_encoder`: a BERT encoder as a SavedModel in the TF Hub BERT encoder format.

What the SavedModel holds (the interface of TF Hub's ``bert_en_uncased_L-12_H-768_A-12/4``
and its kin, so code written for those works unchanged):

* ``__call__(inputs, training=False)`` (traced for ``training`` False and True): ``inputs``
  is a dict of int32 ``[batch, seq]`` tensors ``input_word_ids``, ``input_mask``,
  ``input_type_ids``; returns a dict: ``pooled_output`` ``[batch, hidden]``,
  ``sequence_output`` ``[batch, seq, hidden]``, ``encoder_outputs`` (a list, one
  ``[batch, seq, hidden]`` per transformer block) and ``default`` (the pooled output). All
  float32.
* the reusable-SavedModel attributes ``variables``, ``trainable_variables`` and
  ``regularization_losses`` (empty), so ``hub.KerasLayer(path, trainable=True)`` and
  `keras_bert.layers.SavedModelEncoder` fine-tune it;
* ``vocab_file`` (an asset: the WordPiece ``vocab.txt``, copied to ``assets/``) and
  ``do_lower_case`` (a bool `tf.Variable`);
* ``mlm``, when exported from a model with a masked-LM head (`BertMaskedLM`,
  `BertPretrainer`): ``mlm(inputs, training=False)`` takes the three inputs plus
  ``masked_lm_positions`` ``[batch, predictions]`` and returns the encoder's outputs plus
  ``mlm_logits`` ``[batch, predictions, vocab_size]``; it has its own ``variables`` and
  ``trainable_variables`` (the encoder's and the head's);
* a ``serving_default`` signature for TF Serving and ``saved_model_cli``: the three inputs
  -> ``pooled_output``, ``sequence_output``, ``default`` and ``encoder_outputs_<i>``.

Only core TensorFlow ops: loading it needs no tensorflow-text (`required_ops` is empty).
"""

import os

import tensorflow as tf

from keras_bert.export import export_dirs, modules
from keras_bert.export.export_dirs import ExportError
from keras_bert.layers import int8
from keras_bert.models import lora
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task import Task
from keras_bert import vocab as vocab_lib


def export_encoder(model, export_dir, vocabulary=None, do_lower_case=None):
    """Writes the encoder of ``model`` to ``export_dir`` in the TF Hub BERT encoder format.

    Args:
        model: a `BertEncoder`, or a task model (its encoder is exported; from a
            `BertMaskedLM` or `BertPretrainer` with the ``mlm`` subobject too). With LoRA
            enabled, the export is of a copy with the factors merged into the kernels and
            every weight trainable, as a fine-tunable TF Hub encoder is.
        export_dir: a new (or empty) local directory; written atomically.
        vocabulary: the WordPiece vocabulary (a ``vocab.txt`` path or a list of tokens) for
            the ``vocab_file`` asset. Default: the encoder's (``from_preset`` records it) or
            the task model's preprocessor's.
        do_lower_case: the casing recorded in the export. Default: as the vocabulary's
            source says.

    Returns:
        The absolute path of the export.

    Raises:
        ExportError: a model that is not a `BertEncoder` or task model; no vocabulary or
            casing to be found; a vocabulary whose size differs from the encoder's
            ``vocab_size``; a bad ``export_dir`` (see `keras_bert.export.export_dirs`).

    Example:

    >>> import tempfile, numpy as np, tensorflow as tf
    >>> from keras_bert import BertEncoder
    >>> from keras_bert.export import export_encoder
    >>> encoder = BertEncoder.from_preset("tiny_random")  # its vocabulary and casing go along
    >>> path = export_encoder(encoder, tempfile.mkdtemp() + "/encoder")
    >>> loaded = tf.saved_model.load(path)
    >>> ids = tf.constant([[2, 5, 6, 3]])
    >>> out = loaded({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
    ...               "input_type_ids": tf.zeros_like(ids)}, training=False)
    >>> out["sequence_output"].shape, len(out["encoder_outputs"])
    (TensorShape([1, 4, 16]), 1)
    >>> bool(loaded.do_lower_case.numpy()), len(loaded.trainable_variables)
    (True, 23)
    """
    _encoder_of(model)  # an ExportError for another kind of model, before anything else
    export_dir = export_dirs.check_target(export_dir)  # before any tracing
    model = lora.for_export(model)  # LoRA factors merged into the kernels, all trainable
    encoder, mlm_model = _encoder_of(model)
    tokens, lower = vocabulary_of(model, encoder, vocabulary, do_lower_case)
    with vocab_lib.vocabulary_file(tokens, beside=os.path.dirname(export_dir)) as vocab_path:
        root = encoder_module(encoder, mlm_model, vocab_path, lower)
        serving = _serving_function(root)
        with int8.constant_weights():  # int8 kernels are not trainable: oneDNN caches them
            return export_dirs.save(root, export_dir, signatures={"serving_default": serving})


def encoder_module(encoder, mlm_model=None, vocab_path=None, do_lower_case=None):
    """The TF Hub-format root object of ``encoder`` (see the module docstring), unsaved."""
    root = modules.attach_variables(modules.Module(), encoder)
    specs = modules.packed_specs()

    def call(inputs, training=False):
        outputs = encoder({name: inputs[name] for name in modules.INPUT_NAMES},
                          training=training)
        return modules.float32(_hub_outputs(outputs))

    root.__call__ = tf.function(call, autograph=False)
    for training in (False, True):
        root.__call__.get_concrete_function(specs, training=training)
    if vocab_path is not None:
        root.vocab_file = tf.saved_model.Asset(vocab_path)
    if do_lower_case is not None:
        root.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False,
                                         name="do_lower_case")
    if mlm_model is not None:
        root.mlm = _mlm_module(encoder, mlm_model)
    return root


def _hub_outputs(outputs):
    return {"pooled_output": outputs["pooled_output"],
            "sequence_output": outputs["sequence_output"],
            "encoder_outputs": list(outputs["encoder_outputs"]),
            "default": outputs["pooled_output"]}


def _mlm_module(encoder, model):
    """``mlm``: the encoder and the masked-LM head of ``model`` at ``masked_lm_positions``."""
    mlm = modules.attach_variables(modules.Module(), model)
    # The Pretrainer's next-sentence head is no part of it.
    head = {id(v.value) for v in encoder.variables + model.mlm_head.variables}
    mlm.variables = [v for v in mlm.variables if id(v) in head]
    mlm.trainable_variables = [v for v in mlm.trainable_variables if id(v) in head]
    specs = modules.packed_specs(extra=("masked_lm_positions",))

    def call(inputs, training=False):
        outputs = encoder({name: inputs[name] for name in modules.INPUT_NAMES},
                          training=training)
        result = _hub_outputs(outputs)
        result["mlm_logits"] = model.mlm_head(outputs["sequence_output"],
                                              inputs["masked_lm_positions"], training=training)
        return modules.float32(result)

    mlm.__call__ = tf.function(call, autograph=False)
    for training in (False, True):
        mlm.__call__.get_concrete_function(specs, training=training)
    return mlm


def _serving_function(root):
    @tf.function(input_signature=[modules.packed_specs()], autograph=False)
    def serving_default(inputs):
        return modules.flat(root.__call__(inputs, training=False))

    return serving_default


def _encoder_of(model):
    """(the encoder, the model with an MLM head or None)."""
    if isinstance(model, BertEncoder):
        return model, None
    if isinstance(model, Task) and isinstance(getattr(model, "encoder", None), BertEncoder):
        return model.encoder, model if getattr(model, "mlm_head", None) is not None else None
    raise ExportError(f"export_encoder takes a BertEncoder or a keras_bert task model, got "
                      f"{type(model).__name__}.")


def vocabulary_of(model, encoder, vocabulary, do_lower_case):
    """(tokens, do_lower_case) for the export, from the arguments or what the model knows."""
    tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    if vocabulary is not None:
        tokens = vocab_lib.load_vocabulary(vocabulary)
        vocab_lib.check_vocabulary(tokens, path=vocabulary if isinstance(vocabulary, str)
                                   else None)
    elif encoder.vocabulary is not None:
        tokens = list(encoder.vocabulary)
    elif tokenizer is not None and tokenizer.vocabulary is not None:
        tokens = list(tokenizer.vocabulary)
    else:
        raise ExportError(
            "The TF Hub encoder format carries the vocabulary (vocab_file), but this encoder "
            "has none (from_preset records it; a model built from a config does not): pass "
            "vocabulary= (a vocab.txt path or a list of tokens) and do_lower_case=.")
    size = encoder.bert_config.vocab_size
    if len(tokens) != size:
        raise ExportError(f"The vocabulary has {len(tokens)} tokens but the encoder's "
                          f"vocab_size is {size}: they do not belong together.")
    if do_lower_case is None:
        do_lower_case = encoder.do_lower_case
    if do_lower_case is None and tokenizer is not None:
        do_lower_case = tokenizer.do_lower_case
    if do_lower_case is None:
        raise ExportError("The TF Hub encoder format records do_lower_case, and this "
                          "encoder does not know its casing: pass do_lower_case=True "
                          "(uncased vocabulary) or False (cased).")
    if not isinstance(do_lower_case, bool):
        raise ExportError(f"do_lower_case must be True or False, got {do_lower_case!r}.")
    return tokens, do_lower_case
