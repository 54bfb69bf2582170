"""Test helpers: small real Google-format checkpoints, their zips, a local HTTP server."""

import http.server
import io
import json
import threading
import zipfile

import numpy as np

from keras_bert import BertConfig
from keras_bert.checkpoints import google
from keras_bert.checkpoints.common import encoder_shapes, head_shapes
from keras_bert.presets import PresetSpec
from tests.local_http import LocalHTTPServer

TINY = dict(vocab_size=30522, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=16, max_position_embeddings=32, hidden_act="gelu_tanh")
# A registry entry for a TINY checkpoint; tests put it in PRESETS and serve its zip.
TOY = PresetSpec("toy", "test preset", TINY["num_hidden_layers"], TINY["hidden_size"],
                 TINY["num_attention_heads"], TINY["vocab_size"], True, "google",
                 path="2099_01_01/uncased_L-2_H-8_A-2.zip", intermediate_size=16,
                 max_position_embeddings=32)


def write_google_dir(directory, config=None, seed=0, slots=True):
    """Writes a Google BERT directory (random weights, heads, optimizer slots) like the zips."""
    config = config or BertConfig(**TINY)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    shapes = encoder_shapes(config)
    shapes.update(head_shapes(config))
    weights = {k: rng.normal(0, 0.5, s).astype("float32") for k, s in shapes.items()}
    stored = dict(weights)
    if slots:
        stored["bert/pooler/dense/kernel/adam_m"] = np.zeros(shapes["bert/pooler/dense/kernel"],
                                                            "float32")
        stored["global_step"] = np.zeros((), "float32")
    google.write_checkpoint(stored, str(directory / "bert_model.ckpt"))
    (directory / "bert_config.json").write_text(json.dumps(google.config_to_json(config)))
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"tok{i}" for i in range(config.vocab_size - len(tokens))]
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n")
    return config, weights


def zip_dir(directory, folder=None):
    """Zips ``directory`` the way Google's archives are laid out (optionally in one folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.iterdir()):
            archive.write(path, f"{folder}/{path.name}" if folder else path.name)
    return buffer.getvalue()


class Server:
    """http.server on 127.0.0.1 in a thread; ``routes`` maps paths to bytes."""

    def __init__(self):
        self.routes, self.requests = {}, []
        self.truncate = set()  # paths whose body is cut off halfway
        self.stall = set()  # paths whose body stops halfway until close()
        self.closing = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = server.routes.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in server.stall:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    server.closing.wait(120)
                    self.close_connection = True
                    return
                if self.path in server.truncate:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.http = LocalHTTPServer(Handler)
        self.url = self.http.url

    def close(self):
        self.closing.set()
        self.http.close()
