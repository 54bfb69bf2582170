"""`export_model` (what ``model.export(dir)`` runs): a task model as an end-to-end serving
SavedModel, raw text in, scores and labels out, for TF Serving.

Signatures (stable: clients and `keras_bert`'s local server rely on them). Every export
has two; batch sizes are free, text inputs are ``tf.string``, ids int32:

``serving_default``: raw text in, tokenized and packed inside the graph.
``serving_ids``: packed inputs in: ``input_word_ids``, ``input_mask``, ``input_type_ids``
[batch, seq] (``seq`` up to ``max_position_embeddings``), for clients that tokenize
themselves; the outputs that need no text.

Per task (``serving_default`` inputs -> outputs; "text only" outputs are not in
``serving_ids``):

* `BertClassifier`: ``text`` [batch], or with ``pairs=True`` ``text_a``, ``text_b``
  [batch] -> ``logits``, ``probabilities`` float32 [batch, num_classes], ``label_ids``
  int32 [batch] (the argmax), and ``labels`` string [batch] when the model has
  ``label_names`` or is exported with them. Regression (``num_classes=1``): ``score``
  float32 [batch]. Multi-label (``multi_label=True``): ``logits``, ``probabilities`` float32
  [batch, num_classes], each class's sigmoid, and with label names ``labels`` string [batch,
  num_classes], the name of each class whose probability is above 0.5 ("" for the others).
* `BertTokenClassifier`: ``text`` [batch] (words separated by whitespace, as ``predict``
  splits them) -> per token ``logits``, ``probabilities`` float32 [batch, seq, num_classes]
  and ``label_ids`` int32 [batch, seq]; text only, per word: ``words`` string [batch, words]
  ("" padding), ``word_label_ids`` int32 [batch, words] (the label of each word's first
  piece; -1 for padding and words cut off by ``seq_length``), and ``word_labels`` string
  with label names ("" for -1).
* `BertSpanLabeler`: ``question``, ``context`` [batch] -> ``start_logits``, ``end_logits``
  float32 [batch, seq]; ``start_index``, ``end_index`` int32 [batch], the best span in the
  context of at most ``max_answer_length`` tokens (0, 0: none); text only: ``answer``
  string [batch], the span's WordPiece text (lower-cased for uncased models).
* `BertMultipleChoice`: ``context`` [batch], ``choices`` string [batch, num_choices] ->
  ``logits``, ``probabilities`` float32 [batch, num_choices], ``label_ids`` int32 [batch]
  (the chosen index). ``serving_ids`` takes its ids as [batch, num_choices, seq].
* `BertMaskedLM`, `BertPretrainer`: ``text`` [batch] with ``[MASK]`` written where tokens
  are to be predicted (``pairs=True``: ``text_a``, ``text_b``); ``serving_ids`` also takes
  ``masked_lm_positions`` int32 [batch, predictions] -> at each mask the ``top_k``
  predictions ``top_ids`` int32, ``top_probabilities`` float32, ``top_tokens`` string
  [batch, predictions, top_k]; `BertPretrainer` adds ``next_sentence_probabilities`` float32
  [batch, 2] (index 0: text_b follows text_a); text only: ``masked_lm_positions`` int32 and
  ``masked_lm_weights`` float32 [batch, predictions] (1 for a mask, 0 for padding).
* `BertTextEmbedder`: ``text`` [batch] -> ``embeddings`` float32 [batch, dim], what
  ``encode`` gives (``serving_default`` puts the model's default prompt, if it has one, before
  each text; ``serving_ids`` embeds the ids as given). The SavedModel is also callable on
  strings [batch] -> [batch, dim], as TF Hub's text embedding models are
  (``tf.saved_model.load(path)(texts)``, ``hub.KerasLayer(path)``).

Text is packed as the model's preprocessor packs it (its ``seq_length``, truncation and
casing), so a served prediction equals ``model.predict`` on the same strings. The graph
needs tensorflow-text's tokenizer ops (``import tensorflow_text`` before loading it; a TF
Serving binary must have them registered, see `keras_bert.export.required_ops`).

The SavedModel goes to TF Serving's layout ``<base>/<name>/<version>``: ``export_dir`` is
the version directory (a number, e.g. ``/models/sentiment/1``), and
``tensorflow_model_server --model_name=sentiment --model_base_path=/models/sentiment``
serves it (the newest version under the base path).
"""

import tensorflow as tf

from keras_bert.export import export_dirs, modules, task_adapters, warmup_requests as warmup
from keras_bert.export.export_dirs import ExportError
from keras_bert.layers import serving_graph
from keras_bert.models import export_formats, lora
from keras_bert.text.packer import trim_padding

SIGNATURES = ("serving_default", "serving_ids")


@export_formats.register("tf_saved_model")
def export_model(model, export_dir, pairs=False, label_names=None, top_k=5,
                 max_answer_length=30, verbose=False, input_signature=None,
                 warmup_requests=None):
    """Writes the serving SavedModel of the task ``model`` to ``export_dir`` (the version
    directory ``<base>/<name>/<version>``), atomically. ``model.export(export_dir, ...)``
    calls it.

    Args:
        model: a keras_bert task model with a preprocessor.
        export_dir: the version directory (its name a number); new or empty.
        pairs: `BertClassifier`, `BertMaskedLM`, `BertPretrainer`: ``serving_default``
            takes sentence pairs ``text_a``, ``text_b`` instead of ``text``.
        label_names: class names (`BertClassifier`, `BertTokenClassifier`): adds
            ``labels`` (``word_labels``) outputs. Default: the model's ``label_names``.
        top_k: predictions per mask (`BertMaskedLM`, `BertPretrainer`).
        max_answer_length: longest answer span in tokens (`BertSpanLabeler`).
        verbose: print where the export went and its signatures.
        input_signature: must be None (Keras' ``export`` argument): the signatures are fixed.
        warmup_requests: texts TF Serving replays before the version serves (one
            ``serving_default`` request each, in ``assets.extra/tf_serving_warmup_requests``;
            `keras_bert.export.warmup_requests`), or None for none.

    Returns:
        The absolute path of the export.

    Raises:
        ExportError: a model that is not a task model, has no preprocessor, an option the
            task does not take, a bad ``export_dir`` (not a version number, not empty).

    Example:

    >>> import tempfile, tensorflow as tf
    >>> import tensorflow_text  # registers the tokenizer's ops for loading
    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> path = model.export(tempfile.mkdtemp() + "/sentiment/1",
    ...                     label_names=["negative", "positive"])
    >>> serve = tf.saved_model.load(path).signatures["serving_default"]
    >>> out = serve(text=tf.constant(["a great movie", "dull"]))
    >>> sorted(out), out["probabilities"].shape
    (['label_ids', 'labels', 'logits', 'probabilities'], TensorShape([2, 2]))
    """
    if task_adapters.adapter_class(model) is None:
        raise ExportError(f"export_model takes a keras_bert task model "
                          f"({task_adapters.describe_tasks()}), got {type(model).__name__}.")
    if input_signature is not None:
        raise ExportError(
            "input_signature: the serving export's signatures are fixed (serving_default "
            "takes text, serving_ids the packed ids); see keras_bert.export.task_export.")
    if model.preprocessor is None:
        raise ExportError(
            f"This {type(model).__name__} has no preprocessor (preprocessor=None), so its "
            "serving export cannot take text: attach one (model.preprocessor = "
            "BertPreprocessor.from_preset(...)), or export the encoder alone "
            "(keras_bert.export.export_encoder).")
    export_dir = export_dirs.check_target(export_dir, versioned=True)  # before tracing anything
    model = lora.for_export(model)  # LoRA factors merged into the kernels
    task = task_adapters.for_model(model, pairs=pairs, label_names=label_names, top_k=top_k,
                                   max_answer_length=max_answer_length)
    records = None
    if warmup_requests is not None:
        try:
            records = warmup.text_records(task.text_specs(), warmup_requests)
        except ValueError as error:
            raise ExportError(str(error)) from None
    root = serving_module(model, task)
    task.add_functions(root)
    signatures = {name: getattr(root, name) for name in SIGNATURES}
    path = export_dirs.save(root, export_dir, signatures=signatures, versioned=True,
                            write_more=records and (lambda tmp: warmup.write(tmp, records)))
    if verbose:
        print(f"Saved the serving SavedModel of {type(model).__name__} to {path}: "
              f"serving_default({task.describe_inputs()}), "
              f"serving_ids({', '.join(task.ids_specs())}).")
    return path


# Formats of Keras' own `Model.export` that keras_bert's task models refuse (`refused_format`).
REFUSED_FORMATS = ("onnx", "openvino", "torch")


def refused_format(format):
    """The writer ``model.export(path, format=format)`` runs for a format of Keras' own that
    keras_bert does not support: it raises `ExportError` naming the formats that work.

    Keras' ONNX and OpenVINO exports need tf2onnx or openvino (keras_bert neither installs
    nor tests them) and would take packed ids only, without the tokenizer; ``"torch"`` needs
    Keras' torch backend.

    >>> refused_format("onnx")(None, "/tmp/model.onnx")
    Traceback (most recent call last):
    ...
    keras_bert.export.export_dirs.ExportError: format='onnx': keras_bert's task models export as format='tf_saved_model' (the default: the TF Serving SavedModel, raw strings in) or format='litert' (a .tflite with the tokenizer inside, for CPUs and phones). Keras' own 'onnx', 'openvino' and 'torch' exports are not supported: they would take packed ids without the tokenizer, and need packages keras_bert does not install or test. For ONNX Runtime's or OpenVINO's speed on a CPU, export format='litert' (quantize='int8' for int8 weights).
    """
    def refuse(model, filepath, verbose=False, input_signature=None, **options):
        raise ExportError(
            f"format={format!r}: keras_bert's task models export as format='tf_saved_model' "
            "(the default: the TF Serving SavedModel, raw strings in) or format='litert' (a "
            ".tflite with the tokenizer inside, for CPUs and phones). Keras' own 'onnx', "
            "'openvino' and 'torch' exports are not supported: they would take packed ids "
            "without the tokenizer, and need packages keras_bert does not install or test. "
            "For ONNX Runtime's or OpenVINO's speed on a CPU, export format='litert' "
            "(quantize='int8' for int8 weights).")
    return refuse


for _format in REFUSED_FORMATS:  # Keras' other formats: an ExportError naming the two
    export_formats.register(_format)(refused_format(_format))


def serving_module(model, task):
    """The root object: the two signature functions, around one function of the model's
    packed inputs traced for serving (`traced_forward`). The root holds the variables that
    function reads (``root.variables``): the model's own, less those read only at trace time
    (e.g. query, key and value kernels concatenated into one), and the weights computed
    from them (`keras_bert.layers.serving_graph.building`)."""
    specs = task.ids_specs()
    forward, variables = traced_forward(model, specs)
    structure = forward.structured_outputs
    root = modules.Module()
    root.variables, root.trainable_variables, root.regularization_losses = variables, [], []

    def call(inputs):
        if sorted(inputs) != sorted(specs):
            raise ExportError(f"{type(model).__name__}: its preprocessor packs "
                              f"{sorted(inputs)}, its serving_ids takes {sorted(specs)}.")
        flat = [tf.cast(inputs[name], spec.dtype) for name, spec in
                zip(sorted(specs), tf.nest.flatten(specs))]
        outputs = forward(dict(zip(sorted(specs), flat)))
        return tf.nest.pack_sequence_as(structure, tf.nest.flatten(outputs))

    def from_text(texts):
        inputs, extras = task.pack(texts)
        return modules.float32(task.text_outputs(texts, inputs, extras, call(inputs)))

    def from_ids(inputs):
        return modules.float32(task.outputs(inputs, call(inputs)))

    root.serving_default = tf.function(from_text, input_signature=[task.text_specs()],
                                       autograph=False)
    root.serving_ids = tf.function(from_ids, input_signature=[task.ids_specs()], autograph=False)
    return root


def traced_forward(model, specs):
    """``model(inputs, training=False)`` on packed ids of ``specs``, traced for serving
    (`keras_bert.layers.serving_graph.building`: weights read at trace time, those it
    computes from them kept in new variables): the concrete function and the variables it
    reads. The batch is cut to its longest sequence when the model does so in ``predict``
    (``trim_predictions``). A call of at most `serving_graph.small_tokens` tokens (batch 1
    of a short text) takes a graph traced for it, every choice by size made at trace time,
    in one cond beside the general graph: the same outputs, fewer nodes per call."""
    small = serving_graph.small_tokens(model) if "input_word_ids" in specs else None

    def run(inputs):
        if model.trim_predictions:  # the batch cut to its longest sequence: the same outputs
            inputs = trim_padding(inputs)[0]
        if not small:
            return model(inputs, training=False)

        def few():
            with serving_graph.bounded(small):
                return model(inputs, training=False)

        return tf.cond(tf.size(inputs["input_word_ids"]) <= small, few,
                       lambda: model(inputs, training=False))

    made = []
    with serving_graph.building(constants=True, variables=made):
        forward = tf.function(run, autograph=False).get_concrete_function(specs)
    captured = {id(t) for t in forward.captured_inputs}
    return forward, [v for v in [v.value for v in model.variables] + made
                     if id(v.handle) in captured]
