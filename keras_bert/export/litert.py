"""`export_litert` (what ``model.export(path, format="litert")`` runs): a task model or an
encoder as one LiteRT (TensorFlow Lite) flatbuffer, raw strings in, the tokenizer inside.

Signatures, as the serving SavedModel's (`keras_bert.export.task_export`; batch sizes free):

``serving_default``: raw text in, tokenized and packed inside the model.
``serving_ids``: packed ids in (``input_word_ids``, ``input_mask``, ``input_type_ids``
int32 [batch, seq]), for clients that tokenize themselves.

* `BertClassifier`: ``text`` [batch] (``pairs=True``: ``text_a``, ``text_b``) ->
  ``logits``, ``probabilities`` float32 [batch, num_classes], ``label_ids`` int32 [batch],
  ``labels`` string [batch] with label names; regression: ``score`` float32 [batch].
* `BertMultipleChoice`: ``context`` [batch], ``choices`` [batch, num_choices] ->
  ``logits``, ``probabilities`` [batch, num_choices], ``label_ids`` [batch];
  ``serving_ids`` takes [batch, num_choices, seq].
* `BertTextEmbedder`: ``text`` [batch] -> ``embeddings`` float32 [batch, dim] (a model
  with a default prompt is refused: LiteRT cannot join strings; the SavedModel puts it in).
* `BertEncoder` (or a task model's, with ``encoder_only=True``): ``text`` (or ``text_a``,
  ``text_b``) -> ``pooled_output`` float32 [batch, hidden], ``sequence_output`` float32
  [batch, seq, hidden] and ``input_mask`` int32 [batch, seq] (1 on tokens, 0 on padding);
  ``serving_ids`` -> ``pooled_output``, ``sequence_output``.

The other task models (token classification, span labeling, masked LM, pre-training) are
refused: their text outputs (words, answers, predicted tokens) need string ops LiteRT lacks.

Each batch is packed to its longest sequence, rounded up to 8 (at most the preprocessor's
``seq_length``), as the SavedModel's signatures cut theirs: the outputs are those of the full
length, and ``seq`` above is that length. Text is tokenized by tensorflow-text's
``FastBertNormalize`` and ``FastWordpieceTokenize`` with a normalization table written to
give the ids of `BertTokenizer` (`keras_bert.export.litert_text`, where the two rare
differences are listed). Every other op is a LiteRT builtin (no Flex ops, no TensorFlow
inside); running the model needs those two tensorflow-text kernels registered
(`keras_bert.export.litert_model.load` does it).

``quantize="int8"`` is LiteRT's dynamic-range quantization (Keras' spelling:
``optimizations=[tf.lite.Optimize.DEFAULT]``): int8 weights, activations quantized on the
fly by the kernels (XNNPACK's), float32 in and out.
"""

import os
import re
import tempfile

import tensorflow as tf

from keras_bert import backend, checks, storage
from keras_bert.export import litert_model, litert_text, modules, task_adapters
from keras_bert.export.hub_encoder import vocabulary_of
from keras_bert.export.export_dirs import ExportError
from keras_bert.models import export_formats, lora, quantization
from keras_bert.models.encoder import BertEncoder
from keras_bert.text.packer import trim_padding
from keras_bert.text.preprocessor import BertPreprocessor, sync_packer
from keras_bert.text.tokenizer import BertTokenizer

SIGNATURES = ("serving_default", "serving_ids")
QUANTIZE = (None, "int8")
SUFFIX = ".tflite"


@export_formats.register("litert")
def export_litert(model, filepath, quantize=None, pairs=False, label_names=None,
                  encoder_only=False, seq_length=None, vocabulary=None, do_lower_case=None,
                  optimizations=None, verbose=False, input_signature=None):
    """Writes ``model`` as a LiteRT model (a ``.tflite`` file) that takes raw strings (see
    the module docstring). ``model.export(filepath, format="litert", ...)`` calls it.

    Args:
        model: a `BertClassifier`, `BertMultipleChoice` or `BertTextEmbedder` with a
            preprocessor, or a `BertEncoder`.
        filepath: the ``.tflite`` file to write (local, ``gs://``, any `tf.io.gfile` path),
            written atomically. For TF Serving's layout with ``--prefer_tflite_model``:
            ``<base>/<name>/<version>/model.tflite``.
        quantize: None (float32) or ``"int8"`` (dynamic-range quantization).
        pairs: ``serving_default`` takes ``text_a``, ``text_b`` (classifier, encoder).
        label_names: class names (classifier): adds a ``labels`` output. Default: the
            model's ``label_names``.
        encoder_only: export a task model's encoder, with its preprocessor's tokenizer.
        seq_length: the longest packed sequence (encoder; default: the task model's
            preprocessor's, else 128).
        vocabulary, do_lower_case: the encoder's tokenizer (default: what ``from_preset``
            recorded on the encoder, or the task model's preprocessor).
        optimizations: Keras' spelling of ``quantize``: ``[tf.lite.Optimize.DEFAULT]`` is
            ``quantize="int8"``; ``[]`` or None is float32.
        verbose: print where the model went, its size and its signatures.
        input_signature: must be None (Keras' argument): the signatures are fixed.

    Returns:
        ``filepath``.

    Raises:
        ExportError: a model of another kind or task, no preprocessor (task model) or no
            vocabulary (encoder), a bad option, a path that does not end in ``.tflite``, a
            conversion that fails.

    Example:

    >>> import tempfile
    >>> import numpy as np
    >>> from keras_bert import BertClassifier
    >>> from keras_bert.export import litert_model
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> path = model.export(tempfile.mkdtemp() + "/sentiment.tflite", format="litert")
    >>> lite = litert_model.load(path)
    >>> out = lite(text=np.array([b"a great movie", b"dull"], dtype=object))
    >>> sorted(out), out["probabilities"].shape
    (['label_ids', 'logits', 'probabilities'], (2, 2))
    """
    if input_signature is not None:
        raise ExportError("input_signature: the LiteRT export's signatures are fixed "
                          "(serving_default takes text, serving_ids the packed ids).")
    quantize = _quantization(quantize, optimizations)
    filepath = check_path(filepath)
    pairs = checks.boolean("pairs", pairs)
    encoder_only = checks.boolean("encoder_only", encoder_only)
    model = lora.for_export(model)  # LoRA factors merged into the kernels
    if isinstance(model, BertEncoder) or encoder_only:
        if label_names is not None:
            raise ExportError("label_names: an encoder has no class labels.")
        root, signatures = _encoder_module(model, pairs, seq_length, vocabulary,
                                           do_lower_case)
    else:
        for name, value in (("seq_length", seq_length), ("vocabulary", vocabulary),
                            ("do_lower_case", do_lower_case)):
            if value is not None:
                raise ExportError(f"{name}: only an encoder export takes it (a task model "
                                  "packs text as its preprocessor does).")
        root, signatures = _task_module(model, pairs, label_names)
    data = convert(root, signatures, quantize)
    storage.write_bytes(filepath, data)
    if verbose:
        print(f"Saved the LiteRT model of {type(model).__name__} to {filepath} "
              f"({len(data) / 2**20:.1f} MiB, {quantize or 'float32'}): "
              + ", ".join(f"{key}({', '.join(sorted(fn.input_signature[0]))})"
                          for key, fn in signatures.items()))
    return filepath


def check_path(filepath):
    """``filepath`` as a str, or ExportError: a ``.tflite`` file, not a directory."""
    if not isinstance(filepath, (str, os.PathLike)) or not os.fspath(filepath):
        raise ExportError(f"filepath must be a path ending in {SUFFIX}, got {filepath!r}.")
    filepath = os.fspath(filepath)
    if not filepath.endswith(SUFFIX):
        raise ExportError(
            f"filepath={filepath}: a LiteRT model is one file whose name ends in {SUFFIX} "
            f"(for TF Serving's --prefer_tflite_model: <version directory>/"
            f"{litert_model.SERVING_FILE}).")
    if not storage.is_remote(filepath):
        filepath = os.path.abspath(filepath)
    if storage.isdir(filepath):
        raise ExportError(f"filepath={filepath} is a directory.")
    return filepath


def _quantization(quantize, optimizations):
    if optimizations is not None:
        if quantize is not None:
            raise ExportError("Pass quantize= or optimizations=, not both.")
        optimizations = list(optimizations)
        if optimizations == [tf.lite.Optimize.DEFAULT]:
            return "int8"
        if optimizations:
            raise ExportError(
                f"optimizations={optimizations!r}: the LiteRT export takes [] (float32) or "
                "[tf.lite.Optimize.DEFAULT] (dynamic-range int8), or quantize='int8'.")
        return None
    if quantize not in QUANTIZE:
        raise ExportError(f"quantize must be one of {QUANTIZE}, got {quantize!r}.")
    return quantize


def _task_module(model, pairs, label_names):
    """(root, signatures) of a task model."""
    if getattr(model, "preprocessor", 1) is None:
        raise ExportError(
            f"This {type(model).__name__} has no preprocessor (preprocessor=None), so its "
            "LiteRT export cannot take text: attach one, or export the encoder alone.")
    task = task_adapters.for_model(model, pairs=pairs, label_names=label_names)
    if not task.litert:
        raise ExportError(
            f"The LiteRT export takes a {task_adapters.describe_tasks(litert=True)} or "
            f"BertEncoder, got {type(model).__name__}: its text outputs need string ops that "
            f"LiteRT has no kernels for. Export its SavedModel (model.export(dir)), or its "
            f"encoder (model.export(path, format='litert', encoder_only=True)).")
    task.check_litert()
    if quantization.quantized_layers(model):
        raise ExportError(
            "This model is quantized by Keras (model.quantize); its LiteRT export would hold "
            "Keras' int8 graph. Export the float32 model with quantize='int8' instead "
            "(LiteRT's own int8 kernels).")
    preprocessor = model.preprocessor
    tokenizer = litert_text.fast_bert_tokenizer(preprocessor.tokenizer)
    sync_packer(preprocessor.packer, preprocessor.tokenizer)
    root = modules.attach_variables(modules.Module(), model)

    def run(inputs):
        if model.trim_predictions:
            inputs = trim_padding(inputs)[0]
        return model(inputs, training=False)

    def from_text(texts):
        inputs = task.pack_tokens(lambda text: _tokenize(tokenizer, text), texts)
        return modules.float32(task.outputs(inputs, run(inputs)))

    def from_ids(inputs):
        return modules.float32(task.outputs(inputs, run(inputs)))

    return root, _signatures(root, from_text, task.text_specs(), from_ids, task.ids_specs())


def _tokenize(tokenizer, text):
    """Strings [batch] -> ragged int32 ids [batch, (tokens)] (LiteRT's tokenizer)."""
    return tokenizer.tokenize(text).with_row_splits_dtype(tf.int32)


def _encoder_module(model, pairs, seq_length, vocabulary, do_lower_case):
    """(root, signatures) of an encoder (a `BertEncoder`, or a task model's)."""
    encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        raise ExportError(f"encoder_only=True takes a keras_bert task model, got "
                          f"{type(model).__name__}.")
    preprocessor = getattr(model, "preprocessor", None)
    if vocabulary is None and do_lower_case is None and isinstance(
            preprocessor, BertPreprocessor):
        tokenizer = preprocessor.tokenizer
    else:
        tokens, lower = vocabulary_of(model, encoder, vocabulary, do_lower_case)
        tokenizer = BertTokenizer(tokens, do_lower_case=lower)
    if seq_length is None:
        seq_length = preprocessor.seq_length if isinstance(preprocessor,
                                                           BertPreprocessor) else 128
    seq_length = checks.integer("seq_length", seq_length, minimum=3,
                                maximum=encoder.bert_config.max_position_embeddings)
    packer = BertPreprocessor(tokenizer, seq_length=seq_length).packer
    fast = litert_text.fast_bert_tokenizer(tokenizer)
    root = modules.attach_variables(modules.Module(), encoder)
    names = ("text_a", "text_b") if pairs else ("text",)

    def run(inputs):
        inputs = trim_padding(inputs)[0]
        outputs = encoder(inputs, training=False)
        return inputs, {"pooled_output": outputs["pooled_output"],
                        "sequence_output": outputs["sequence_output"]}

    def from_text(texts):
        inputs, outputs = run(packer([_tokenize(fast, texts[name]) for name in names]))
        return modules.float32({**outputs, "input_mask": inputs["input_mask"]})

    def from_ids(inputs):
        return modules.float32(run(inputs)[1])

    text_specs = {name: tf.TensorSpec([None], tf.string, name=name) for name in names}
    return root, _signatures(root, from_text, text_specs, from_ids, modules.packed_specs())


def _signatures(root, from_text, text_specs, from_ids, ids_specs):
    # (Attribute names other than `serve`, which the converter takes for a Keras export.)
    root.text_signature = tf.function(from_text, input_signature=[text_specs], autograph=False)
    root.ids_signature = tf.function(from_ids, input_signature=[ids_specs], autograph=False)
    return {"serving_default": root.text_signature, "serving_ids": root.ids_signature}


def convert(root, signatures, quantize=None):
    """The LiteRT flatbuffer (bytes) of ``signatures`` (name -> tf.function of ``root``):
    LiteRT builtins and tensorflow-text's kernels only. ExportError when the converter
    fails or leaves an op outside those."""
    with storage.staging_dir(tempfile.gettempdir(), prefix=".tmp-keras_bert_litert_") as tmp:
        tf.saved_model.save(root, tmp, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp,
                                                             signature_keys=list(signatures))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # tensorflow-text's kernels, checked below
        if quantize == "int8":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        try:
            with backend.quiet_native_stderr(drop=converter_notices):
                data = converter.convert()
        except Exception as error:  # the converter's errors have no common class
            raise ExportError(f"The LiteRT converter failed: {_first_lines(error)}") from None
    others = set(litert_model.custom_ops(data)) - set(litert_model.REGISTRARS)
    if others:
        raise ExportError(f"The LiteRT model needs ops without LiteRT kernels: "
                          f"{sorted(others)}.")
    return data


# What the converter writes to stderr on every export that succeeds: options the SavedModel
# route ignores, its SavedModel loader's progress (INFO), and the notice that the model needs
# custom ops, which the tokenizer's are by design (`litert_model.REGISTRARS`).
_CONVERTER_NOTICE = re.compile(
    r"^W\d{4} [\d:.]+\s+\d+ tf_tfl_flatbuffer_helpers\.cc:\d+\] Ignored "
    r"(output_format|drop_control_dependency)\.$"
    r"|^I\d{4} [\d:.]+\s+\d+ (reader|loader|mlir_graph_optimization_pass)\.cc:\d+\] ")
_CUSTOM_OPS_NOTICE = re.compile(r"^W\d{4} [\d:.]+\s+\d+ flatbuffer_export\.cc:\d+\] The "
                                r"following operation\(s\) need TFLite custom op")


def converter_notices(lines):
    """The converter's stderr ``lines`` less its notices of a successful export (a custom-op
    notice only when it names the tokenizer's ops alone); every other line is kept.

    >>> converter_notices([
    ...     "W0000 00:00:1.2  9 tf_tfl_flatbuffer_helpers.cc:364] Ignored output_format.",
    ...     "W0000 00:00:1.2  9 flatbuffer_export.cc:4248] The following operation(s) need "
    ...     "TFLite custom op implementation(s):",
    ...     "Custom ops: FastBertNormalize, FastWordpieceTokenizeWithOffsets", "Details:",
    ...     "\ttf.FastBertNormalize(tensor<?x!tf_type.string>) -> (...)",
    ...     "See instructions: https://www.tensorflow.org/lite/guide/ops_custom",
    ...     "E0000 00:00:1.3  9 something.cc:1] a real error"])
    ['E0000 00:00:1.3  9 something.cc:1] a real error']
    """
    kept, i = [], 0
    while i < len(lines):
        line = lines[i]
        if _CUSTOM_OPS_NOTICE.search(line):
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].startswith("See instructions:")), None)
            ops = next((lines[j] for j in range(i + 1, end or i + 1)
                        if lines[j].startswith("Custom ops: ")), "")
            named = {op.strip() for op in ops[len("Custom ops: "):].split(",") if op.strip()}
            if end is not None and named and named <= set(litert_model.REGISTRARS):
                i = end + 1
                continue
        if not _CONVERTER_NOTICE.search(line):
            kept.append(line)
        i += 1
    return kept


def _first_lines(error, count=3):
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines[:count])
