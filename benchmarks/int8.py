"""int8 inference on CPU: float32 against Keras' int8 and keras_bert's int8 kernel, per matmul
of the encoder and for the whole encoder.

Per matmul: the three projections of an all-MiniLM-L6-v2-sized block (384 -> 384, 384 ->
1536, 1536 -> 384) on ``--batch_size * --seq_length`` rows (a batch) and ``--short_length``
rows (one short text), each route with its bias (and its dynamic quantization of the
activations, where it has one) in a ``tf.function``:

* ``fp32``: ``x @ W + b`` (TensorFlow's oneDNN rewrite fuses the bias);
* ``bf16``: the same in bfloat16 (the inputs cast in, the output cast out);
* ``keras_int8``: ``keras.layers.Dense`` after ``quantize("int8")`` (Keras' path: each row
  quantized to int8, int8 x int8 -> int32 ``MatMul``), also under XLA (``keras_int8_xla``);
* ``onednn_v1``: TensorFlow's public ``QuantizedMatMulWithBiasAndDequantize`` (oneDNN, uint8
  x int8 -> float32; per-tensor scales only, so the per-column weight scales and the bias are
  applied after it);
* ``keras_bert_int8``: `keras_bert.layers.int8` (oneDNN's ``_QuantizedMatMul``: uint8 x int8
  -> float32 with per-column weight scales and the bias in the kernel), traced as an export
  traces it (``constant_weights``: oneDNN keeps its reordered weights), and without that
  (``keras_bert_int8_reorder``: weights reordered at every call, as in-process calls do).

End to end: a `BertEncoder` of that size (``--num_layers``, random weights, ids in) in
float32, in ``mixed_bfloat16``, after ``model.quantize("int8")`` on Keras' path (also
compiled by XLA for each input shape) and on the int8 kernel: sequences/s at
``--batch_size`` x ``--seq_length`` (the best of ``--rounds`` interleaved rounds) and the
median latency of one ``--short_length`` sequence. Strings in, with the tokenizer and the
accuracy of a fine-tuned model: benchmarks/serve_cpu.py.

    python benchmarks/int8.py
    python benchmarks/int8.py --batch_size=32 --seq_length=64 --short_length=24

The CPU's int8/bf16 instruction sets are printed first: figures from different CPUs do not
compare. The last line is one JSON object of every figure. Measured: docs/export.md.
"""

# The repository root in place of this folder on the import path: see
# benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start()  # before TensorFlow: keep its C++ logging out of the table

import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from absl import flags  # noqa: E402

from benchmarks.common import timing  # noqa: E402

FLAGS = flags.FLAGS
harness.define_flags(batch_size=32, seq_length=64, num_layers=6, steps=3, warmup=1, rounds=3)
flags.DEFINE_integer("short_length", 24, "Tokens of the single sequence timed for latency.")
flags.DEFINE_integer("hidden_size", 384, "Hidden size (384: all-MiniLM-L6-v2).")
flags.DEFINE_integer("intermediate_size", 1536, "Feed-forward size (1536: all-MiniLM-L6-v2).")
flags.DEFINE_integer("latency_calls", 100, "Single-sequence calls timed for the latency.")
MATMUL_ROUTES = ["fp32", "bf16", "keras_int8", "keras_int8_xla", "onednn_v1", "keras_bert_int8",
                 "keras_bert_int8_reorder"]
ENCODER_ROUTES = ["fp32", "mixed_bfloat16", "keras_int8", "keras_int8_xla", "keras_bert_int8"]
flags.DEFINE_list("matmul_routes", MATMUL_ROUTES, "Per-matmul routes to time.")
flags.DEFINE_list("encoder_routes", ENCODER_ROUTES, "End-to-end encoder routes to time.")


def _matmul_routes(k, n, seed=0):
    """{route: tf.function(x) -> [rows, n]} for one random [k, n] layer with a bias."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert.layers import int8

    rng = np.random.default_rng(seed)
    w = (rng.normal(size=(k, n)) * 0.05).astype("float32")
    b = (rng.normal(size=n) * 0.1).astype("float32")
    layer = keras.layers.Dense(n)
    layer.build((None, k))
    layer.set_weights([w, b])
    layer.quantize("int8")
    kernel, scale = layer._kernel, layer.kernel_scale
    sums = tf.Variable(int8.column_sums(kernel, scale))
    w32, b32, w16 = tf.Variable(w), tf.Variable(b), tf.Variable(tf.cast(w, tf.bfloat16))

    def onednn_v1(x):
        q = int8.quantize(x)
        y = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
            a=q.values, b=tf.bitcast(tf.convert_to_tensor(kernel), tf.qint8),
            bias=tf.zeros([n]), min_a=0.0, max_a=q.width, min_b=-127.0, max_b=127.0,
            min_freezed_output=0.0, max_freezed_output=0.0, Toutput=tf.float32,
            input_quant_mode="SCALED")
        return (y + q.low * sums * scale) / scale + b32

    routes = {
        "fp32": lambda x: tf.matmul(x, w32) + b32,
        "bf16": lambda x: tf.cast(tf.matmul(tf.cast(x, tf.bfloat16), w16), tf.float32) + b32,
        "keras_int8": lambda x: layer(x),
        "keras_int8_xla": lambda x: layer(x),
        "onednn_v1": onednn_v1,
        "keras_bert_int8": lambda x: int8.matmul(int8.quantize(x), kernel, scale, sums, b32),
        "keras_bert_int8_reorder": lambda x: int8.matmul(int8.quantize(x), kernel, scale, sums,
                                                         b32),
    }
    for name in FLAGS.matmul_routes:
        if name not in routes:
            raise ValueError(f"--matmul_routes: {name!r} is not one of {MATMUL_ROUTES}")
    return {name: routes[name] for name in FLAGS.matmul_routes}, w, b


def _functions(routes, k, repeats):
    """Each route as a tf.function of x that runs it ``repeats`` times on copies of x scaled
    apart (so that no call is merged with another), returning the sum."""
    import tensorflow as tf

    from keras_bert.layers import int8

    functions = {}
    for name, route in routes.items():
        def repeated(x, route=route):
            outputs = [route(x * (1.0 + 1e-3 * i)) for i in range(repeats)]
            return outputs[0] if repeats == 1 else tf.add_n(outputs)

        function = tf.function(repeated, jit_compile=name.endswith("_xla"))
        spec = tf.TensorSpec([None, k])
        if name == "keras_bert_int8":
            with int8.constant_weights():  # traced now, as an export traces it
                function.get_concrete_function(spec)
        else:
            function.get_concrete_function(spec)
        functions[name] = function
    return functions


def _time_calls(functions, x, calls, rounds):
    """Milliseconds per call of each function: the best of interleaved rounds."""
    rates = timing.interleaved_rates([lambda f=f: f(x) for f in functions.values()], 1,
                                     rounds, calls, warmup=2, finish=lambda y: y.numpy())
    return {name: 1000.0 / max(r) for name, r in zip(functions, rates)}


def matmul_rows():
    import numpy as np
    import tensorflow as tf

    h, i = FLAGS.hidden_size, FLAGS.intermediate_size
    rows = []
    for k, n in ((h, h), (h, i), (i, h)):
        routes, w, b = _matmul_routes(k, n)
        single = _functions(routes, k, 1)
        for m in (FLAGS.batch_size * FLAGS.seq_length, FLAGS.short_length):
            # Few rows: many matmuls per call, so that the call's own cost does not count.
            repeats = 1 if m >= 256 else 16
            functions = single if repeats == 1 else _functions(routes, k, repeats)
            x = tf.constant(np.random.default_rng(1).normal(size=(m, k)).astype("float32"))
            calls = max(3, 20000 // (m * repeats))
            ms = {name: t / repeats for name, t in
                  _time_calls(functions, x, calls, FLAGS.rounds).items()}
            want = x.numpy() @ w + b
            for name in routes:
                got = single[name](x).numpy()
                error = float(np.abs(got - want).max() / np.abs(want).max())
                rows.append({"rows": m, "k": k, "n": n, "route": name, "ms": ms[name],
                             "vs_fp32": ms.get("fp32", float("nan")) / ms[name],
                             "max_error": error})
    return rows


def _encoder(route):
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.layers import dense, int8

    keras.utils.set_random_seed(0)
    policy = "mixed_bfloat16" if route == "mixed_bfloat16" else "float32"
    config = keras_bert.BertConfig(
        vocab_size=30522, hidden_size=FLAGS.hidden_size, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=FLAGS.hidden_size // 32, intermediate_size=FLAGS.intermediate_size)
    encoder = keras_bert.BertEncoder(config, dtype=policy)
    if route in ("keras_int8", "keras_int8_xla", "keras_bert_int8"):
        with warnings.catch_warnings():  # Keras names every layer it cannot quantize
            warnings.simplefilter("ignore")
            encoder.quantize("int8")
    function = tf.function(lambda x: tf.cast(encoder(x, training=False)["sequence_output"],
                                             tf.float32), jit_compile=route.endswith("_xla"))
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in
            ("input_word_ids", "input_mask", "input_type_ids")}
    dense.INT8_KERNEL = route == "keras_bert_int8"  # read while tracing
    try:
        with int8.constant_weights():  # as the serving export traces it
            function.get_concrete_function(spec)
    finally:
        dense.INT8_KERNEL = True
    return function


def _ids(batch, seq):
    import numpy as np
    import tensorflow as tf

    ids = np.random.default_rng(2).integers(1000, 30000, size=(batch, seq)).astype("int32")
    ids[:, 0], ids[:, -1] = 101, 102
    return {"input_word_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
            "input_type_ids": tf.zeros_like(ids)}


def encoder_rows():
    functions = {}
    for route in FLAGS.encoder_routes:
        if route not in ENCODER_ROUTES:
            raise ValueError(f"--encoder_routes: {route!r} is not one of {ENCODER_ROUTES}")
        functions[route] = _encoder(route)
    batch = _ids(FLAGS.batch_size, FLAGS.seq_length)
    rates = timing.interleaved_rates([lambda f=f: f(batch) for f in functions.values()],
                                     FLAGS.batch_size, FLAGS.rounds, FLAGS.steps,
                                     FLAGS.warmup, finish=lambda y: y.numpy())
    one = _ids(1, FLAGS.short_length)
    latencies = {name: [] for name in functions}
    for f in functions.values():
        f(one).numpy()
    for _ in range(FLAGS.latency_calls):
        for name, f in functions.items():
            start = time.perf_counter()
            f(one).numpy()
            latencies[name].append((time.perf_counter() - start) * 1000.0)
    best = {name: max(r) for name, r in zip(functions, rates)}
    return [{"route": name, "sequences_per_s": best[name],
             "vs_fp32": best[name] / best["fp32"] if "fp32" in best else None,
             "batch1_median_ms": statistics.median(latencies[name])} for name in functions]


def main(argv):
    del argv
    import keras_bert  # noqa: F401  (first: it imports TensorFlow without its start-up lines)

    cpu, have = harness.cpu_description()
    print(f"CPU: {cpu}; {_os.cpu_count()} logical CPUs; "
          + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in have.items()))
    matmuls = matmul_rows() if FLAGS.matmul_routes else []
    if matmuls:
        print("\n| rows | k -> n | route | ms per call | vs fp32 | max error / max |y| |")
        print("| ---: | --- | --- | ---: | ---: | ---: |")
        for r in matmuls:
            print(f"| {r['rows']} | {r['k']} -> {r['n']} | {r['route']} | {r['ms']:.3f} | "
                  f"{r['vs_fp32']:.2f}x | {r['max_error']:.4f} |")
    encoders = encoder_rows() if FLAGS.encoder_routes else []
    if encoders:
        print(f"\nEncoder ({FLAGS.num_layers} layers, hidden {FLAGS.hidden_size}): batch "
              f"{FLAGS.batch_size} x {FLAGS.seq_length} tokens; latency of 1 x "
              f"{FLAGS.short_length}")
        print("| route | sequences/s | vs fp32 | batch-1 median ms |")
        print("| --- | ---: | ---: | ---: |")
        for r in encoders:
            ratio = "n/a" if r["vs_fp32"] is None else f"{r['vs_fp32']:.2f}x"
            print(f"| {r['route']} | {r['sequences_per_s']:.1f} | {ratio} | "
                  f"{r['batch1_median_ms']:.2f} |")
    harness.print_summary({"cpu": cpu, "cpu_flags": have, "batch_size": FLAGS.batch_size,
                           "seq_length": FLAGS.seq_length, "short_length": FLAGS.short_length,
                           "matmuls": matmuls, "encoder": encoders})


if __name__ == "__main__":
    harness.run(main)
