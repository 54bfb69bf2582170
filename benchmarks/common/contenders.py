"""The contenders of benchmarks/serve_cpu.py: one fine-tuned classifier served each way.

Each entry of `CONTENDERS` (a `Contender`) makes, from the shared `Setup`, a runner ``texts
(a list of str) -> probabilities (numpy [len(texts), num_classes])`` and names the modules it
imports, which serve_cpu.py checks before it starts (a contender it was asked for runs, or
the script stops and says what to install); `ALL`, `NEEDS` and `KINDS` are its columns. The
peers get exactly the keras_bert model's weights (its encoder written in Hugging Face's
format, its head copied), the same vocabulary and casing, and the same longest length; every
runner pads each batch to its longest text.
"""

import functools
import os
import typing

import numpy as np

from benchmarks.common import cpu_timing


# --model values that name a model built here instead of a .keras file.
BUILT_MODELS = ("minilm_l6", "tiny")


def softmax(logits):
    logits = np.asarray(logits, dtype=np.float64)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def concat(outputs):
    return np.concatenate(outputs, axis=0)


# The inputs of the ONNX files (`Setup.onnx_fp32`), as `torch.onnx.export` names them.
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Contender(typing.NamedTuple):
    """One way to serve the model: ``make(setup) -> runner``; the modules it imports beyond
    keras_bert's own (what it needs installed); whether it is keras_bert's; its precision;
    the float32 contender it is the quantized form of (or None)."""

    make: typing.Callable
    needs: tuple = ()
    ours: bool = True
    precision: str = "fp32"
    float_of: typing.Optional[str] = None


def tables(contenders):
    """``ALL`` (name -> make), ``NEEDS`` (name -> modules) and ``KINDS`` (name -> (ours,
    precision, float_of)) of a table name -> `Contender`."""
    return ({name: c.make for name, c in contenders.items()},
            {name: c.needs for name, c in contenders.items()},
            {name: (c.ours, c.precision, c.float_of) for name, c in contenders.items()})


class Setup:
    """What the contenders share, each built once on first use: the keras_bert model, its
    Hugging Face copy, the ONNX file, the fast tokenizer."""

    def __init__(self, model_path, seq_length, threads, workdir, session_threads=(0, 0)):
        self.model_path = model_path
        self.seq_length = seq_length
        self.threads = threads
        self.workdir = workdir
        self.session_threads = session_threads  # (intra, inter), as TF Serving's flags
        self._exports = {}

    def export(self, quantized=False):
        """The serving SavedModel of the classifier (``model.export``), float32 or int8,
        written once."""
        if quantized not in self._exports:
            model = self.keras_model(quantized=quantized)
            self._exports[quantized] = model.export(
                os.path.join(self.workdir, "int8" if quantized else "fp32", "1"))
        return self._exports[quantized]

    def keras_model(self, quantized=False):
        """A fresh copy of the classifier, its preprocessor packing at most seq_length."""
        import keras
        import keras_bert

        if self.model_path == "tiny":
            from tests.export.serving_models import tiny_classifier

            model = tiny_classifier(seq_length=self.seq_length)
        elif self.model_path == "minilm_l6":
            keras.utils.set_random_seed(0)
            model = keras_bert.BertClassifier.from_preset("minilm_l6", num_classes=2)
        else:
            model = keras.saving.load_model(self.model_path)
        model.preprocessor = keras_bert.BertPreprocessor(model.preprocessor.tokenizer,
                                                         seq_length=self.seq_length)
        if quantized:
            model.quantize("int8")
        return model

    @functools.cached_property
    def model(self):
        return self.keras_model()

    @functools.cached_property
    def hf_dir(self):
        """The encoder in Hugging Face's format, with the vocabulary."""
        from keras_bert import storage
        from keras_bert.checkpoints import huggingface

        directory = os.path.join(self.workdir, "hf")
        encoder = self.model.encoder
        vocab = os.path.join(self.workdir, "vocab.txt")
        storage.write_text(vocab, "\n".join(self.model.preprocessor.tokenizer.vocabulary) + "\n")
        huggingface.write_directory(directory, encoder.bert_config,
                                    encoder.get_canonical_weights(), vocab_path=vocab)
        return directory

    @functools.cached_property
    def hf_tokenizer(self):
        from transformers import BertTokenizerFast

        return BertTokenizerFast(os.path.join(self.hf_dir, "vocab.txt"),
                                 do_lower_case=self.model.preprocessor.tokenizer.do_lower_case)

    def hf_model(self):
        """``BertForSequenceClassification`` with the keras_bert model's weights, in eval mode."""
        import torch
        import transformers
        from transformers import BertForSequenceClassification

        transformers.logging.set_verbosity_error()  # the head is copied in below
        transformers.utils.logging.disable_progress_bar()

        torch.set_num_threads(self.threads)
        head = self.model.logits
        model = BertForSequenceClassification.from_pretrained(
            self.hf_dir, num_labels=head.units, attn_implementation="eager")
        with torch.no_grad():
            model.classifier.weight.copy_(torch.from_numpy(np.asarray(head.kernel).T.copy()))
            model.classifier.bias.copy_(torch.from_numpy(np.asarray(head.bias).copy()))
        return model.eval()

    def tokenize(self, texts, tensors):
        return self.hf_tokenizer(texts, padding="longest", truncation=True,
                                 max_length=self.seq_length, return_tensors=tensors)

    onnx_output = "logits"  # the name of `hf_model`'s output in the ONNX file

    def ort_feeds(self, texts):
        """The ONNX file's inputs for ``texts``: int64 ids ``[batch, longest]`` by name."""
        encoded = self.tokenize(texts, "np")
        return {n: encoded[n].astype(np.int64) for n in ONNX_INPUTS}

    def ort_result(self, output):
        """A runner's result from the ONNX file's `onnx_output`: the probabilities."""
        return softmax(output)

    @functools.cached_property
    def onnx_fp32(self):
        import torch

        model = self.hf_model()
        path = os.path.join(self.workdir, "model.onnx")
        example = self.tokenize(["a first text", "and a second, longer one"], "pt")
        names = list(ONNX_INPUTS)
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        axes[self.onnx_output] = {0: "batch"}
        torch.onnx.export(model, tuple(example[n] for n in names), path, input_names=names,
                          output_names=[self.onnx_output], dynamic_axes=axes,
                          opset_version=17, dynamo=False)
        return path

    @functools.cached_property
    def onnx_int8(self):
        from onnxruntime.quantization import QuantType, quantize_dynamic

        path = os.path.join(self.workdir, "model.int8.onnx")
        quantize_dynamic(self.onnx_fp32, path, weight_type=QuantType.QInt8)
        return path


def saved_model_runner(setup, quantized, output="probabilities"):
    """The serving SavedModel (`model.export`; ``model.quantize("int8")`` first when
    ``quantized``) run by TensorFlow's TF2 loader, as ``tf.saved_model.load`` users and
    keras_bert's own server run it: texts -> its ``output``."""
    import tensorflow as tf

    serve = tf.saved_model.load(setup.export(quantized)).signatures["serving_default"]
    return lambda texts: serve(text=tf.constant(texts))[output].numpy()


def keras_bert_fp32_plain(setup):
    """The float32 classifier's serving SavedModel traced from the layers' ordinary inference
    calls, its weights as variables: the graph `model.export` writes without
    `keras_bert.layers.serving_graph` (the lean graph's reference), run by the TF2 loader."""
    from unittest import mock

    import tensorflow as tf

    from keras_bert.layers import int8, serving_graph

    model = setup.keras_model()
    path = os.path.join(setup.workdir, "fp32_plain", "1")
    def plain(constants=True, variables=None):  # the layers' ordinary calls
        return int8.constant_weights()  # (int8 weights cached)

    with mock.patch.object(serving_graph, "building", plain):
        path = model.export(path)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return lambda texts: serve(text=tf.constant(texts))["probabilities"].numpy()


def _session_runner(setup, quantized):
    """The same SavedModel run as ``tensorflow_model_server`` runs it: the TF1 loader into a
    Session with its own thread pools, sized as TF Serving's
    ``--tensorflow_intra_op_parallelism`` and ``--tensorflow_inter_op_parallelism`` flags
    size them (``setup.session_threads``; 0: TensorFlow picks, one per core)."""
    import tensorflow as tf

    path = setup.export(quantized)  # before the TF1 graph below becomes the default
    intra, inter = setup.session_threads
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra,
                                      inter_op_parallelism_threads=inter,
                                      use_per_session_threads=True)
    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph, config=config)
    with graph.as_default():
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
    signature = meta_graph.signature_def["serving_default"]
    text = signature.inputs["text"].name
    probabilities = signature.outputs["probabilities"].name
    return lambda texts: session.run(probabilities, {text: np.array(texts, dtype=object)})


def keras_bert_fp32(setup):
    return saved_model_runner(setup, quantized=False)


def keras_bert_int8(setup):
    return saved_model_runner(setup, quantized=True)


def keras_bert_fp32_session(setup):
    return _session_runner(setup, quantized=False)


def keras_bert_int8_session(setup):
    return _session_runner(setup, quantized=True)


def litert_runner(setup, quantize, output="probabilities"):
    """The keras_bert model's LiteRT model (``quantize``: None or "int8"): texts -> its
    ``output``."""
    from keras_bert.export import litert_model

    path = os.path.join(setup.workdir, f"model.{quantize or 'fp32'}.tflite")
    setup.model.export(path, format="litert", quantize=quantize)
    runner = litert_model.load(path, num_threads=setup.threads)
    return lambda texts: runner(text=texts)[output]


def litert_fp32(setup):
    return litert_runner(setup, None)


def litert_int8(setup):
    return litert_runner(setup, "int8")


def hf_torch(setup, compiled=False):
    import torch

    model = setup.hf_model()
    if compiled:
        model = torch.compile(model)

    def run(texts):
        with torch.inference_mode():
            return softmax(model(**setup.tokenize(texts, "pt")).logits.numpy())
    return run


def torch_compile(setup):
    return hf_torch(setup, compiled=True)


def ort_session(setup, path):
    """An ONNX Runtime CPU session of the ONNX file ``path`` (every graph optimization,
    ``setup.threads`` threads) and the names of its inputs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = setup.threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session, [i.name for i in session.get_inputs()]


def _ort_runner(setup, path):
    """The ONNX file ``path`` in ONNX Runtime, fed and read as ``setup`` says
    (`Setup.ort_feeds`, `Setup.ort_result`)."""
    session, names = ort_session(setup, path)

    def run(texts):
        feeds = setup.ort_feeds(texts)
        return setup.ort_result(session.run([setup.onnx_output], {n: feeds[n] for n in names})[0])
    return run


def ort_fp32(setup):
    return _ort_runner(setup, setup.onnx_fp32)


def ort_int8(setup):
    return _ort_runner(setup, setup.onnx_int8)


# The modules ONNX Runtime's contenders import (the export needs torch and transformers).
ORT_NEEDS = ("onnxruntime", "onnx", "torch", "transformers")
CONTENDERS = {
    "keras_bert_fp32": Contender(keras_bert_fp32),
    "keras_bert_int8": Contender(keras_bert_int8, precision="int8", float_of="keras_bert_fp32"),
    "keras_bert_fp32_session": Contender(keras_bert_fp32_session),
    "keras_bert_int8_session": Contender(keras_bert_int8_session, precision="int8",
                                         float_of="keras_bert_fp32_session"),
    "keras_bert_fp32_plain": Contender(keras_bert_fp32_plain),
    "litert_fp32": Contender(litert_fp32, ("ai_edge_litert",)),
    "litert_int8": Contender(litert_int8, ("ai_edge_litert",), precision="int8",
                             float_of="litert_fp32"),
    "hf_torch": Contender(hf_torch, ("torch", "transformers"), ours=False),
    "torch_compile": Contender(torch_compile, ("torch", "transformers"), ours=False),
    "ort_fp32": Contender(ort_fp32, ORT_NEEDS, ours=False),
    "ort_int8": Contender(ort_int8, ORT_NEEDS, ours=False, precision="int8",
                          float_of="ort_fp32"),
}
ALL, NEEDS, KINDS = tables(CONTENDERS)
# The contenders that run the serving SavedModel (`model.export`), by either loader.
SAVED_MODEL = ("keras_bert_fp32", "keras_bert_int8", "keras_bert_fp32_session",
               "keras_bert_int8_session")
# Our float32 contenders, the accuracy reference first: one set of weights, three loaders.
FP32_REFERENCES = ("keras_bert_fp32", "keras_bert_fp32_session", "keras_bert_fp32_plain")


def summarize(runners, rates, latency, predictions, labels):
    """One row per contender: texts/s, ratio to the fastest peer, batch-1 ms, accuracy,
    agreement with its float32 model."""
    peers = [n for n in runners if not KINDS[n][0]]
    fastest = max((rates[n] for n in peers), default=None)
    rows = []
    for name in runners:
        ours, precision, fp32 = KINDS[name]
        argmax = predictions[name].argmax(axis=-1)
        agreement = None
        if fp32 in predictions:
            agreement = float((argmax == predictions[fp32].argmax(axis=-1)).mean())
        rows.append({
            "contender": name, "ours": ours, "precision": precision,
            "texts_per_s": round(rates[name], 1),
            "vs_fastest_peer": round(rates[name] / fastest, 3) if fastest else None,
            "batch1_median_ms": round(latency[name], 2),
            "accuracy": None if labels is None
            else round(float((argmax == np.asarray(labels)).mean()), 4),
            "agreement_with_fp32": None if agreement is None else round(agreement, 4),
        })
    return rows


def print_table(rows):
    print()
    print("| contender | ours | texts/s (batch 32) | vs fastest peer | batch-1 median ms "
          "| test accuracy | argmax agreement with fp32 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        ratio = "n/a" if r["vs_fastest_peer"] is None else f"{r['vs_fastest_peer']:.2f}x"
        accuracy = "n/a" if r["accuracy"] is None else f"{100 * r['accuracy']:.2f}%"
        agree = ("" if r["agreement_with_fp32"] is None
                 else f"{100 * r['agreement_with_fp32']:.1f}%")
        print(f"| {r['contender']} | {'yes' if r['ours'] else ''} | {r['texts_per_s']:.1f} | "
              f"{ratio} | {r['batch1_median_ms']:.2f} | {accuracy} | {agree} |")
    print()


def targets(rows):
    """The ratios the serving targets are stated in (None where a contender did not run)."""
    by = {r["contender"]: r for r in rows}
    ours = [r for r in rows if r["ours"]]
    fp32_peers = [r for r in rows if not r["ours"] and r["precision"] == "fp32"]

    def ratio(a, b, key="texts_per_s"):
        return round(a[key] / b[key], 3) if a and b else None

    fastest_ours = max(ours, key=lambda r: r["texts_per_s"], default=None)
    quickest_ours = min(ours, key=lambda r: r["batch1_median_ms"], default=None)
    # The SavedModel path (what model.export writes, what TF Serving loads), either loader.
    saved = [r for r in ours if r["contender"] in SAVED_MODEL]
    fastest_saved = max(saved, key=lambda r: r["texts_per_s"], default=None)
    quickest_saved = min(saved, key=lambda r: r["batch1_median_ms"], default=None)
    ort8 = by.get("ort_int8")
    # The float32 SavedModel in the quickest one's loader (what model.export writes).
    saved_fp32 = quickest_saved and by.get(
        CONTENDERS[quickest_saved["contender"]].float_of or quickest_saved["contender"])
    # The float32 reference for accuracy: the same weights under any of our float32 loaders.
    fp32 = next((by[name] for name in FP32_REFERENCES if name in by), None)
    return {
        "fastest_saved_model": fastest_saved and fastest_saved["contender"],
        "fastest_saved_model_vs_ort_int8": ratio(fastest_saved, ort8),
        "fastest_saved_model_accuracy_loss_points": _loss(fp32, fastest_saved),
        "quickest_saved_model_batch1": quickest_saved and quickest_saved["contender"],
        "quickest_saved_model_batch1_vs_ort_int8": ratio(quickest_saved, ort8,
                                                         "batch1_median_ms"),
        "quickest_saved_model_batch1_vs_fp32_plain": ratio(
            quickest_saved, by.get("keras_bert_fp32_plain"), "batch1_median_ms"),
        "quickest_saved_model_batch1_vs_fp32_saved_model": ratio(
            quickest_saved, saved_fp32, "batch1_median_ms"),
        "fastest_ours": fastest_ours and fastest_ours["contender"],
        "fastest_ours_vs_ort_int8": ratio(fastest_ours, ort8),
        "fastest_ours_accuracy_loss_points": _loss(fp32, fastest_ours),
        "quickest_ours_batch1": quickest_ours and quickest_ours["contender"],
        "quickest_ours_batch1_ms": quickest_ours and quickest_ours["batch1_median_ms"],
        "ort_int8_batch1_ms": ort8 and ort8["batch1_median_ms"],
        "keras_bert_int8_vs_fp32": ratio(by.get("keras_bert_int8"), by.get("keras_bert_fp32")),
        "keras_bert_fp32_vs_fastest_fp32_peer": ratio(
            by.get("keras_bert_fp32"), max(fp32_peers, key=lambda r: r["texts_per_s"],
                                           default=None)),
    }


def _loss(reference, row):
    """Accuracy points ``row`` loses against ``reference`` (None without both, or labels)."""
    if not reference or not row or reference["accuracy"] is None:
        return None
    return round(100 * (reference["accuracy"] - row["accuracy"]), 2)


def describe_targets(t):
    lines = ["Targets (ratios in this run):"]

    def show(label, value, bar, higher=True):
        lines.append(cpu_timing.target_line(label, value, bar, higher))

    show(f"fastest SavedModel ({t['fastest_saved_model']}) / ONNX Runtime int8, texts/s",
         t["fastest_saved_model_vs_ort_int8"], 1.0)
    show("  its accuracy loss against keras_bert float32, points",
         t["fastest_saved_model_accuracy_loss_points"], 0.5, higher=False)
    show(f"batch-1 median of the quickest SavedModel ({t['quickest_saved_model_batch1']}) / "
         "ONNX Runtime int8's", t["quickest_saved_model_batch1_vs_ort_int8"], 1.0, higher=False)
    show("  its batch-1 median / the plain float32 graph's (keras_bert_fp32_plain)",
         t["quickest_saved_model_batch1_vs_fp32_plain"], 0.5, higher=False)
    show("  its batch-1 median / the float32 SavedModel's in the same loader",
         t["quickest_saved_model_batch1_vs_fp32_saved_model"], 0.5, higher=False)
    show(f"fastest of ours ({t['fastest_ours']}) / ONNX Runtime int8, texts/s",
         t["fastest_ours_vs_ort_int8"], 1.0)
    show("  its accuracy loss against keras_bert float32, points",
         t["fastest_ours_accuracy_loss_points"], 0.5, higher=False)
    if t["quickest_ours_batch1_ms"] is not None and t["ort_int8_batch1_ms"] is not None:
        show(f"batch-1 median of our quickest ({t['quickest_ours_batch1']}) / ONNX Runtime int8's",
             round(t["quickest_ours_batch1_ms"] / t["ort_int8_batch1_ms"], 3), 1.0, higher=False)
    show("keras_bert int8 / keras_bert fp32, texts/s", t["keras_bert_int8_vs_fp32"], 1.8)
    show("keras_bert fp32 / fastest fp32 peer, texts/s",
         t["keras_bert_fp32_vs_fastest_fp32_peer"], 1.0)
    return lines
