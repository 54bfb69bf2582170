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
