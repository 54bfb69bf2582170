"""Pre-training step throughput: `BertPretrainer` beside keras-hub and Hugging Face torch.

One pre-training step (forward, masked-LM loss at the masked positions only, backward,
optimizer update) at the `small` size by default (L4/H512/A8/I2048, vocab 30522, random
weights), batch 32 x seq 128 with 20 predictions per sequence, for:

* keras_bert: `BertPretrainer` (MLM head gathered at ``masked_lm_positions`` + next
  sentence) with the original recipe optimizer (`keras_bert.training.create_optimizer`:
  AdamW, weight decay off for LayerNorm and biases, clipping 1.0), stepped by
  `keras_bert.training.PretrainingLoop.train_step`, the step ``tools/pretrain.py`` runs
  (``--xla`` sets its ``jit_compile``); its last block computes only [CLS] and the masked
  rows, the ones its heads read (same losses and gradients; the peers compute every row);
* keras_hub: `keras_hub.models.BertMaskedLM` (its head also gathers the masked positions) on
  a `BertBackbone` of the same size, `keras.optimizers.AdamW` with clipping 1.0;
* hf_torch: `transformers.BertForMaskedLM` with its head applied to the masked positions
  only (the encoder's output gathered first), `torch.optim.AdamW`, clipping 1.0, bf16 through
  `torch.autocast`.

Tokens/s = batch x seq_length / step time. Timed rounds are interleaved so a noisy machine
hurts every model alike; the best round counts; "ours / fastest peer" is the ratio in the
same run. Ours does the next-sentence head too (the peers do not), so the ratio is, if
anything, unfavourable to it. The last line is one JSON object with every figure.

    python benchmarks/pretrain.py --precisions=fp32,mixed_bfloat16 --xla=off,on
    python benchmarks/pretrain.py --num_layers=1 --batch_size=4 --seq_length=32   # quick look
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

# Whatever the caller set: keras-hub's masked-LM model logs an E-level oneDNN line ("supports
# DT_INT64 only on platforms with AVX-512") that would cut the table.
harness.start(override=True)

import warnings  # noqa: E402

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS
harness.define_flags(batch_size=32, seq_length=128, max_predictions_per_seq=20, num_layers=4,
                     steps=3, warmup=1, rounds=3, precisions=["fp32", "mixed_bfloat16"],
                     xla=["off", "on"], peers=["keras_hub", "hf_torch"],
                     help={"num_layers": "Transformer blocks (4 = the `small` preset)."})
flags.DEFINE_integer("hidden_size", 512, "Hidden size (512 = `small`; heads = hidden / 64).")

VOCAB = 30522
_POLICY = {"fp32": "float32", "mixed_bfloat16": "mixed_bfloat16"}


def _sizes():
    hidden = FLAGS.hidden_size
    if hidden % 64:
        raise app.UsageError(f"--hidden_size={hidden} is not a multiple of 64 (the head size)")
    return dict(hidden_size=hidden, num_attention_heads=hidden // 64,
                intermediate_size=4 * hidden, num_hidden_layers=FLAGS.num_layers)


def _data():
    """A batch as the original TFRecords hold it: ids, mask (some padding), segment ids,
    masked positions (distinct, ascending, never [CLS]), their ids and weights, NSP labels."""
    import numpy as np

    rng = np.random.default_rng(0)
    b, s, p = FLAGS.batch_size, FLAGS.seq_length, FLAGS.max_predictions_per_seq
    if p > s - 2:
        raise app.UsageError(f"--max_predictions_per_seq={p} does not fit --seq_length={s}")
    ids = rng.integers(1000, VOCAB, size=(b, s), dtype="int32")
    mask = np.ones_like(ids)
    mask[: b // 4, s * 3 // 4:] = 0  # some padding, as real batches have
    types = np.zeros_like(ids)
    types[:, s // 2:] = 1
    positions = np.sort(np.stack([rng.choice(np.arange(1, s * 3 // 4), p, replace=False)
                                  for _ in range(b)]), axis=1).astype("int32")
    masked_ids = np.take_along_axis(ids, positions, axis=1)
    weights = np.ones(positions.shape, "float32")
    nsp = rng.integers(0, 2, size=(b,), dtype="int32")
    return dict(ids=ids, mask=mask, types=types, positions=positions, masked_ids=masked_ids,
                weights=weights, nsp=nsp)


def _keras_runners(precision, d):
    import keras

    from keras_bert import BertConfig, BertEncoder, BertPretrainer
    import tensorflow as tf

    from keras_bert.training import PretrainingLoop, create_optimizer

    policy = _POLICY[precision]
    runners = []
    for xla in FLAGS.xla:
        jit = xla == "on"
        # Google's GELU, the tanh approximation, as keras-hub's BertBackbone and the torch
        # peer ("gelu_pytorch_tanh") compute it; keras_bert's registry sizes are "gelu_tanh".
        config = BertConfig(vocab_size=VOCAB, hidden_act="gelu_tanh", **_sizes())
        ours = BertPretrainer(BertEncoder(config, dtype=policy))
        loop = PretrainingLoop(ours, create_optimizer(1e-4, 10_000, num_warmup_steps=100),
                               global_batch_size=len(d["ids"]), jit_compile=jit)
        batch = {name: tf.constant(d[key]) for name, key in (
            ("input_word_ids", "ids"), ("input_mask", "mask"), ("input_type_ids", "types"),
            ("masked_lm_positions", "positions"), ("masked_lm_ids", "masked_ids"),
            ("masked_lm_weights", "weights"), ("next_sentence_labels", "nsp"))}

        def step(loop=loop, batch=batch):
            loop.train_step(batch)
            loop.take_train_metrics()  # reads the sums back: the step has finished

        runners.append((f"keras_bert (xla {xla})", "keras_bert", step))
        if "keras_hub" in FLAGS.peers:
            import keras_hub

            sizes = _sizes()
            backbone = keras_hub.models.BertBackbone(
                vocabulary_size=VOCAB, num_layers=sizes["num_hidden_layers"],
                num_heads=sizes["num_attention_heads"], hidden_dim=sizes["hidden_size"],
                intermediate_dim=sizes["intermediate_size"], max_sequence_length=512,
                dtype=policy)
            hub = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
            # Its backbone's pooler feeds nothing in a masked-LM model: Keras warns once.
            warnings.filterwarnings("ignore", message=r"Gradients do not exist for variables "
                                    r"\['pooled_dense/kernel'")
            hub.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01,
                                                         global_clipnorm=1.0),
                        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        weighted_metrics=[], jit_compile=jit)
            hx = {"token_ids": d["ids"], "segment_ids": d["types"],
                  "padding_mask": d["mask"].astype(bool), "mask_positions": d["positions"]}
            runners.append((f"keras_hub (xla {xla})", "keras_hub",
                            lambda m=hub, x=hx: m.train_on_batch(
                                x, d["masked_ids"], sample_weight=d["weights"])))
    return runners


def _torch_runner(precision, d):
    import torch
    import transformers

    sizes = _sizes()
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=sizes["hidden_size"],
        num_hidden_layers=sizes["num_hidden_layers"],
        num_attention_heads=sizes["num_attention_heads"],
        intermediate_size=sizes["intermediate_size"], hidden_act="gelu_pytorch_tanh",
        attn_implementation="sdpa")
    model = transformers.BertForMaskedLM(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    feed = {"input_ids": torch.from_numpy(d["ids"]).long(),
            "attention_mask": torch.from_numpy(d["mask"]).long(),
            "token_type_ids": torch.from_numpy(d["types"]).long()}
    positions = torch.from_numpy(d["positions"]).long()
    labels = torch.from_numpy(d["masked_ids"]).long()
    weights = torch.from_numpy(d["weights"])

    def loss():
        sequence = model.bert(**feed).last_hidden_state       # [b, s, h]
        index = positions.unsqueeze(-1).expand(-1, -1, sequence.shape[-1])
        gathered = torch.gather(sequence, 1, index)           # [b, p, h]
        logits = model.cls(gathered).float()                  # [b, p, vocab], float32
        losses = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), labels.reshape(-1), reduction="none")
        return (losses * weights.reshape(-1)).sum() / weights.sum()

    return ("hf_torch (masked positions)", "hf_torch",
            harness.torch_train_step(model, optimizer, loss, precision))


def main(argv):
    del argv
    peers = {name: harness.PEERS[name] for name in ("keras_hub", "hf_torch")}
    harness.require_contenders("--peers", FLAGS.peers, peers)  # each one runs, or none
    import keras_bert  # noqa: F401  (selects the TensorFlow backend, quietly)

    d = _data()
    results = []
    for precision in FLAGS.precisions:
        if precision not in _POLICY:
            raise app.UsageError(f"--precisions: {precision!r} is not one of {list(_POLICY)}")
        runners = _keras_runners(precision, d)
        if "hf_torch" in FLAGS.peers:
            runners.append(_torch_runner(precision, d))
        best = harness.best_rates(runners, FLAGS.batch_size * FLAGS.seq_length)  # tokens/s
        results += harness.rows_with_ratio(precision, runners, best, "tokens_per_s")

    sizes = _sizes()
    print(f"pre-training step, L{sizes['num_hidden_layers']}/H{sizes['hidden_size']}, batch "
          f"{FLAGS.batch_size} x seq {FLAGS.seq_length}, {FLAGS.max_predictions_per_seq} "
          f"predictions/seq, best of {FLAGS.rounds} rounds of {FLAGS.steps} step(s)")
    harness.print_table(results, "tokens_per_s", "tokens/s", 28, number="{:,.0f}")
    harness.print_summary({"batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length,
                           "max_predictions_per_seq": FLAGS.max_predictions_per_seq,
                           **sizes, "results": results})


if __name__ == "__main__":
    harness.run(main)
