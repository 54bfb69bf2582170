"""Hub handles: ``hf://owner/name[@revision]``, ``kaggle://owner/model/framework/variation``.

A Kaggle handle may end in ``/version``. `parse` reads a handle (or the web address of the
same model: ``https://huggingface.co/owner/name``,
``https://www.kaggle.com/models/owner/model/framework/variation/version``) into a `Handle`;
`check_scheme` refuses a preset string whose scheme is neither a hub's nor a file system's
that TensorFlow has (``gs://``, ``ram://``, local paths), listing the supported ones.

>>> handle = parse("hf://sentence-transformers/all-MiniLM-L6-v2@main")
>>> handle.hub, handle.repo_id, handle.revision
('hf', 'sentence-transformers/all-MiniLM-L6-v2', 'main')
>>> handle.cache_parts
('hf', 'sentence-transformers', 'all-MiniLM-L6-v2', 'main')
>>> parse("kaggle://keras/bert/keras/bert_tiny_en_uncased/3").kaggle_handle
'keras/bert/keras/bert_tiny_en_uncased/3'
"""

import dataclasses
import re
import urllib.parse

from keras_bert.checkpoints.common import CheckpointError

HUB_SCHEMES = ("hf", "kaggle")
SUPPORTED = (
    "a registered name (keras_bert.presets()), a keras-hub preset name or a TF Hub / Kaggle "
    "handle of Google's BERT (mapped to the registered preset); hf://owner/name[@revision]; "
    "kaggle://owner/model/framework/variation[/version]; a local path, or gs://, ram:// or "
    "any other file system TensorFlow has ({schemes})"
)
_HF_URL = re.compile(r"^https?://(?:www\.)?huggingface\.co/([^/@]+/[^/@]+?)"
                     r"(?:/tree/([^/]+))?/?$", re.IGNORECASE)
_KAGGLE_URL = re.compile(
    r"^https?://(?:www\.)?kaggle\.com/models/([^/]+)/([^/]+)(?:/frameworks)?/([^/]+)"
    r"(?:/variations)?/([^/]+)(?:(?:/versions)?/(\d+))?/?$", re.IGNORECASE)
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class UnsupportedHandleError(CheckpointError):
    """A preset string with a scheme keras_bert cannot load, or a malformed hub handle.

    >>> try:
    ...     check_scheme("s3://bucket/bert", ("", "file", "gs", "ram"))
    ... except UnsupportedHandleError as error:
    ...     print(error)
    Unsupported scheme 's3://' in 's3://bucket/bert'. A preset is ...
    """


@dataclasses.dataclass(frozen=True)
class Handle:
    """A parsed hub handle.

    ``hub`` is ``"hf"`` or ``"kaggle"``; ``parts`` the path's pieces (``owner``, ``name`` for
    Hugging Face; ``owner``, ``model``, ``framework``, ``variation`` for Kaggle); ``revision``
    the Hugging Face revision or the Kaggle version (None: the newest, resolved once).

    >>> handle = parse("kaggle://keras/bert/keras/bert_tiny_en_uncased")
    >>> handle.hub, handle.name, handle.revision, str(handle)
    ('kaggle', 'bert_tiny_en_uncased', None, 'kaggle://keras/bert/keras/bert_tiny_en_uncased')
    """

    hub: str
    parts: tuple
    revision: str = None
    text: str = ""

    @property
    def repo_id(self):
        return "/".join(self.parts)

    @property
    def kaggle_handle(self):
        """The handle as `kagglehub.model_download` takes it (no scheme)."""
        return "/".join(self.parts + ((self.revision,) if self.revision else ()))

    @property
    def name(self):
        return self.parts[-1]

    @property
    def cache_parts(self):
        """Where its converted copy lives under the cache root (the handle, as typed: a
        handle without a revision or version is resolved once, when first loaded)."""
        default = "main" if self.hub == "hf" else "latest"
        revision = urllib.parse.quote(self.revision or default, safe="")
        return (self.hub,) + self.parts + (revision,)

    def __str__(self):
        if self.hub == "hf":
            return f"hf://{self.repo_id}" + (f"@{self.revision}" if self.revision else "")
        return f"kaggle://{self.kaggle_handle}"


def scheme(text):
    """The scheme of ``text`` (``"hf"`` for ``hf://...``), or None."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    return match.group(1).lower() if match else None


def web_handle(text):
    """The hub handle a web address of a model on the Hugging Face Hub or Kaggle stands for,
    or None."""
    match = _HF_URL.match(text)
    if match:
        return f"hf://{match.group(1)}" + (f"@{match.group(2)}" if match.group(2) else "")
    match = _KAGGLE_URL.match(text)
    if match:
        owner, model, framework, variation, version = match.groups()
        return f"kaggle://{owner}/{model}/{framework}/{variation}" + (
            f"/{version}" if version else "")
    return None


def _bad(text, expected):
    return UnsupportedHandleError(f"Malformed handle {text!r}: expected {expected}.")


def parse(text):
    """The `Handle` of ``text`` (``hf://``, ``kaggle://`` or a web address of either); a
    malformed one is an `UnsupportedHandleError` that shows the expected form."""
    text = text.strip()
    text = web_handle(text) or text
    kind = scheme(text)
    rest = text.split("://", 1)[1] if kind else ""
    if kind == "hf":
        expected = "hf://owner/name or hf://owner/name@revision"
        path, _, revision = rest.partition("@")
        parts = tuple(path.strip("/").split("/"))
        if len(parts) != 2 or not all(_SLUG.match(p) for p in parts) or (
                "@" in text and not revision):
            raise _bad(text, expected)
        return Handle("hf", parts, revision or None, text)
    if kind == "kaggle":
        expected = "kaggle://owner/model/framework/variation or .../variation/version"
        parts = tuple(rest.strip("/").split("/"))
        version = None
        if len(parts) == 5:
            parts, version = parts[:4], parts[4]
            if not version.isdigit():
                raise _bad(text, expected + " (the version is a number)")
        if len(parts) != 4 or not all(_SLUG.match(p) for p in parts):
            raise _bad(text, expected)
        return Handle("kaggle", parts, version, text)
    raise UnsupportedHandleError(f"{text!r} is not a hub handle (hf:// or kaggle://).")


def is_hub_handle(text):
    return scheme(text) in HUB_SCHEMES or web_handle(text) is not None


def check_scheme(text, file_system_schemes):
    """`UnsupportedHandleError` unless ``text`` has no scheme, a hub's, or one of
    ``file_system_schemes`` (those TensorFlow has a file system for)."""
    kind = scheme(text)
    if kind is None or kind in HUB_SCHEMES or kind in file_system_schemes:
        return
    schemes = ", ".join(f"{s}://" for s in sorted(s for s in file_system_schemes if s))
    hint = ""
    if kind in ("http", "https"):
        hint = (" A web address is understood only for a model page on huggingface.co or "
                "kaggle.com, or a tfhub.dev BERT; download anything else and pass the file "
                "or directory.")
    elif kind == "tfhub":
        hint = " TF Hub handles are written https://tfhub.dev/tensorflow/<name>/<version>."
    raise UnsupportedHandleError(
        f"Unsupported scheme '{kind}://' in {text!r}. A preset is "
        f"{SUPPORTED.format(schemes=schemes)}.{hint}")
