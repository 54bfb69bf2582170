"""A TF Serving-compatible local model server: gRPC PredictionService/ModelService and the REST
API over SavedModels, with version polling and server-side batching (`tools/serve.py`)."""

from keras_bert.serving.batching import Batcher, BatchingOptions
from keras_bert.serving.model_config import (
    ModelConfig,
    models_from_flags,
    read_batching_parameters_file,
    read_model_config_file,
)
from keras_bert.serving.errors import ServerConfigError, ServingError
from keras_bert.serving.limits import RequestLimits
from keras_bert.serving.manager import ModelManager, VersionStatus
from keras_bert.serving.servable import ServableOptions
from keras_bert.serving.server import ModelServer

__all__ = [
    "Batcher",
    "BatchingOptions",
    "ModelConfig",
    "ModelManager",
    "ModelServer",
    "RequestLimits",
    "ServableOptions",
    "ServerConfigError",
    "ServingError",
    "VersionStatus",
    "models_from_flags",
    "read_batching_parameters_file",
    "read_model_config_file",
]
