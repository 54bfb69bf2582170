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
from keras_bert.serving.manager import ModelManager, VersionStatus
from keras_bert.serving.server import ModelServer

__all__ = [
    "Batcher",
    "BatchingOptions",
    "ModelConfig",
    "ModelManager",
    "ModelServer",
    "ServerConfigError",
    "ServingError",
    "VersionStatus",
    "models_from_flags",
    "read_batching_parameters_file",
    "read_model_config_file",
]
