"""Fine-tuning step throughput: `BertClassifier` beside keras-hub and Hugging Face torch.

One training step (forward, loss, backward, optimizer update) of a sentence classifier at
BERT-base size (L12/H768/A12/I3072, vocab 30522, random weights, 2 classes), batch 32 x seq
128 by default, for:

* keras_bert: `BertClassifier(BertEncoder(config), 2)` compiled with the original recipe
  (`keras_bert.training.create_optimizer`: AdamW, warm-up + linear decay, clipping 1.0);
  its last block computes the [CLS] row only, the one its head reads (same logits and
  gradients; the peers compute every row);
* keras_hub: `keras_hub.models.BertTextClassifier` on a `BertBackbone` of the same size,
  compiled with `keras.optimizers.AdamW` (clipping 1.0), the same loss;
* hf_torch: `transformers.BertForSequenceClassification` with `torch.optim.AdamW`, clipping
  1.0 (bf16: `torch.autocast`).

The Keras models step through ``train_on_batch`` (their compiled train function; ``--xla``
sets ``jit_compile``); timed rounds are interleaved so a noisy machine hurts all alike, the
best round counts. Prints examples/s and ours / the fastest peer per precision; the last line
is one JSON object with every figure.

    python benchmarks/finetune.py --precisions=fp32,mixed_bfloat16 --xla=off,on
    python benchmarks/finetune.py --num_layers=2 --batch_size=8 --seq_length=32   # quick look
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start()  # before TensorFlow: keep the table clean

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS
harness.define_flags(batch_size=32, seq_length=128, num_layers=12, steps=1, warmup=1, rounds=3,
                     precisions=["fp32", "mixed_bfloat16"], xla=["off"],
                     peers=["keras_hub", "hf_torch"])

# BERT as Google released it: GELU is the tanh approximation (google-research/bert's
# modeling.gelu; keras_bert's registry sizes are "gelu_tanh"; keras-hub's BertBackbone uses
# gelu_approximate; Hugging Face: "gelu_pytorch_tanh"). The erf form costs more.
_BASE = dict(hidden_act="gelu_tanh",
             vocab_size=30522, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
             max_position_embeddings=512, type_vocab_size=2)
_POLICY = {"fp32": "float32", "mixed_bfloat16": "mixed_bfloat16"}


def _data():
    import numpy as np

    rng = np.random.default_rng(0)
    b, s = FLAGS.batch_size, FLAGS.seq_length
    ids = rng.integers(1000, _BASE["vocab_size"], size=(b, s), dtype="int32")
    mask = np.ones_like(ids)
    mask[: b // 2, s * 3 // 4:] = 0  # some padding, as real batches have
    types = np.zeros_like(ids)
    types[:, s // 2:] = 1
    labels = rng.integers(0, 2, size=(b,), dtype="int32")
    return ids, mask, types, labels


def _keras_runners(precision, ids, mask, types, labels):
    import keras

    from keras_bert import BertClassifier, BertConfig, BertEncoder
    from keras_bert.training import create_optimizer

    policy = _POLICY[precision]
    steps = 10_000  # a schedule long enough never to end during the benchmark
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    runners = []
    for xla in FLAGS.xla:
        jit = xla == "on"
        config = BertConfig(**_BASE, num_hidden_layers=FLAGS.num_layers)
        ours = BertClassifier(BertEncoder(config, dtype=policy), num_classes=2)
        ours.compile(optimizer=create_optimizer(5e-5, steps, warmup_ratio=0.1), loss=loss,
                     jit_compile=jit)
        x = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
        runners.append((f"keras_bert (xla {xla})", "keras_bert",
                        lambda m=ours, x=x: m.train_on_batch(x, labels)))
        if "keras_hub" in FLAGS.peers:
            import keras_hub

            backbone = keras_hub.models.BertBackbone(
                vocabulary_size=_BASE["vocab_size"], num_layers=FLAGS.num_layers,
                num_heads=_BASE["num_attention_heads"], hidden_dim=_BASE["hidden_size"],
                intermediate_dim=_BASE["intermediate_size"],
                max_sequence_length=_BASE["max_position_embeddings"], dtype=policy)
            hub = keras_hub.models.BertTextClassifier(backbone, num_classes=2,
                                                      preprocessor=None)
            hub.compile(optimizer=keras.optimizers.AdamW(5e-5, global_clipnorm=1.0),
                        loss=loss, jit_compile=jit)
            hx = {"token_ids": ids, "segment_ids": types, "padding_mask": mask.astype(bool)}
            runners.append((f"keras_hub (xla {xla})", "keras_hub",
                            lambda m=hub, x=hx: m.train_on_batch(x, labels)))
    return runners


def _torch_runner(precision, ids, mask, types, labels):
    import torch
    import transformers

    config = transformers.BertConfig(
        vocab_size=_BASE["vocab_size"], hidden_size=768, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=12, intermediate_size=3072, num_labels=2,
        hidden_act="gelu_pytorch_tanh",
        attn_implementation="sdpa")
    model = transformers.BertForSequenceClassification(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, eps=1e-6)
    feed = {"input_ids": torch.from_numpy(ids).long(),
            "attention_mask": torch.from_numpy(mask).long(),
            "token_type_ids": torch.from_numpy(types).long(),
            "labels": torch.from_numpy(labels).long()}

    return ("hf_torch", "hf_torch",
            harness.torch_train_step(model, optimizer, lambda: model(**feed).loss, precision))


def main(argv):
    del argv
    peers = {name: harness.PEERS[name] for name in ("keras_hub", "hf_torch")}
    harness.require_contenders("--peers", FLAGS.peers, peers)  # each one runs, or none
    import keras_bert  # noqa: F401  (selects the TensorFlow backend, quietly)

    ids, mask, types, labels = _data()
    results = []
    for precision in FLAGS.precisions:
        if precision not in _POLICY:
            raise app.UsageError(f"--precisions: {precision!r} is not one of {list(_POLICY)}")
        runners = _keras_runners(precision, ids, mask, types, labels)
        if "hf_torch" in FLAGS.peers:
            runners.append(_torch_runner(precision, ids, mask, types, labels))
        best = harness.best_rates(runners, FLAGS.batch_size)  # examples/s
        results += harness.rows_with_ratio(precision, runners, best, "examples_per_s")

    print(f"fine-tuning step, L{FLAGS.num_layers}/H768, batch {FLAGS.batch_size} x seq "
          f"{FLAGS.seq_length}, best of {FLAGS.rounds} rounds of {FLAGS.steps} step(s)")
    harness.print_table(results, "examples_per_s", "examples/s", 26)
    harness.print_summary({"batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length,
                           "num_layers": FLAGS.num_layers, "results": results})


if __name__ == "__main__":
    harness.run(main)
