"""Sentence similarity with the `minilm_l6` preset (no training).

Loads the preset's preprocessor and encoder, encodes a few sentences, mean-pools
`sequence_output` over `input_mask` into sentence embeddings and prints their cosine
similarities.

    python examples/sentence_similarity.py
    python examples/sentence_similarity.py --preset=minilm_l6 --sentences="A cat sat." --sentences="A dog ran."
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

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


def mean_pool(sequence_output, input_mask):
    """Average of the token vectors over real (non-padding) tokens: [batch, hidden]."""
    import numpy as np

    mask = np.asarray(input_mask, dtype="float32")[:, :, None]  # [batch, seq, 1]
    summed = (np.asarray(sequence_output, dtype="float32") * mask).sum(axis=1)  # [batch, hidden]
    return summed / np.maximum(mask.sum(axis=1), 1.0)


def cosine_table(embeddings):
    """[batch, hidden] -> [batch, batch] cosine similarities."""
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
    import keras_bert  # loads TensorFlow quietly (see keras_bert/backend.py)

    sentences = SENTENCES_FLAG.value or SENTENCES
    try:
        preprocessor = keras_bert.BertPreprocessor.from_preset(PRESET.value)
        encoder = keras_bert.BertEncoder.from_preset(PRESET.value)
    except keras_bert.checkpoints.CheckpointError as error:  # unknown, missing or bad preset
        sys.exit(f"sentence_similarity.py: {error}")

    with keras_bert.backend.quiet_native_stderr():  # TF's one-off oneDNN notices
        inputs = preprocessor(sentences)
        outputs = encoder(inputs)
    embeddings = mean_pool(outputs["sequence_output"], inputs["input_mask"])

    print(
        f"keras_bert {keras_bert.__version__}: preset {PRESET.value!r}, {len(sentences)} "
        f"sentences -> embeddings of size {embeddings.shape[-1]}"
    )
    print("Cosine similarity of the mean-pooled sequence_output:\n")
    print(format_table(sentences, cosine_table(embeddings)))


if __name__ == "__main__":
    app.run(main)
