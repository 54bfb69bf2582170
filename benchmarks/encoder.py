"""Forward-pass throughput of `BertEncoder` beside keras-hub (and Hugging Face torch).

Builds a BERT-base sized encoder (L12/H768/A12/I3072, vocab 30522, random weights) and the
same-sized `keras_hub.models.BertBackbone`, runs both on the same random batch in inference
mode under the same ``tf.function`` (XLA on or off), interleaving their timed rounds so that
a noisy machine hurts both alike, and prints tokens per second and the ratio ours/keras-hub.
The last line printed is one JSON object with every figure.

    python benchmarks/encoder.py --batch_size=32 --seq_length=128 \
        --precisions=fp32,mixed_bfloat16 --xla=on,off --peers=keras_hub,hf_torch,torch_compile

Columns: best tok/s over the rounds; ours/keras_hub, best against best; "median paired",
the median over rounds of ours/keras-hub where round i of each ran back to back (robust on a
machine whose speed drifts); GFLOP/s (2 x multiply-adds of the encoder blocks per token) and
that as a percentage of TF's own 4096^3 matmul on this machine in the same compute dtype
(``--ceiling``), i.e. how close the forward pass comes to what the hardware gives TensorFlow.

Measured figures and what they mean on the development VM: docs/benchmarks.md.
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start()  # before TensorFlow: keep its C++ logging out of the table

import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from absl import flags  # noqa: E402

from benchmarks.common import timing  # noqa: E402

FLAGS = flags.FLAGS
harness.define_flags(batch_size=32, seq_length=128, steps=2, warmup=1, rounds=5,
                     precisions=["fp32", "mixed_bfloat16"], xla=["on", "off"],
                     peers=["keras_hub"], num_layers=12)
flags.DEFINE_integer("threads", 0, "Intra-op threads for TF and torch; 0 = their default.")
flags.DEFINE_integer("inter_op_threads", 0, "TF inter-op threads; 0 = TF's default.")
flags.DEFINE_bool("ceiling", True, "Also measure TF's square-matmul GFLOP/s per precision and "
                  "report each forward pass as a percentage of it.")
flags.DEFINE_integer("ceiling_size", 4096, "Side of the square matmul for --ceiling.")

# BERT as Google released it: GELU is the tanh approximation (google-research/bert's
# modeling.gelu; keras_bert's registry sizes are "gelu_tanh"; keras-hub's BertBackbone uses
# gelu_approximate; Hugging Face: "gelu_pytorch_tanh"). The erf form costs more.
_BASE = dict(hidden_act="gelu_tanh",
             vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
_POLICY = {"fp32": "float32", "mixed_bfloat16": "mixed_bfloat16", "mixed_float16": "mixed_float16"}


def _forward(model, inputs, xla):
    """A no-argument callable: one inference forward pass of a Keras model in a tf.function
    (XLA on or off), returning both outputs so neither can be pruned away."""
    import tensorflow as tf

    @tf.function(jit_compile=xla, reduce_retracing=True, autograph=False)
    def forward(x):
        out = model(x, training=False)
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}

    return lambda: forward(inputs)


def _inputs(batch_size, seq_length):
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, _BASE["vocab_size"], size=(batch_size, seq_length), dtype="int32")
    mask = np.ones_like(ids)
    types = np.zeros_like(ids)
    types[:, seq_length // 2:] = 1
    return ids, mask, types


def _tf_runners(precision, xla_modes, peers, ids, mask, types):
    """(name, xla, callable) for our encoder and the keras-hub backbone under one policy."""
    import keras
    import tensorflow as tf

    from keras_bert import BertConfig, BertEncoder

    policy = _POLICY[precision]
    keras.config.set_dtype_policy(policy)
    config = BertConfig(**dict(_BASE, num_hidden_layers=FLAGS.num_layers))
    ours = BertEncoder(config, dtype=policy)
    ours_inputs = {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
                   "input_type_ids": tf.constant(types)}
    runners = [("keras_bert", xla, _forward(ours, ours_inputs, xla)) for xla in xla_modes]
    if "keras_hub" in peers:
        import keras_hub

        hub = keras_hub.models.BertBackbone(
            vocabulary_size=_BASE["vocab_size"], num_layers=FLAGS.num_layers,
            num_heads=_BASE["num_attention_heads"], hidden_dim=_BASE["hidden_size"],
            intermediate_dim=_BASE["intermediate_size"],
            max_sequence_length=_BASE["max_position_embeddings"], dtype=policy)
        hub_inputs = {"token_ids": tf.constant(ids), "segment_ids": tf.constant(types),
                      "padding_mask": tf.constant(mask)}
        # The same treatment as ours: one tf.function, inference mode, both outputs.
        runners += [("keras_hub", xla, _forward(hub, hub_inputs, xla)) for xla in xla_modes]
    keras.config.set_dtype_policy("float32")
    return runners


def _torch_runners(precision, peers, ids, mask, types):
    import torch
    import transformers

    if precision == "mixed_float16":
        return []
    if FLAGS.threads:
        torch.set_num_threads(FLAGS.threads)
    config = transformers.BertConfig(
        vocab_size=_BASE["vocab_size"], hidden_size=768, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=12, intermediate_size=3072,
        hidden_act="gelu_pytorch_tanh",
        attn_implementation="sdpa")
    model = transformers.BertModel(config).eval()
    if precision == "mixed_bfloat16":
        model = model.to(torch.bfloat16)
    feed = {"input_ids": torch.from_numpy(ids).long(),
            "attention_mask": torch.from_numpy(mask).long(),
            "token_type_ids": torch.from_numpy(types).long()}
    runners = []

    def make(m):
        def run():
            with torch.inference_mode():
                return m(**feed).last_hidden_state
        return run

    if "hf_torch" in peers:
        runners.append(("hf_torch", "eager", make(model)))
    if "torch_compile" in peers:
        try:
            import torch._inductor.config as inductor_config

            inductor_config.freezing = True  # weights become constants: inference only
            frozen = torch.compile(model)
            with torch.inference_mode():
                frozen(**feed)
            runners.append(("torch_compile", "inductor", make(frozen)))
        except Exception as e:  # noqa: BLE001  (a peer asked for that cannot run ends the run)
            sys.exit(f"encoder.py: --peers asks for torch_compile, and torch.compile fails "
                     f"here ({type(e).__name__}: {str(e)[:200]}); leave torch_compile out "
                     "of --peers")
    return runners


def _block(out):
    """Waits for a TF or torch result to be ready."""
    if isinstance(out, dict):
        out = next(iter(out.values()))
    if hasattr(out, "numpy"):
        out.numpy() if not hasattr(out, "detach") else out.float().sum().item()


def _measure(runners, tokens):
    """tok/s of each runner in every one of the interleaved rounds: a list per runner."""
    return timing.interleaved_rates([run for _, _, run in runners], tokens, FLAGS.rounds,
                                    FLAGS.steps, FLAGS.warmup, finish=_block)


def _forward_flops_per_token(num_layers, seq_length):
    """Multiply-adds x 2 of one token through the encoder blocks (projections, feed-forward
    and the two attention matmuls); embeddings and pooler are negligible."""
    h, i = _BASE["hidden_size"], _BASE["intermediate_size"]
    per_layer = 2 * (4 * h * h + 2 * h * i) + 2 * 2 * seq_length * h
    return num_layers * per_layer


def _matmul_ceiling(precision):
    """GFLOP/s of TF's own square matmul in the precision's compute dtype (best of XLA on
    and off): what the hardware gives TensorFlow, the ceiling a forward pass can approach."""
    import tensorflow as tf

    n = FLAGS.ceiling_size
    dtype = {"fp32": tf.float32, "mixed_bfloat16": tf.bfloat16,
             "mixed_float16": tf.float16}[precision]
    a = tf.cast(tf.random.normal([n, n]), dtype)
    b = tf.cast(tf.random.normal([n, n]), dtype)
    best = 0.0
    for xla in (False, True):
        matmul = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)), jit_compile=xla)
        matmul(a, b).numpy()
        for _ in range(3):
            start = time.perf_counter()
            matmul(a, b).numpy()
            best = max(best, 2 * n ** 3 / (time.perf_counter() - start) / 1e9)
    return best


def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def main(argv):
    del argv
    harness.require_contenders("--peers", FLAGS.peers, harness.PEERS)  # each runs, or none
    import keras_bert  # loads TensorFlow without its C++ start-up lines
    import tensorflow as tf

    if {"hf_torch", "torch_compile"} & set(FLAGS.peers):
        with keras_bert.backend.quiet_native_stderr():
            import torch  # noqa: F401

    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    if FLAGS.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads)
    xla_modes = [{"on": True, "off": False}[x] for x in FLAGS.xla]
    ids, mask, types = _inputs(FLAGS.batch_size, FLAGS.seq_length)
    tokens = FLAGS.batch_size * FLAGS.seq_length
    results = []
    for precision in FLAGS.precisions:
        runners = _tf_runners(precision, xla_modes, FLAGS.peers, ids, mask, types)
        if {"hf_torch", "torch_compile"} & set(FLAGS.peers):
            runners += _torch_runners(precision, FLAGS.peers, ids, mask, types)
        for (name, xla, _), per_round in zip(runners, _measure(runners, tokens)):
            mode = {True: "on", False: "off"}.get(xla, xla)
            results.append({"model": name, "precision": precision, "xla": mode,
                            "tokens_per_s": round(max(per_round), 1),
                            "rounds_tokens_per_s": [round(v, 1) for v in per_round]})

    def find(model, precision, xla, key="tokens_per_s"):
        for r in results:
            if (r["model"], r["precision"], r["xla"]) == (model, precision, xla):
                return r[key]
        return None

    ceilings = {p: _matmul_ceiling(p) for p in FLAGS.precisions} if FLAGS.ceiling else {}
    flops_per_token = _forward_flops_per_token(FLAGS.num_layers, FLAGS.seq_length)

    print(f"\nBERT-base forward pass, batch {FLAGS.batch_size} x seq {FLAGS.seq_length}, "
          f"{FLAGS.num_layers} layers, best of {FLAGS.rounds} rounds x {FLAGS.steps} steps")
    header = (f"{'model':<14}{'precision':<16}{'xla':<10}{'tok/s':>10}{'ours/keras_hub':>16}"
              f"{'median paired':>15}{'GFLOP/s':>9}{'% ceiling':>11}")
    print(header)
    print("-" * len(header))
    for r in results:
        hub = find("keras_hub", r["precision"], r["xla"])
        ours = find("keras_bert", r["precision"], r["xla"])
        mine = r["model"] == "keras_bert" and hub
        r["ratio_vs_keras_hub"] = round(ours / hub, 3) if mine else None
        # Round i of ours against round i of keras-hub, timed back to back: robust to a
        # machine whose speed drifts during the run.
        hub_rounds = find("keras_hub", r["precision"], r["xla"], "rounds_tokens_per_s")
        r["median_paired_ratio"] = (
            round(_median([a / b for a, b in zip(r["rounds_tokens_per_s"], hub_rounds)]), 3)
            if mine else None)
        r["gflop_per_s"] = round(r["tokens_per_s"] * flops_per_token / 1e9, 1)
        ceiling = ceilings.get(r["precision"])
        r["percent_of_matmul_ceiling"] = (round(100 * r["gflop_per_s"] / ceiling, 1)
                                          if ceiling else None)
        ratio = f"{r['ratio_vs_keras_hub']:.3f}" if mine else ""
        paired = f"{r['median_paired_ratio']:.3f}" if mine else ""
        pct = f"{r['percent_of_matmul_ceiling']:.0f}%" if ceiling else ""
        print(f"{r['model']:<14}{r['precision']:<16}{r['xla']:<10}"
              f"{r['tokens_per_s']:>10,.0f}{ratio:>16}{paired:>15}{r['gflop_per_s']:>9,.0f}"
              f"{pct:>11}")
    for precision, ceiling in ceilings.items():
        print(f"TF matmul ceiling ({FLAGS.ceiling_size}^3, best of jit on/off), {precision}: "
              f"{ceiling:,.0f} GFLOP/s")
    summary = {}
    for precision in FLAGS.precisions:
        ours = max((r["tokens_per_s"] for r in results
                    if r["model"] == "keras_bert" and r["precision"] == precision), default=None)
        hub = max((r["tokens_per_s"] for r in results
                   if r["model"] == "keras_hub" and r["precision"] == precision), default=None)
        summary[precision] = {"ours_best": ours, "keras_hub_best": hub,
                              "ratio_best": round(ours / hub, 3) if ours and hub else None}
        print(f"{precision}: ours best {ours:,.0f} tok/s"
              + (f", keras-hub best {hub:,.0f} tok/s, ratio {ours / hub:.3f}" if hub else ""))
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, 1-min load average {load:.1f} at the end "
          "(other processes slow every figure; compare ratios within one run)")
    harness.print_summary({"batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length,
                           "num_layers": FLAGS.num_layers, "cpus": os.cpu_count(),
                           "load_average": round(load, 2), "flops_per_token": flops_per_token,
                           "matmul_ceiling_gflop_per_s": ceilings, "results": results,
                           "best": summary})


if __name__ == "__main__":
    harness.run(main)
