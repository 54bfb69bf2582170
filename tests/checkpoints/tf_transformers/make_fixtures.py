"""Writes the checkpoints of transformers' TensorFlow classes that
tests/checkpoints/test_huggingface_tf.py reads: each ``TFBert*`` class's ``save_pretrained``
(``config.json``, ``tf_model.h5``; one ``model.safetensors`` too) on a tiny config, with the
outputs transformers itself computes for fixed inputs (``expected.json``).

transformers 5 has no TensorFlow classes, so this runs once, by hand, beside the project's
environment with transformers 4.46.3 (its last TensorFlow-capable line) and tf-keras::

    pip install --target /tmp/tf4 --no-deps transformers==4.46.3 tokenizers==0.20.3 \\
        huggingface_hub==0.26.5
    PYTHONPATH=/tmp/tf4 TF_USE_LEGACY_KERAS=1 .venv/bin/python \\
        tests/checkpoints/tf_transformers/make_fixtures.py

The files it writes are committed beside it (about 30 KB each)."""

import json
import os
import pathlib
import shutil

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
# tests/models/tiny.py's vocabulary (not imported: that would import keras_bert, Keras 3).
WORDS = ("a the movie film great good fun dull bad boring plot actor is was not very "
         "and but it this what who why sat cat dog ran red blue paris london").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s", "##ing", "##ed", ".",
                                                                   ",", "!", "?"]
TEXTS = ["a great movie", "the plot was dull and boring .", "what a fun film !",
         "paris is not london"]
QUESTIONS = ["who ran ?", "what sat ?", "why ?", "what is red ?"]
CHOICES = [["the dog ran", "the cat sat", "a red ball"]] * 2
SEQ = 16
POSITIONS = [[1, 2, 3], [2, 4, 6], [1, 3, 5], [1, 2, 4]]  # where the masked LMs are compared
CONFIG = dict(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
              intermediate_size=32, max_position_embeddings=32, initializer_range=0.5)
CLASSES = {  # directory: (class, config, inputs)
    "sequence_classification": ("TFBertForSequenceClassification",
                                dict(num_labels=3, id2label={0: "negative", 1: "neutral",
                                                             2: "positive"}), "texts"),
    "token_classification": ("TFBertForTokenClassification",
                             dict(num_labels=4, id2label={0: "O", 1: "B-LOC", 2: "I-LOC",
                                                          3: "B-PER"}), "texts"),
    "question_answering": ("TFBertForQuestionAnswering", {}, "pairs"),
    "multiple_choice": ("TFBertForMultipleChoice", {}, "choices"),
    "masked_lm": ("TFBertForMaskedLM", {}, "texts"),
    "pre_training": ("TFBertForPreTraining", {}, "texts"),
    "model": ("TFBertModel", {}, "texts"),
}


def _inputs(tokenizer, kind):
    if kind == "texts":
        return tokenizer(TEXTS, padding="max_length", max_length=SEQ, return_tensors="np")
    if kind == "pairs":
        return tokenizer(QUESTIONS, TEXTS, padding="max_length", max_length=SEQ,
                         truncation="only_second", return_tensors="np")
    contexts = [c for c in TEXTS[:2] for _ in range(3)]
    flat = tokenizer(contexts, sum(CHOICES, []), padding="max_length", max_length=SEQ,
                     truncation="only_first", return_tensors="np")
    return {k: v.reshape(2, 3, SEQ) for k, v in flat.items()}


def main():
    import tensorflow as tf
    import transformers

    assert transformers.__version__ == "4.46.3", transformers.__version__
    tf.keras.utils.set_random_seed(0)
    vocab = HERE / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    tokenizer = transformers.BertTokenizer(str(vocab), do_lower_case=True)
    for name, (cls_name, extra, kind) in CLASSES.items():
        directory = HERE / name
        shutil.rmtree(directory, ignore_errors=True)
        config = transformers.BertConfig(**CONFIG, **extra)
        model = getattr(transformers, cls_name)(config)
        inputs = _inputs(tokenizer, kind)
        outputs = model(**inputs, training=False)
        model.save_pretrained(str(directory))
        shutil.copy(vocab, directory / "vocab.txt")
        outputs = {k: np.asarray(v) for k, v in outputs.items()
                   if v is not None and k != "hidden_states"}
        if "prediction_logits" in outputs or kind == "texts" and "logits" in outputs and \
                outputs["logits"].shape[-1] == len(VOCAB):  # the masked LMs: at POSITIONS only
            key = "prediction_logits" if "prediction_logits" in outputs else "logits"
            outputs[key] = outputs[key][np.arange(len(TEXTS))[:, None], POSITIONS]
        expected = {"inputs": {k: v.tolist() for k, v in inputs.items()},
                    "outputs": {k: v.tolist() for k, v in outputs.items()}}
        (directory / "expected.json").write_text(json.dumps(expected))
        if name == "sequence_classification":
            safe = HERE / "sequence_classification_safetensors"
            shutil.rmtree(safe, ignore_errors=True)
            model.save_pretrained(str(safe), safe_serialization=True)
            shutil.copy(vocab, safe / "vocab.txt")
            shutil.copy(directory / "expected.json", safe / "expected.json")
        print(name, sorted(os.listdir(directory)))
    vocab.unlink()


if __name__ == "__main__":
    main()
