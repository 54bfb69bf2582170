"""Quantized layers through a ``.keras`` round trip.

Keras' ``model.quantize("int8")`` turns each `Dense` (and `EinsumDense`, `Embedding`) into an
int8 kernel plus its scale. A functional model built from its constructor arguments
(`BertEncoder`, every task model) creates float layers again when loaded, which then cannot
take the saved int8 variables ("Layer 'attention_output' expected 2 variables, but received
3"). So the models record which layers were quantized, and how, in their config
(`quantized_layers`), and quantize those layers again when they are rebuilt
(`quantize_again`), before Keras loads the variables into them.

The encoder's projections, the pooler and the masked-LM transform are
`keras_bert.layers.Dense`: quantized, their inference runs on oneDNN's int8 kernel
(`keras_bert.layers.int8`); their saved variables are Keras' (the task heads are Keras' own
`Dense`).

>>> import keras
>>> from keras_bert import BertEncoder
>>> from keras_bert.models.quantization import quantized_layers
>>> encoder = BertEncoder.from_preset("tiny_random")
>>> quantized_layers(encoder)
{}
>>> encoder.quantize("int8")
>>> quantized_layers(encoder)["transformer_block_0/query"]
'int8'
"""

import contextlib
import gc
import warnings

CONFIG_KEY = "quantization"


def quantized_layers(model):
    """``{layer path: quantization mode}`` of the model's quantized layers."""
    return {layer.path: layer.quantization_mode for layer in model._flatten_layers()
            if layer is not model and layer.quantization_mode is not None}


def record(model, config):
    """``config`` (a model's `get_config`) with its quantized layers, if any."""
    quantized = quantized_layers(model)
    return {**config, CONFIG_KEY: quantized} if quantized else config


def quantize_again(model, modes):
    """Quantizes the layers ``modes`` names (`quantized_layers` of the saved model, what
    `record` put in its config; None: none) that are not quantized yet; ValueError naming a
    path the model does not have."""
    if not modes:
        return model
    layers = {layer.path: layer for layer in model._flatten_layers() if layer is not model}
    missing = sorted(set(modes) - set(layers))
    if missing:
        raise ValueError(f"{model.name}: the saved config names quantized layers this model "
                         f"does not have: {', '.join(missing)}")
    for path, mode in modes.items():
        if layers[path].quantization_mode is None:
            layers[path].quantize(mode)
    return model


@contextlib.contextmanager
def quantizing():
    """The block of a model's ``quantize``. Keras' ``Model.quantize`` warns once for each
    layer without a ``quantize`` method ("Layer InputLayer does not have a `quantize` method
    implemented"): in a keras_bert model those are the layers that stay float by design
    (inputs, dropout, LayerNorm, the preprocessor's); inside the block those warnings, and no
    other, are left out. keras_bert's `Dense` drops its float kernel without Keras' heap scan
    for each layer (see `keras_bert.layers.Dense`); the block ends with one
    ``gc.collect()``, so the float kernels' memory is returned as before."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning,
                                    message=r"Layer \w+ does not have a `quantize` method")
            yield
    finally:
        gc.collect()
