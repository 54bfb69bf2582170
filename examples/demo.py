"""keras_bert demo: sentence similarity with the `minilm_l6` preset.

Loads the preset's preprocessor and encoder, encodes a few sentences, mean-pools
`sequence_output` over `input_mask` into sentence embeddings and prints their cosine
similarities.

    python examples/demo.py
    python examples/demo.py --preset=minilm_l6 --sentences="A cat sat." --sentences="A dog ran."
"""

import contextlib
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported

from absl import app, flags, logging  # noqa: E402

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is playing an instrument.",
    "The new movie is awesome.",
    "The film was great fun to watch.",
    "The stock market fell sharply today.",
]

PRESET = flags.DEFINE_string("preset", "minilm_l6", "Preset name or directory to load.")
SENTENCES_FLAG = flags.DEFINE_multi_string(
    "sentences", None, "Sentences to compare (repeat the flag); a built-in set by default."
)

TF_LOGS = flags.DEFINE_bool(
    "tf_logs", False, "Show TensorFlow's C++ start-up logs (hidden by default)."
)


@contextlib.contextmanager
def quiet_native_stderr(enabled=True):
    """Hides what C++ code writes to stderr (file descriptor 2) inside the block.

    TensorFlow 2.21 logs through absl before absl logging is initialized, which ignores
    TF_CPP_MIN_LOG_LEVEL; its import and device start-up print a few INFO/ERROR lines (oneDNN,
    "could not find cuda drivers") that say nothing about the demo. Python errors still show:
    they are printed after the block has restored stderr.
    """
    if not enabled:
        yield
        return
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def mean_pool(sequence_output, input_mask):
    """Average of the token vectors over real (non-padding) tokens: [batch, hidden]."""
    import numpy as np

    mask = np.asarray(input_mask, dtype="float32")[:, :, None]  # [batch, seq, 1]
    summed = (np.asarray(sequence_output, dtype="float32") * mask).sum(axis=1)
    return summed / np.maximum(mask.sum(axis=1), 1.0)


def cosine_table(embeddings):
    import numpy as np

    unit = embeddings / np.linalg.norm(embeddings, axis=-1, keepdims=True)
    return unit @ unit.T


def format_table(sentences, similarities, width=36):
    labels = [s if len(s) <= width else s[: width - 3] + "..." for s in sentences]
    header = " " * (width + 6) + "".join(f"{f'[{j}]':>7}" for j in range(len(sentences)))
    rows = [header]
    for i, label in enumerate(labels):
        cells = "".join(f"{similarities[i, j]:7.3f}" for j in range(len(sentences)))
        rows.append(f"[{i}] {label:<{width}}  {cells}")
    return "\n".join(rows)


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    with quiet_native_stderr(enabled=not TF_LOGS.value):
        import tensorflow as tf

        tf.config.list_logical_devices()  # device start-up logs its lines here
    tf.get_logger().setLevel("ERROR")
    import keras_bert

    sentences = SENTENCES_FLAG.value or SENTENCES
    preprocessor = keras_bert.BertPreprocessor.from_preset(PRESET.value)
    encoder = keras_bert.BertEncoder.from_preset(PRESET.value)

    inputs = preprocessor(tf.constant(sentences))
    outputs = encoder(inputs)
    embeddings = mean_pool(outputs["sequence_output"], inputs["input_mask"])

    print(f"keras_bert {keras_bert.__version__}: preset {PRESET.value!r}, "
          f"{len(sentences)} sentences -> embeddings of size {embeddings.shape[-1]}")
    print("Cosine similarity of the mean-pooled sequence_output:\n")
    print(format_table(sentences, cosine_table(embeddings)))


if __name__ == "__main__":
    app.run(main)
