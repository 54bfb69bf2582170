"""What the server serves and how it batches, read as `tensorflow_model_server` reads it.

Models come from ``--model_name``/``--model_base_path`` or from ``--model_config_file``, a
text-format ``tensorflow.serving.ModelServerConfig`` (parsed with the protos of
tensorflow-serving-api)::

    model_config_list {
      config { name: "sentiment" base_path: "/models/sentiment" model_platform: "tensorflow" }
      config {
        name: "topics" base_path: "/models/topics"
        model_version_policy { specific { versions: 1 versions: 2 } }
        version_labels { key: "stable" value: 1 }
      }
    }

Batching comes from ``--batching_parameters_file``, a text-format
``tensorflow.serving.BatchingParameters`` (``max_batch_size { value: 32 }``, ...). The
tensorflow-serving-api wheel does not ship that proto, so it is declared here with the same
package, names and field numbers as TF Serving's ``session_bundle_config.proto``.

Every problem is a `ServerConfigError` naming the file (and line, for syntax) or the flag.
"""

import dataclasses
import os

from keras_bert import storage
from keras_bert.serving.batching import BatchingOptions
from keras_bert.serving.errors import ServerConfigError


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One model to serve: its name, base path (numeric version directories below it), the
    versions to serve (``("latest", n)``, ``("all",)`` or ``("specific", (v, ...))``) and
    version labels (``{"stable": 1}``).

    Example:

    >>> config = ModelConfig("sentiment", "/models/sentiment", ("specific", (1, 2)),
    ...                      (("stable", 1),))
    >>> config.version_policy, config.labels()
    (('specific', (1, 2)), {'stable': 1})
    """

    name: str
    base_path: str
    version_policy: tuple = ("latest", 1)
    version_labels: tuple = ()  # ((label, version), ...)

    def labels(self):
        return dict(self.version_labels)


def models_from_flags(model_name, model_base_path, model_config_file):
    """The models of the command line: a config file, or one `--model_name` at
    `--model_base_path` (TF Serving's flags; `--model_name` defaults to "default")."""
    if model_config_file and model_base_path:
        raise ServerConfigError("give --model_config_file or --model_base_path, not both")
    if model_config_file:
        return read_model_config_file(model_config_file)
    if not model_base_path:
        raise ServerConfigError("give --model_base_path (with --model_name) or "
                                "--model_config_file: there is no model to serve")
    return [ModelConfig(model_name or "default", _base_path(model_base_path))]


def read_model_config_file(path):
    """The models of a text-format ``ModelServerConfig`` file, as a list of `ModelConfig`."""
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    text = _read_text(path, "--model_config_file")
    config = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as error:
        raise ServerConfigError(
            f"{path}:{error.GetLine()}:{error.GetColumn()}: not a valid ModelServerConfig "
            f"text proto: {_parse_message(error)}") from None
    if config.HasField("custom_model_config"):
        raise ServerConfigError(f"{path}: custom_model_config is not supported; use "
                                "model_config_list")
    if not config.model_config_list.config:
        raise ServerConfigError(f"{path}: model_config_list has no `config {{ ... }}` entry: "
                                "there is no model to serve")
    models, seen = [], set()
    for index, entry in enumerate(config.model_config_list.config):
        where = f"{path}: model_config_list.config[{index}]"
        if not entry.name:
            raise ServerConfigError(f"{where} has no name")
        where += f" ({entry.name!r})"
        if entry.name in seen:
            raise ServerConfigError(f"{where}: a second model named {entry.name!r}")
        seen.add(entry.name)
        if not entry.base_path:
            raise ServerConfigError(f"{where} has no base_path")
        if entry.model_platform not in ("", "tensorflow"):
            raise ServerConfigError(f"{where}: model_platform {entry.model_platform!r} is not "
                                    "supported; this server loads TensorFlow SavedModels")
        models.append(ModelConfig(
            entry.name, _base_path(entry.base_path), _version_policy(entry, where),
            tuple(sorted(entry.version_labels.items()))))
    return models


def _version_policy(entry, where):
    policy = entry.model_version_policy
    kind = policy.WhichOneof("policy_choice")
    if kind in (None, "latest"):
        count = policy.latest.num_versions or 1
        if count < 1:
            raise ServerConfigError(f"{where}: latest.num_versions must be >= 1, got {count}")
        return ("latest", count)
    if kind == "all":
        return ("all",)
    versions = tuple(sorted(set(policy.specific.versions)))
    if not versions:
        raise ServerConfigError(f"{where}: model_version_policy.specific lists no versions")
    return ("specific", versions)


def _base_path(path):
    """A base path as given for gs:// and other stores, absolute for a local one."""
    return path if storage.is_remote(path) else os.path.abspath(path)


def _parse_message(error):
    # ParseError's text starts with "line:column : "; the location is given separately.
    return str(error).split(" : ", 1)[-1]


def _read_text(path, flag):
    if storage.isdir(path):
        raise ServerConfigError(f"{flag}: {path} is a directory, not a file")
    try:
        raw = storage.read_bytes(path)  # local paths, gs://, ram://
    except FileNotFoundError:
        raise ServerConfigError(f"{flag}: {path} does not exist") from None
    except OSError as error:
        raise ServerConfigError(f"{flag}: cannot read {path}: "
                                f"{error.strerror or error}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise ServerConfigError(f"{path}:{line}: not UTF-8 text") from None


# ---- batching parameters ------------------------------------------------------------------
_BATCHING_FIELDS = (  # name, number, wrapper type (TF Serving's session_bundle_config.proto)
    ("max_batch_size", 1, "Int64Value"),
    ("batch_timeout_micros", 2, "Int64Value"),
    ("max_enqueued_batches", 3, "Int64Value"),
    ("num_batch_threads", 4, "Int64Value"),
    ("thread_pool_name", 5, "StringValue"),
)
_BATCHING_MESSAGE = None


def _batching_parameters_class():
    """``tensorflow.serving.BatchingParameters`` built at run time in a private pool."""
    global _BATCHING_MESSAGE
    if _BATCHING_MESSAGE is None:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2

        pool = descriptor_pool.DescriptorPool()
        pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
        proto = descriptor_pb2.FileDescriptorProto(
            name="keras_bert/batching_parameters.proto", package="tensorflow.serving",
            syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
        message = proto.message_type.add(name="BatchingParameters")
        field = descriptor_pb2.FieldDescriptorProto
        for name, number, wrapper in _BATCHING_FIELDS:
            message.field.add(name=name, number=number, label=field.LABEL_OPTIONAL,
                              type=field.TYPE_MESSAGE, type_name=f".google.protobuf.{wrapper}")
        message.field.add(name="allowed_batch_sizes", number=6, label=field.LABEL_REPEATED,
                          type=field.TYPE_INT64)
        message.field.add(name="pad_variable_length_inputs", number=7,
                          label=field.LABEL_OPTIONAL, type=field.TYPE_BOOL)
        pool.Add(proto)
        _BATCHING_MESSAGE = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters"))
    return _BATCHING_MESSAGE


def read_batching_parameters_file(path):
    """`BatchingOptions` from a text-format ``BatchingParameters`` file (fields left out keep
    TF Serving's defaults)."""
    from google.protobuf import text_format

    text = _read_text(path, "--batching_parameters_file")
    params = _batching_parameters_class()()
    try:
        text_format.Parse(text, params)
    except text_format.ParseError as error:
        raise ServerConfigError(
            f"{path}:{error.GetLine()}:{error.GetColumn()}: not a valid BatchingParameters "
            f"text proto: {_parse_message(error)}") from None
    if params.pad_variable_length_inputs:
        raise ServerConfigError(f"{path}: pad_variable_length_inputs is not supported: requests "
                                "are batched together only when their non-batch dimensions "
                                "agree")
    values = {name: getattr(params, name).value for name, _, wrapper in _BATCHING_FIELDS
              if wrapper == "Int64Value" and params.HasField(name)}
    if params.allowed_batch_sizes:
        values["allowed_batch_sizes"] = tuple(params.allowed_batch_sizes)
    try:
        return BatchingOptions(**values)
    except ValueError as error:
        raise ServerConfigError(f"{path}: {error}") from None
