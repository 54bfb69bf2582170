"""Converters between BERT checkpoint formats and the canonical weights dict.

Formats: Google's original TF1 checkpoints (`google`), Hugging Face safetensors /
``pytorch_model.bin`` (`huggingface`), keras-hub presets (`keras_hub`), and keras_bert's own
layout (`keras_bert_layout`). See `keras_bert.checkpoints.common` for the canonical names.
"""

from keras_bert.checkpoints.common import CheckpointError, check_vocab, encoder_shapes
from keras_bert.checkpoints.formats import FORMATS, Preset, detect_format, open_directory

__all__ = [
    "CheckpointError",
    "FORMATS",
    "Preset",
    "check_vocab",
    "detect_format",
    "encoder_shapes",
    "open_directory",
]
