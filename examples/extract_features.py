"""Per-token features of chosen encoder layers, as google-research/bert's extract_features.py.

Reads one input per line (a sentence, or a pair as "text_a ||| text_b"), runs the encoder
and writes one JSON object per line to --output_file:
{"linex_index": 0, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [...]}]}]}

    python examples/extract_features.py --input_file=input.txt --output_file=features.jsonl \
        --preset=minilm_l6 --layers=-1,-2,-3,-4 --seq_length=128
"""

import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

INPUT_FILE = flags.DEFINE_string("input_file", None, "One input a line; pairs as 'a ||| b'.",
                                 required=True)
OUTPUT_FILE = flags.DEFINE_string("output_file", None, "Where the JSON lines go.",
                                  required=True)
PRESET = flags.DEFINE_string("preset", "minilm_l6", "Preset (name or directory).")
LAYERS = flags.DEFINE_list("layers", ["-1", "-2", "-3", "-4"], "Encoder blocks to output.")
SEQ_LENGTH = flags.DEFINE_integer("seq_length", 128, "Longest packed sequence.", lower_bound=3)
BATCH_SIZE = flags.DEFINE_integer("batch_size", 32, "Inputs per forward pass.", lower_bound=1)


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert
    from keras_bert import storage
    from keras_bert.models.feature_extraction import extract_features

    try:
        with open(INPUT_FILE.value, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f]
    except (OSError, UnicodeDecodeError) as error:
        sys.exit(f"extract_features.py: cannot read {INPUT_FILE.value}: {error}")
    empty = [i + 1 for i, line in enumerate(lines) if not line.strip()]
    if empty or not lines:
        sys.exit(f"extract_features.py: {INPUT_FILE.value} line {empty[0] if empty else 1}: "
                 "empty; give one input a line")
    a = [line.split(" ||| ", 1)[0] for line in lines]
    b = [line.split(" ||| ", 1)[1] if " ||| " in line else "" for line in lines]
    try:
        layers = [int(x) for x in LAYERS.value]
        encoder = keras_bert.BertEncoder.from_preset(PRESET.value)
        preprocessor = keras_bert.BertPreprocessor.from_preset(PRESET.value,
                                                               seq_length=SEQ_LENGTH.value)
        records = extract_features(encoder, preprocessor, a, b if any(b) else None,
                                   layers=layers, batch_size=BATCH_SIZE.value)
        # Atomically (no half-written output), local or gs://.
        storage.write_lines(OUTPUT_FILE.value, (json.dumps(record) for record in records))
    except (ValueError, keras_bert.checkpoints.CheckpointError, OSError) as error:
        sys.exit(f"extract_features.py: {error}")
    print(f"wrote {len(lines)} records ({len(layers)} layers each) to {OUTPUT_FILE.value}")


if __name__ == "__main__":
    app.run(main)
