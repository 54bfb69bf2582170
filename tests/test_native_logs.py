"""Normal use prints no error-level lines from TensorFlow's C++ runtime.

TensorFlow's oneDNN build logs `E0000 ... util.cc] oneDNN supports DT_INT64 only on platforms
with AVX-512` (once per process, naming the first dtype it met) when a graph transposes a
tensor of any dtype but float32/bfloat16/float16: the packer once combined segments with a
ragged concat that transposes int64 row indices, and whole-word masking scanned int32/bool
columns. A meta-test over the text layers and the encoder (it mirrors no single module).
"""

from tests.isolated import run_python

NORMAL_USE = """
import keras_bert
import numpy as np
import tensorflow as tf
from keras_bert import BertConfig, BertEncoder
from keras_bert.text import BertPreprocessor, MaskedLMMasker

vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", "."]
pre = BertPreprocessor(vocab, seq_length=12)
maskers = [MaskedLMMasker(vocab, max_predictions_per_seq=3, seed=1, whole_word_masking=w)
           for w in (False, True)]
encoder = BertEncoder(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=16))
texts = ["The quick fox.", "the fox", ""]
for truncator in ("round_robin", "waterfall"):
    p = BertPreprocessor(vocab, seq_length=5, truncator=truncator)
    p((texts, texts)); p([["the fox", "quick"]])
features = pre(texts)
for masker in maskers:
    masked = masker(features)
    encoder({k: masked[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
pre.tokenizer.tokenize(texts, per_word=True); pre.tokenizer.detokenize([[5, 6, 7]])
ds = tf.data.Dataset.from_tensor_slices((texts, texts)).batch(2)
for masker in maskers:
    for x in ds.map(lambda a, b: masker(pre((a, b))), num_parallel_calls=2):
        tf.function(encoder)({k: x[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
encoder.predict(ds.map(lambda a, b: pre(a)), verbose=0)
print("done")
"""


def test_normal_use_logs_no_errors():
    result = run_python(NORMAL_USE, env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("done")
    errors = [line for line in result.stderr.splitlines()
              if line.startswith("E0000") or "DT_INT" in line or "oneDNN supports" in line]
    assert errors == [], "\n".join(errors)


# What a user's program sees, TF_CPP_MIN_LOG_LEVEL unset. With keras_bert imported first:
# nothing from training (XLA's start-up), int8 quantization (Keras' warning per float layer),
# an int8 .keras round trip (the optimizer state of the float weights) or a LiteRT export
# (the converter's progress and custom-op notice); a real TensorFlow warning still shows.
QUIET_USE = """
import sys, tempfile
import keras_bert, keras
import tensorflow as tf
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder
model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                  preprocessor=keras_bert.BertPreprocessor(VOCAB, seq_length=8))
model.fit(POSITIVE + NEGATIVE, [1] * 8 + [0] * 8, epochs=1, verbose=0)
model.quantize("int8")
path = tempfile.mkdtemp() + "/int8.keras"
model.save(path)
keras.saving.load_model(path).predict(POSITIVE[:2], verbose=0)
keras_bert.BertClassifier(tiny_encoder(), 2, preprocessor=keras_bert.BertPreprocessor(
    VOCAB, seq_length=8)).export(tempfile.mkdtemp() + "/model.tflite", format="litert")
print("REAL WARNING NEXT", file=sys.stderr, flush=True)
for _ in tf.data.Dataset.range(4).cache().take(1):  # TF warns: the cache was not filled
    pass
print("done")
"""

# Keras (hence TensorFlow) imported first: TensorFlow's start-up lines come before keras_bert
# can act, but the GPU probe's "failed call to cuInit" error line no longer follows.
KERAS_FIRST = """
import sys
import keras
print("KERAS_BERT NEXT", file=sys.stderr, flush=True)
import keras_bert
import tensorflow as tf
tf.constant([1.0]) + 1.0
print("done")
"""


def _run_without_log_level(code):
    import os
    import subprocess
    import sys

    from tests.isolated import REPO

    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=env)


def test_training_quantizing_and_exporting_log_nothing_but_real_warnings():
    result = _run_without_log_level(QUIET_USE)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("done")
    before, after = result.stderr.split("REAL WARNING NEXT\n")
    assert before.splitlines() == [], before
    assert "did not fully read the dataset being cached" in after, after


def test_keras_imported_first_then_keras_bert_gives_no_cuinit_error():
    result = _run_without_log_level(KERAS_FIRST)
    assert result.returncode == 0, result.stderr[-3000:]
    startup, after = result.stderr.split("KERAS_BERT NEXT\n")
    assert "cudart_stub.cc" in startup  # the case: TensorFlow started, unquieted, first
    assert after.splitlines() == [], after
