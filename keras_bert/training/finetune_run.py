"""Fine-tuning a task model with the original recipe, and the scores BERT papers report.

`fine_tune` compiles with `create_optimizer` sized to the run (AdamW, warm-up, linear decay
to 0, clipping at 1.0), trains with Keras' progress bars and, with a ``model_dir``, writes
a checkpoint per epoch and TensorBoard logs there. `scores` gives accuracy and F1 /
Matthews correlation for classification, Pearson and Spearman for regression, and for a
text embedder (`retrieval_scores`, from `keras_bert.training.embedding_evaluation`) how well
each anchor finds its own positive. Every
output goes through `keras_bert.storage`, so ``model_dir`` may be local or ``gs://...``.
"""

import dataclasses
import json
import os
import time

import keras
import numpy as np

from keras_bert import storage
from keras_bert.models import BertClassifier, BertTextEmbedder, BertTokenClassifier
from keras_bert.optimizers.optimization import create_optimizer
from keras_bert.text.packer import min_seq_length
from keras_bert.training import embedding_evaluation

CHECKPOINTS = "checkpoints"
LOGS = "logs"
METRICS_FILE = "metrics.json"
MODEL_FILE = "model.keras"
RETRIEVAL_SCORES = ("ndcg@10", "mrr@10", "recall@1", "recall@10")


def fine_tune(model, x, y, validation_data=None, batch_size=32, epochs=3, learning_rate=None,
              warmup_ratio=0.1, optimizer="adamw", model_dir=None, jit_compile=False,
              verbose="auto", callbacks=None):
    """Fits ``model`` (a keras_bert task model) on in-memory examples with the BERT recipe.

    Args:
        model: a `Task` (e.g. `BertClassifier`) with its preprocessor for raw text.
        x, y: what ``model.fit`` takes (texts, pairs or packed inputs; labels).
        validation_data: ``(x, y)`` evaluated after each epoch.
        batch_size, epochs, learning_rate, warmup_ratio, optimizer: the recipe's numbers;
            the schedule ends at 0 on the last step. ``learning_rate`` None: the model's
            default (`Task.default_learning_rate`: 5e-5, or 5e-4 with LoRA enabled).
        model_dir: where checkpoints (``checkpoints/epoch-N.weights.h5``: the model's
            weights after each epoch, without the optimizer's state, see `save_weights`)
            and TensorBoard logs (``logs/``) go; None for neither.
        jit_compile: XLA for the training step.

    Returns the Keras ``History``; ``history.train_seconds`` is the wall time of ``fit``,
    ``history.epoch_seconds`` that of each epoch (validation included),
    ``history.learning_rate`` the peak learning rate used.
    """
    if learning_rate is None:
        learning_rate = model.default_learning_rate()
    num_examples = _num_examples(x)
    steps = model.steps_per_epoch(num_examples, batch_size) * epochs
    model.compile(
        optimizer=create_optimizer(learning_rate, max(steps, 1), warmup_ratio=warmup_ratio,
                                   optimizer=optimizer),
        jit_compile=jit_compile,
    )
    epoch_timer = _EpochTimer()
    callbacks = list(callbacks or []) + [epoch_timer]
    if model_dir:
        storage.makedirs(os.path.join(model_dir, CHECKPOINTS))
        callbacks.append(_EpochWeights(os.path.join(model_dir, CHECKPOINTS,
                                                    "epoch-{epoch}.weights.h5")))
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(model_dir, LOGS),
                                                     write_graph=False))
    start = time.perf_counter()
    history = model.fit(x, y, validation_data=validation_data, batch_size=batch_size,
                        epochs=epochs, verbose=verbose, callbacks=callbacks)
    history.train_seconds = time.perf_counter() - start
    history.epoch_seconds = epoch_timer.seconds
    history.learning_rate = learning_rate
    return history


def save_weights(model, path):
    """Writes ``model``'s weights to ``path`` (a ``.weights.h5`` file, local or ``gs://``,
    atomically) without the optimizer's state, which Keras' ``save_weights`` would add (twice
    the weights with AdamW): ``model.load_weights(path)`` on a model of the same architecture
    (``from_preset`` with the run's arguments) loads it without warnings."""
    optimizer = model.optimizer
    with storage.atomic_path(path) as tmp:
        try:  # Keras saves the optimizer it finds on the model: hide it while it writes
            model.optimizer = None
            model.save_weights(tmp)
        finally:
            model.optimizer = optimizer
    return path


class _EpochWeights(keras.callbacks.Callback):
    """`save_weights` after each epoch, to ``pattern`` with ``{epoch}`` (from 1)."""

    def __init__(self, pattern):
        super().__init__()
        self.pattern = pattern

    def on_epoch_end(self, epoch, logs=None):
        save_weights(self.model, self.pattern.format(epoch=epoch + 1))


class _EpochTimer(keras.callbacks.Callback):
    """The wall time of each epoch (``seconds``)."""

    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def _num_examples(x):
    if isinstance(x, dict):
        return len(next(iter(x.values())))
    if isinstance(x, tuple):
        return len(x[0])
    return len(x)


def retrieval_scores(model, anchors, positives, batch_size=64):
    """How well a text embedder finds each anchor's own positive among all the positives
    (`embedding_evaluation.pair_retrieval`, sentence-transformers' definitions): ``ndcg@10``,
    ``mrr@10``, ``recall@1``, ``recall@10``, and the in-batch negatives ``loss`` of the pairs
    (in batches of ``batch_size``)."""
    found = embedding_evaluation.pair_retrieval(model, anchors, positives,
                                                batch_size=batch_size, ks=(1, 10))
    out = {key: found[key] for key in RETRIEVAL_SCORES}
    out["loss"] = float(model.evaluate((list(anchors), list(positives)), batch_size=batch_size,
                                       verbose=0))
    return out


def scores(model, x, y, batch_size=64):
    """The task's scores on labelled examples: ``accuracy`` (+ ``f1`` for two classes, and
    ``matthews_corrcoef``) for classification and multiple choice; ``pearson``, ``spearman``
    and ``mse`` for regression (``num_classes == 1``); word ``accuracy`` for tagging; for a
    text embedder, `retrieval_scores` of ``x``'s anchors and positives (no ``y``)."""
    if isinstance(model, BertTextEmbedder):
        return retrieval_scores(model, x[0], x[1], batch_size=batch_size)
    if hasattr(model, "predict_words"):
        predicted = [tag for row in model.predict_words(x, batch_size=batch_size) for tag in row]
        gold = [tag for row in y for tag in row]
        kept = [(p, t) for p, t in zip(predicted, gold) if p is not None]
        return {"accuracy": float(np.mean([p == t for p, t in kept])) if kept else 0.0,
                "words": len(gold), "words_cut_off": len(gold) - len(kept)}
    predictions = model.predict(x, batch_size=batch_size, verbose=0)
    y = np.asarray(y)
    if getattr(model, "num_classes", 2) == 1:
        predicted = np.asarray(predictions, np.float64).reshape(-1)
        y = y.astype(np.float64).reshape(-1)
        return {"pearson": embedding_evaluation.pearson(predicted, y),
                "spearman": embedding_evaluation.spearman(predicted, y),
                "mse": float(np.mean((predicted - y) ** 2))}
    predicted = np.argmax(predictions, axis=-1).reshape(-1)
    y = y.reshape(-1)
    out = {"accuracy": float(np.mean(predicted == y)),
           "matthews_corrcoef": _matthews(predicted, y)}
    if predictions.shape[-1] == 2:
        out["f1"] = _f1(predicted, y)
    return out


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


def run_metrics(model, history, **figures):
    """The figures of a whole ``fine_tune`` run for ``metrics.json``: ``figures`` (the
    run's settings), ``epochs`` and ``train_steps`` (all of the run's), ``train_seconds``,
    and the training loss of the last epoch alone under ``last_epoch`` (Keras' history keeps
    one mean loss per epoch; it is not the run's), and the parameter counts
    (`trainable_summary`)."""
    return {**figures, **trainable_summary(model), "epochs": len(history.epoch),
            "train_steps": int(model.optimizer.iterations),
            "train_seconds": round(history.train_seconds, 1),
            "last_epoch": {"epoch": len(history.epoch),
                           "train_loss": float(history.history["loss"][-1])}}


def check_seq_length(model, examples, flag="seq_length"):
    """ValueError unless ``model``'s preprocessor packs sequences that hold [CLS], one token
    of each text of ``examples`` and a [SEP] after each: 3 for single texts, 5 for pairs
    (multiple choice packs a context with each choice)."""
    seq_length = getattr(model.preprocessor, "seq_length", None)
    # (an embedder packs each text of its columns alone)
    segments = 1 if examples.texts_b is None or isinstance(model, BertTextEmbedder) else 2
    if seq_length is not None and seq_length < min_seq_length(segments):
        kind = "text pairs: [CLS] a [SEP] b [SEP]" if segments == 2 else "texts: [CLS] a [SEP]"
        raise ValueError(f"{flag}={seq_length} is too short for {kind} needs at least "
                         f"{min_seq_length(segments)}")


def save_model(model, model_dir, include_optimizer=False):
    """Writes ``model`` to ``model_dir/model.keras`` (atomically; local or ``gs://``) and
    returns the path. By default without the optimizer's state (`Task.save`): the file is
    the model's size, not three times it (AdamW keeps two moments per weight), and loads
    with no warning; ``include_optimizer=True`` keeps the state, to resume training from the
    file with the optimizer where it stopped."""
    path = os.path.join(model_dir, MODEL_FILE)
    with storage.atomic_path(path) as tmp:
        model.save(tmp, include_optimizer=include_optimizer)
    return path


def run(model, splits, batch_size=32, epochs=3, learning_rate=None, warmup_ratio=0.1,
        model_dir=None, export_dir=None, jit_compile=False, verbose="auto",
        save_optimizer_state=False):
    """Fine-tunes ``model`` on ``splits["train"]`` (`keras_bert.data.files.Examples`), scores
    the labelled ``validation`` and ``test`` splits, and writes into ``model_dir``:
    ``model.keras`` (with the optimizer's state only if ``save_optimizer_state``: see
    `save_model`), ``metrics.json``, ``test_predictions.jsonl`` (with a test split),
    checkpoints and TensorBoard logs; with ``export_dir``, a SavedModel there. Returns the
    metrics. String labels name the model's classes (`name_classes`): ``model.label_names``,
    hence ``model.keras`` and the export, ``metrics.json``'s ``label_names`` and the
    predictions carry them."""
    splits = name_classes(model, splits)
    train = splits["train"]
    check_seq_length(model, train)
    validation = splits.get("validation")
    validation_data = None
    labelled = not isinstance(model, BertTextEmbedder)  # (an embedder's pairs are its labels)
    if validation is not None and validation.labels is not None:
        validation_data = (validation.x, validation.labels)
    elif validation is not None and not labelled:
        validation_data = (validation.x,)
    history = fine_tune(model, train.x, train.labels, validation_data=validation_data,
                        batch_size=batch_size, epochs=epochs, learning_rate=learning_rate,
                        warmup_ratio=warmup_ratio, model_dir=model_dir, jit_compile=jit_compile,
                        verbose=verbose)
    metrics = run_metrics(model, history, train_examples=len(train), batch_size=batch_size,
                          learning_rate=history.learning_rate)
    if getattr(model, "label_names", None):
        metrics["label_names"] = model.label_names
    for name in ("validation", "test"):
        examples = splits.get(name)
        if examples is not None and (examples.labels is not None or not labelled):
            metrics.update({f"{name}_{k}": v for k, v in
                            scores(model, examples.x, examples.labels).items()})
    if model_dir:
        if splits.get("test") is not None and labelled:
            write_predictions(model, splits["test"], os.path.join(model_dir,
                                                                  "test_predictions.jsonl"))
        save_model(model, model_dir, include_optimizer=save_optimizer_state)
        storage.write_json(os.path.join(model_dir, METRICS_FILE), metrics)
    if export_dir:
        model.export(export_dir, verbose=False, **export_options(model, train))
    return metrics


def trainable_summary(model):
    """``lora_rank`` (0: full fine-tuning), ``trainable_parameters`` and ``parameters``."""
    config = getattr(model, "lora_config", None)
    return {"lora_rank": config["rank"] if config else 0,
            "trainable_parameters": _count(model.trainable_weights),
            "parameters": _count(model.weights)}


def _count(variables):
    return int(sum(np.prod(v.shape) for v in variables))


def name_classes(model, splits):
    """The splits with the class ids of ``model``, whose ``label_names`` the training data's
    string labels now name (``{split: Examples}`` in and out; ``model`` changed in place).

    `keras_bert.data.files` maps string labels to ids in the order of the training split's
    names (sorted, unless given). A model without names (and one class per name) takes those
    names. A model with names (a ``.keras`` file or preset saved with them) keeps its ids:
    each split's labels are mapped to them by name, and a label the model has no class for
    is a ValueError. Integer labels, regression and multiple choice are left as they are.
    """
    names = splits["train"].label_names
    if not names or not isinstance(model, (BertClassifier, BertTokenClassifier)) or (
            model.num_classes == 1):
        return splits
    if model.label_names is None:
        if len(names) == model.num_classes:
            model.label_names = [str(name) for name in names]
        return splits
    ids = {name: i for i, name in enumerate(model.label_names)}
    out = {}
    for split, examples in splits.items():
        data_names = [str(name) for name in examples.label_names or ()]
        unknown = [name for name in data_names if name not in ids]
        if unknown:
            raise ValueError(f"The {split} data's labels {unknown!r:.200} are not classes of "
                             f"the model, whose label_names are {model.label_names!r:.300}.")
        to_model = [ids[name] for name in data_names]
        labels = examples.labels
        if data_names and labels is not None:
            labels = [[to_model[t] for t in row] if isinstance(row, list) else to_model[row]
                      for row in labels]
        out[split] = dataclasses.replace(examples, labels=labels, label_names=(
            model.label_names if data_names else examples.label_names))
    return out


def export_options(model, examples):
    """What the serving export should know of the training data: sentence pairs (a
    classifier trained on pairs serves ``text_a``, ``text_b``). The class names travel on
    the model (``label_names``), which the export names its labels with."""
    options = {}
    if isinstance(model, BertClassifier) and examples.texts_b is not None:
        options["pairs"] = True
    return options


def write_predictions(model, examples, path, batch_size=64):
    """One JSON line per example: the predicted class (its name, when the model has
    ``label_names``) and the scores (a regression value, per-class probabilities, or tags
    per word)."""
    rows = []
    names = getattr(model, "label_names", None)
    if hasattr(model, "predict_words"):
        for words, tags in zip(examples.x, model.predict_words(examples.x, batch_size=batch_size)):
            rows.append({"words": list(words), "tags": _names(tags, names)})
    else:
        outputs = np.asarray(model.predict(examples.x, batch_size=batch_size, verbose=0))
        for row in outputs:
            if getattr(model, "num_classes", 2) == 1:
                rows.append({"prediction": float(row.reshape(-1)[0])})
                continue
            probabilities = np.exp(row - row.max())
            probabilities /= probabilities.sum()
            label = int(np.argmax(row))
            rows.append({"prediction": _names([label], names)[0],
                         "probabilities": [round(float(p), 6) for p in probabilities]})
    return storage.write_lines(path, (json.dumps(row, ensure_ascii=False) for row in rows))


def _names(ids, names):
    return [None if i is None else (names[i] if names else i) for i in ids]
