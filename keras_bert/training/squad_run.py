"""SQuAD fine-tuning and evaluation, as google-research/bert's ``run_squad.py``: examples read
from SQuAD JSON, cut into ``doc_stride`` windows, a `BertSpanLabeler` trained on the answer
positions with the BERT recipe, answers recovered from the n-best spans (with the null-score
threshold for SQuAD 2.0) and scored with the official EM/F1."""

import os

from keras_bert import storage
from keras_bert.data import (
    compute_predictions,
    convert_examples_to_features,
    evaluate_v1,
    evaluate_v2,
    read_squad_examples,
)
from keras_bert.training.finetune_run import METRICS_FILE, fine_tune, run_metrics, save_model


def features_of(model, source, is_training, version_2_with_negative=False, max_seq_length=384,
                doc_stride=128, max_query_length=64):
    """``(examples, features)`` of a SQuAD JSON file (or parsed dict) for ``model``'s
    tokenizer."""
    tokenizer = _tokenizer(model)
    examples = read_squad_examples(source, is_training=is_training,
                                   version_2_with_negative=version_2_with_negative)
    features = convert_examples_to_features(
        examples, tokenizer, max_seq_length=max_seq_length, doc_stride=doc_stride,
        max_query_length=max_query_length, is_training=is_training)
    return examples, features


def predict(model, examples, features, batch_size=32, n_best_size=20, max_answer_length=30,
            version_2_with_negative=False, null_score_diff_threshold=0.0):
    """The `SquadPredictions` of ``model`` on ``features`` (made from ``examples``)."""
    out = model.predict(features.inputs, batch_size=batch_size, verbose=0)
    return compute_predictions(
        examples, features, out["start_logits"], out["end_logits"], _tokenizer(model),
        n_best_size=n_best_size, max_answer_length=max_answer_length,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold)


def run(model, train_file, eval_file=None, version_2_with_negative=False, max_seq_length=384,
        doc_stride=128, max_query_length=64, batch_size=32, epochs=2, learning_rate=None,
        warmup_ratio=0.1, n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0,
        model_dir=None, jit_compile=False, verbose="auto", save_optimizer_state=False):
    """Fine-tunes a `BertSpanLabeler` on ``train_file`` and scores ``eval_file``.

    Writes into ``model_dir``: ``predictions.json``, ``nbest_predictions.json`` (and
    ``null_odds.json`` for 2.0) for the evaluation file, ``metrics.json`` (``exact_match``,
    ``f1``, and the 2.0 breakdown), ``model.keras`` (with the optimizer's state only if
    ``save_optimizer_state``: `keras_bert.training.finetune_run.save_model`), checkpoints and
    TensorBoard logs. ``learning_rate`` None: the model's default (5e-5; 5e-4 with LoRA
    enabled). Returns the metrics.
    """
    window = dict(version_2_with_negative=version_2_with_negative,
                  max_seq_length=max_seq_length, doc_stride=doc_stride,
                  max_query_length=max_query_length)
    train_examples, train = features_of(model, train_file, True, **window)
    labels = {"start_logits": train.start_positions, "end_logits": train.end_positions}
    history = fine_tune(model, train.inputs, labels, batch_size=batch_size, epochs=epochs,
                        learning_rate=learning_rate, warmup_ratio=warmup_ratio,
                        model_dir=model_dir, jit_compile=jit_compile, verbose=verbose)
    metrics = run_metrics(model, history, train_examples=len(train_examples),
                          train_features=len(train), batch_size=batch_size,
                          learning_rate=history.learning_rate)
    if eval_file:
        examples, features = features_of(model, eval_file, False, **window)
        predictions = predict(model, examples, features, batch_size=batch_size,
                              n_best_size=n_best_size, max_answer_length=max_answer_length,
                              version_2_with_negative=version_2_with_negative,
                              null_score_diff_threshold=null_score_diff_threshold)
        evaluate = evaluate_v2 if version_2_with_negative else evaluate_v1
        metrics.update({k: float(v) for k, v in evaluate(eval_file, predictions).items()
                        if isinstance(v, (int, float))})
        if "exact" in metrics:  # evaluate-v2.0.py's name for it
            metrics["exact_match"] = metrics["exact"]
        metrics["eval_examples"] = len(examples)
        if model_dir:
            predictions.write(model_dir)
    if model_dir:
        save_model(model, model_dir, include_optimizer=save_optimizer_state)
        storage.write_json(os.path.join(model_dir, METRICS_FILE), metrics)
    return metrics


def _tokenizer(model):
    preprocessor = getattr(model, "preprocessor", None)
    tokenizer = getattr(preprocessor, "tokenizer", None)
    if tokenizer is None:
        raise ValueError("SQuAD needs the model's tokenizer: build the BertSpanLabeler with its "
                         "preprocessor (BertSpanLabeler.from_preset does).")
    return tokenizer
