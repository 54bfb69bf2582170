"""Stand-ins for the Hugging Face Hub and Kaggle on 127.0.0.1, speaking what the hubs' own
clients (huggingface_hub, kagglehub) ask, and small real checkpoints in each hub's format.

`HfHub` answers ``GET /api/models/<repo>[/revision/<rev>]?blobs=True`` (``HfApi.model_info``)
and ``HEAD``/``GET /<repo>/resolve/<commit>/<file>`` (``hf_hub_download``: the commit, ETag
and size headers it reads). `KaggleHub` answers kagglesdk's ``POST /api/v1/models.
ModelApiService/<method>`` calls (``GetModelInstance``, ``ListModelInstanceVersionFiles``,
``DownloadModelInstanceVersion``, which redirects to the file, served with the
``X-Goog-Hash`` MD5 kagglehub checks).
"""

import base64
import hashlib
import http.server
import json
import pathlib
import urllib.parse

import numpy as np

from tests.local_http import LocalHTTPServer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "movie", "was", "great", "dull",
         "a", "plot", "##s", "good"] + [f"w{i}" for i in range(18)]
SIZES = dict(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=32, max_position_embeddings=24)


class StandIn:
    """http.server on 127.0.0.1 in a thread; ``requests`` records (method, path)."""

    def __init__(self):
        self.requests = []
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stand_in.requests.append((method, self.path))
                status, headers, payload = stand_in.answer(method, self.path, body)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(payload)

            def do_GET(self):
                self._answer("GET")

            def do_HEAD(self):
                self._answer("HEAD")

            def do_POST(self):
                self._answer("POST")

            def log_message(self, *args):
                pass

        self.http = LocalHTTPServer(Handler)
        self.port, self.url = self.http.port, self.http.url

    def close(self):
        self.http.close()


def _json(status, values):
    return status, {"Content-Type": "application/json"}, json.dumps(values).encode()


class HfHub(StandIn):
    """The Hugging Face Hub for one repository: ``files`` (path -> bytes) at ``commit``."""

    def __init__(self, repo_id, files, commit="0123456789abcdef0123456789abcdef01234567",
                 lfs=("model.safetensors", "pytorch_model.bin", "model.weights.h5")):
        self.repo_id, self.files, self.commit, self.lfs = repo_id, dict(files), commit, lfs
        self.listed_sha256 = {}  # file -> the sha256 the listing claims (default: the real one)
        self.fail_api = None  # an HTTP status for every API call (a Hub that is down)
        super().__init__()

    def _sibling(self, name):
        data = self.files[name]
        sibling = {"rfilename": name, "size": len(data),
                   "blobId": hashlib.sha1(data).hexdigest()}
        if name in self.lfs:
            sha = self.listed_sha256.get(name, hashlib.sha256(data).hexdigest())
            sibling["lfs"] = {"size": len(data), "sha256": sha, "pointerSize": 134}
        return sibling

    def answer(self, method, path, body):
        path = urllib.parse.urlsplit(path).path
        api = f"/api/models/{self.repo_id}"
        if path.startswith("/api/models/") and not path.startswith(api + "/") and path != api:
            status, headers, body = _json(404, {"error": "Repository Not Found"})
            return status, dict(headers, **{"X-Error-Code": "RepoNotFound"}), body
        if path.startswith(api):
            rest = path[len(api):]
            if self.fail_api:
                return _json(self.fail_api, {"error": "Service Unavailable"})
            if rest not in ("", "/revision/main", f"/revision/{self.commit}"):
                status, headers, body = _json(404, {"error": "Revision Not Found"})
                return status, dict(headers, **{"X-Error-Code": "RevisionNotFound"}), body
            return _json(200, {"id": self.repo_id, "sha": self.commit,
                               "siblings": [self._sibling(n) for n in sorted(self.files)]})
        resolve = f"/{self.repo_id}/resolve/{self.commit}/"
        if path.startswith(resolve) and path[len(resolve):] in self.files:
            data = self.files[path[len(resolve):]]
            etag = (hashlib.sha256(data).hexdigest() if path.endswith(self.lfs)
                    else hashlib.sha1(data).hexdigest())
            return 200, {"X-Repo-Commit": self.commit, "ETag": f'"{etag}"',
                         "Content-Type": "application/octet-stream"}, data
        return 404, {"X-Error-Code": "EntryNotFound"}, b"not found"


class KaggleHub(StandIn):
    """Kaggle's model API for one model instance: ``files`` (path -> bytes) of ``version``."""

    def __init__(self, handle, files, version=3):
        self.owner, self.model, self.framework, self.variation = handle.split("/")[:4]
        self.files, self.version = dict(files), version
        self.fail_api = None  # an HTTP status for every API call (a Kaggle that is down)
        super().__init__()

    def answer(self, method, path, body):
        prefix = "/api/v1/models.ModelApiService/"
        if method == "GET" and path.startswith("/files/"):
            name = urllib.parse.unquote(path[len("/files/"):].split("/", 1)[1])
            data = self.files[name]
            md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
            return 200, {"X-Goog-Hash": f"crc32c=AAAAAA==,md5={md5}",
                         "Content-Type": "application/octet-stream"}, data
        if method != "POST" or not path.startswith(prefix):
            return 404, {}, b""
        if self.fail_api:
            return _json(self.fail_api, {"code": self.fail_api, "message": "Unavailable"})
        request = json.loads(body or b"{}")
        if (request.get("ownerSlug"), request.get("modelSlug"), request.get("instanceSlug")) != (
                self.owner, self.model, self.variation):
            return _json(404, {"code": 404, "message": "Not found"})
        method_name = path[len(prefix):]
        if method_name == "GetModelInstance":
            return _json(200, {"versionNumber": self.version, "slug": self.variation})
        if request.get("versionNumber") != self.version:
            return _json(404, {"code": 404, "message": "No such version"})
        if method_name == "ListModelInstanceVersionFiles":
            return _json(200, {"files": [{"name": n, "size": len(d)}
                                         for n, d in sorted(self.files.items())],
                               "nextPageToken": ""})
        if method_name == "DownloadModelInstanceVersion":
            location = f"/files/{self.version}/{urllib.parse.quote(request['path'])}"
            return 302, {"Location": location}, b""
        return _json(404, {"code": 404, "message": f"no {method_name}"})


# ------------------------------------------------------------------------ checkpoints
def canonical_weights(seed=0):
    """Random canonical weights (Google's names) of a `SIZES` encoder."""
    from keras_bert import BertConfig
    from keras_bert.checkpoints.common import encoder_shapes

    rng = np.random.default_rng(seed)
    config = BertConfig(hidden_act="gelu_tanh", **SIZES)
    return {k: rng.normal(0, 0.3, s).astype("float32")
            for k, s in encoder_shapes(config).items()}


def write_hf_checkpoint(directory, torch_format=False, vocab_txt=True):
    """A Hugging Face BERT written by transformers itself (``BertModel.save_pretrained``:
    ``model.safetensors``, or ``pytorch_model.bin`` with ``torch_format``), with the tokenizer
    files of ``BertTokenizer.save_pretrained`` (transformers 5 writes ``tokenizer.json`` and
    ``tokenizer_config.json``) and, with ``vocab_txt``, the ``vocab.txt`` BERT repositories
    carry. Returns the directory."""
    import torch
    import transformers

    directory = pathlib.Path(directory)
    config = transformers.BertConfig(
        vocab_size=SIZES["vocab_size"], hidden_size=SIZES["hidden_size"],
        num_hidden_layers=SIZES["num_hidden_layers"],
        num_attention_heads=SIZES["num_attention_heads"],
        intermediate_size=SIZES["intermediate_size"],
        max_position_embeddings=SIZES["max_position_embeddings"])
    torch.manual_seed(0)
    model = transformers.BertModel(config)
    model.save_pretrained(str(directory))
    if torch_format:  # transformers 5 writes safetensors only; older ones wrote this
        torch.save(model.state_dict(), str(directory / "pytorch_model.bin"))
        (directory / "model.safetensors").unlink()
    (directory / "vocab_src.txt").write_text("\n".join(VOCAB) + "\n")
    tokenizer = transformers.BertTokenizer(str(directory / "vocab_src.txt"), do_lower_case=True)
    tokenizer.save_pretrained(str(directory))
    (directory / "vocab_src.txt").unlink()
    if vocab_txt:
        (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return directory


def assign_to_backbone(backbone, weights):
    """Assigns canonical weights (``{Google's name: array}``) into a built
    ``keras_hub.models.BertBackbone``, the inverse of
    `keras_bert.checkpoints.keras_hub.backbone_to_canonical`, reshaped to keras-hub's
    multi-head layouts: how a test makes a keras-hub checkpoint of known weights."""
    from keras_bert.checkpoints import keras_hub as kh

    for variable in backbone.weights:
        name = kh.canonical_name(variable.path)
        if name is None:
            continue
        value = np.asarray(weights[name], dtype=np.float32)
        variable.assign(value.reshape(variable.shape))


def write_keras_hub_preset(directory):
    """A keras-hub preset written by keras-hub itself (``BertBackbone.save_to_preset``,
    ``BertTokenizer.save_to_preset``). Returns the directory."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=SIZES["vocab_size"], num_layers=SIZES["num_hidden_layers"],
        num_heads=SIZES["num_attention_heads"], hidden_dim=SIZES["hidden_size"],
        intermediate_dim=SIZES["intermediate_size"],
        max_sequence_length=SIZES["max_position_embeddings"])
    assign_to_backbone(backbone, canonical_weights())
    backbone.save_to_preset(str(directory))
    keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True).save_to_preset(
        str(directory))
    return pathlib.Path(directory)


def files_of(directory):
    """{relative path: bytes} of every file under ``directory``."""
    directory = pathlib.Path(directory)
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}
