"""A plain NumPy BERT block, embeddings and pooler: the readable math our fast layers must match."""

import math

import numpy as np


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS = {"gelu": gelu, "gelu_tanh": gelu_tanh, "relu": lambda x: np.maximum(x, 0.0)}


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def transformer_block(w, x, mask, heads, act="gelu", eps=1e-12):
    """``w``: Google-named weights (``attention/self/query/kernel``...), float64 math."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    x = np.asarray(x, np.float64)
    batch, seq, hidden = x.shape
    size = hidden // heads

    def dense(t, name):
        return t @ w[f"{name}/kernel"] + w[f"{name}/bias"]

    def split(t):  # [batch, seq, hidden] -> [batch, heads, seq, size]
        return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

    q = split(dense(x, "attention/self/query"))
    k = split(dense(x, "attention/self/key"))
    v = split(dense(x, "attention/self/value"))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size)
    scores = scores + (1.0 - np.asarray(mask, np.float64))[:, None, None, :] * -10000.0
    context = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    attention = dense(context, "attention/output/dense")
    x = layer_norm(x + attention, w["attention/output/LayerNorm/gamma"],
                   w["attention/output/LayerNorm/beta"], eps)
    ffn = dense(ACTIVATIONS[act](dense(x, "intermediate/dense")), "output/dense")
    return layer_norm(x + ffn, w["output/LayerNorm/gamma"], w["output/LayerNorm/beta"], eps)


def embeddings(w, ids, types, eps=1e-12):
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    seq = ids.shape[1]
    x = w["word_embeddings"][ids] + w["token_type_embeddings"][types]
    x = x + w["position_embeddings"][:seq][None]
    return layer_norm(x, w["LayerNorm/gamma"], w["LayerNorm/beta"], eps)


def pooler(w, x):
    return np.tanh(np.asarray(x, np.float64)[:, 0] @ w["dense/kernel"] + w["dense/bias"])


def randomize(layer, seed=0, scale=0.05):
    """Gives every canonical variable of ``layer`` random values (LayerNorm gammas near 1)."""
    rng = np.random.default_rng(seed)
    for name, var in layer.canonical_variables().items():
        value = rng.normal(size=tuple(var.shape)) * scale
        if name.endswith("gamma"):
            value = 1.0 + value
        var.assign(value.astype("float32"))
    return {name: var.numpy() for name, var in layer.canonical_variables().items()}
