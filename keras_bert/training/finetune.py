"""Fine-tuning a task model with the original recipe, and the scores BERT papers report.

`fine_tune` compiles with `create_optimizer` sized to the run (AdamW, warm-up, linear decay
to 0, clipping at 1.0), trains with Keras' progress bars and, with a ``model_dir``, writes
a checkpoint per epoch and TensorBoard logs there. `scores` gives accuracy and F1 /
Matthews correlation for classification, Pearson and Spearman for regression;
`write_metrics` saves them as ``metrics.json``.
"""

import json
import os
import time

import keras
import numpy as np

from keras_bert.training.optimization import create_optimizer

CHECKPOINTS = "checkpoints"
LOGS = "logs"
METRICS_FILE = "metrics.json"


def fine_tune(model, x, y, validation_data=None, batch_size=32, epochs=3, learning_rate=5e-5,
              warmup_ratio=0.1, optimizer="adamw", model_dir=None, jit_compile=False,
              verbose="auto", callbacks=None):
    """Fits ``model`` (a keras_bert task model) on in-memory examples with the BERT recipe.

    Args:
        model: a `Task` (e.g. `BertClassifier`) with its preprocessor for raw text.
        x, y: what ``model.fit`` takes (texts, pairs or packed inputs; labels).
        validation_data: ``(x, y)`` evaluated after each epoch.
        batch_size, epochs, learning_rate, warmup_ratio, optimizer: the recipe's numbers;
            the schedule ends at 0 on the last step.
        model_dir: where checkpoints (``checkpoints/epoch-N.weights.h5``) and TensorBoard
            logs (``logs/``) go; None for neither.
        jit_compile: XLA for the training step.

    Returns the Keras ``History``; ``history.train_seconds`` is the wall time of ``fit``.
    """
    num_examples = _num_examples(x)
    steps = model.steps_per_epoch(num_examples, batch_size) * epochs
    model.compile(
        optimizer=create_optimizer(learning_rate, max(steps, 1), warmup_ratio=warmup_ratio,
                                   optimizer=optimizer),
        jit_compile=jit_compile,
    )
    callbacks = list(callbacks or [])
    if model_dir:
        os.makedirs(os.path.join(model_dir, CHECKPOINTS), exist_ok=True)
        callbacks.append(keras.callbacks.ModelCheckpoint(
            os.path.join(model_dir, CHECKPOINTS, "epoch-{epoch}.weights.h5"),
            save_weights_only=True))
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(model_dir, LOGS),
                                                     write_graph=False))
    start = time.perf_counter()
    history = model.fit(x, y, validation_data=validation_data, batch_size=batch_size,
                        epochs=epochs, verbose=verbose, callbacks=callbacks)
    history.train_seconds = time.perf_counter() - start
    return history


def _num_examples(x):
    if isinstance(x, dict):
        return len(next(iter(x.values())))
    if isinstance(x, tuple):
        return len(x[0])
    return len(x)


def scores(model, x, y, batch_size=64):
    """The task's scores on labelled examples: ``accuracy`` (+ ``f1`` for two classes, and
    ``matthews_corrcoef``) for classification; ``pearson``, ``spearman`` and ``mse`` for
    regression (``num_classes == 1``)."""
    predictions = model.predict(x, batch_size=batch_size, verbose=0)
    y = np.asarray(y)
    if getattr(model, "num_classes", 2) == 1:
        predicted = np.asarray(predictions, np.float64).reshape(-1)
        y = y.astype(np.float64).reshape(-1)
        return {"pearson": _pearson(predicted, y), "spearman": _pearson(_ranks(predicted),
                                                                         _ranks(y)),
                "mse": float(np.mean((predicted - y) ** 2))}
    predicted = np.argmax(predictions, axis=-1).reshape(-1)
    y = y.reshape(-1)
    out = {"accuracy": float(np.mean(predicted == y)),
           "matthews_corrcoef": _matthews(predicted, y)}
    if predictions.shape[-1] == 2:
        out["f1"] = _f1(predicted, y)
    return out


def _pearson(a, b):
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denominator) if denominator else 0.0


def _ranks(values):
    """Average ranks (ties share the mean of their positions), as Spearman's rho needs."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.arange(len(values), dtype=np.float64)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


def _f1(predicted, y, positive=1):
    tp = np.sum((predicted == positive) & (y == positive))
    fp = np.sum((predicted == positive) & (y != positive))
    fn = np.sum((predicted != positive) & (y == positive))
    return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0


def _matthews(predicted, y):
    classes = np.union1d(predicted, y)
    index = {c: i for i, c in enumerate(classes)}
    confusion = np.zeros((len(classes), len(classes)), np.float64)
    for p, t in zip(predicted, y):
        confusion[index[t], index[p]] += 1
    t_sum, p_sum = confusion.sum(axis=1), confusion.sum(axis=0)
    n, correct = confusion.sum(), np.trace(confusion)
    denominator = np.sqrt((n * n - (p_sum * p_sum).sum()) * (n * n - (t_sum * t_sum).sum()))
    return float((correct * n - (p_sum * t_sum).sum()) / denominator) if denominator else 0.0


def write_metrics(model_dir, metrics):
    """Writes ``metrics`` as ``model_dir/metrics.json`` (atomically); returns the path."""
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, METRICS_FILE)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return path
