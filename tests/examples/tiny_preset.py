"""A tiny random Google-format preset directory for running the examples fast."""

from keras_bert.checkpoints import google
from tests.models.tiny import VOCAB, tiny_encoder


def write_tiny_preset(directory, seed=0):
    """Writes bert_config.json, vocab.txt and bert_model.ckpt.* of a 2-layer random encoder
    (tests/models/tiny.py's vocabulary) into ``directory``; returns it as a string."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    encoder = tiny_encoder(seed=seed)
    google.write_directory(str(directory), encoder.bert_config, encoder.get_canonical_weights(),
                           vocab_path=str(directory / "vocab.txt"))
    return str(directory)
