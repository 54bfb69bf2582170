"""`export_preprocessor`: the text preprocessing as a SavedModel in the TF Hub BERT
preprocessing format (the interface of TF Hub's ``bert_en_uncased_preprocess/3``).

What the SavedModel holds:

* ``__call__(text)``: a batch of strings ``[batch]`` -> ``input_word_ids``, ``input_mask``,
  ``input_type_ids``, int32 ``[batch, seq_length]`` (single segments, the preprocessor's
  ``seq_length`` and truncation);
* ``tokenize(text)``: strings ``[batch]`` -> int32 WordPiece ids, ragged
  ``[batch, (words), (pieces)]``; ``tokenize.get_special_tokens_dict()`` -> int32 scalars
  ``vocab_size``, ``start_of_sequence_id``, ``end_of_segment_id``, ``padding_id``,
  ``mask_id``;
* ``bert_pack_inputs(segments, seq_length=<its seq_length>)``: a list of 1 to 3 ragged
  int32 segments ``[batch, (words), (pieces)]`` as ``tokenize`` gives them (int64 row
  splits) -> the three packed inputs; ``seq_length`` may be any Python int or int32 scalar
  at call time (sentence pairs: ``bert_pack_inputs([tokenize(a), tokenize(b)],
  seq_length=64)``);
* ``vocab_file`` (asset) and ``do_lower_case`` (bool variable);
* a ``serving_default`` signature: ``text`` -> the three packed inputs.

The graph needs tensorflow-text's ops (`required_ops` lists them); ``import
tensorflow_text`` before loading it, as for TF Hub's preprocessing models.
"""

import os

import tensorflow as tf

from keras_bert import vocab as vocab_lib
from keras_bert.export import export_dirs, modules
from keras_bert.export.export_dirs import ExportError
from keras_bert.models.task import Task
from keras_bert.text.packer import BertPackInputs
from keras_bert.text.preprocessor import sync_packer
from keras_bert.text.tokenizer import BertTokenizer

TEXT_SPEC = tf.TensorSpec([None], tf.string, name="text")
MAX_SEGMENTS = 3


def export_preprocessor(preprocessor, export_dir):
    """Writes ``preprocessor`` to ``export_dir`` in the TF Hub BERT preprocessing format.

    Args:
        preprocessor: a `BertPreprocessor` (or one of its kin with a tokenizer and a packer,
            such as `BertTokenClassifierPreprocessor`), or a task model with one.
        export_dir: a new (or empty) local directory; written atomically.

    Returns:
        The absolute path of the export.

    Raises:
        ExportError: not a preprocessor (or a task model without one), a tokenizer without
            a vocabulary, a bad ``export_dir``.

    Example:

    >>> import tempfile, tensorflow as tf
    >>> from keras_bert import BertPreprocessor
    >>> from keras_bert.export import export_preprocessor
    >>> path = export_preprocessor(BertPreprocessor.from_preset("tiny_random", seq_length=8),
    ...                            tempfile.mkdtemp() + "/preprocessor")
    >>> import tensorflow_text  # registers the ops the graph uses
    >>> loaded = tf.saved_model.load(path)
    >>> loaded(tf.constant(["The cat sat."]))["input_word_ids"].numpy()
    array([[ 2, 13, 66, 60,  5,  3,  0,  0]], dtype=int32)
    >>> a, b = loaded.tokenize(tf.constant(["the cat"])), loaded.tokenize(tf.constant(["sat"]))
    >>> loaded.bert_pack_inputs([a, b], seq_length=6)["input_type_ids"].numpy()
    array([[0, 0, 0, 0, 1, 1]], dtype=int32)
    """
    tokenizer, packer = _parts(preprocessor)
    export_dir = export_dirs.check_target(export_dir)  # before any tracing
    with vocab_lib.vocabulary_file(tokenizer.vocabulary,
                                   beside=os.path.dirname(export_dir)) as vocab_path:
        root = preprocessor_module(tokenizer, packer, vocab_path)

        @tf.function(input_signature=[TEXT_SPEC], autograph=False)
        def serving_default(text):
            return root.__call__(text)

        return export_dirs.save(root, export_dir, signatures={"serving_default": serving_default})


def preprocessor_module(tokenizer, packer, vocab_path=None):
    """The TF Hub-format root object (see the module docstring), unsaved."""
    sync_packer(packer, tokenizer)
    default_length = packer.seq_length
    root = modules.Module()

    def tokenize(text):
        return tokenizer.tokenize(text, per_word=True)  # [batch, (words), (pieces)]

    def special_tokens():
        return {"vocab_size": tf.constant(tokenizer.vocabulary_size, tf.int32),
                "start_of_sequence_id": tf.constant(tokenizer.cls_token_id, tf.int32),
                "end_of_segment_id": tf.constant(tokenizer.sep_token_id, tf.int32),
                "padding_id": tf.constant(tokenizer.pad_token_id, tf.int32),
                "mask_id": tf.constant(tokenizer.mask_token_id, tf.int32)}

    def pack(inputs, seq_length=default_length):
        return packer([s.merge_dims(-2, -1) for s in inputs], seq_length=seq_length)

    def call(text):  # the traced functions below, called (not traced again) here
        return root.bert_pack_inputs.__call__([root.tokenize.__call__(text)])

    root.tokenize = modules.Module()
    root.tokenize.__call__ = tf.function(tokenize, input_signature=[TEXT_SPEC], autograph=False)
    root.tokenize.get_special_tokens_dict = tf.function(special_tokens, input_signature=[],
                                                        autograph=False)
    root.bert_pack_inputs = modules.Module()
    root.bert_pack_inputs.__call__ = tf.function(pack, autograph=False)
    for count in range(1, MAX_SEGMENTS + 1):
        segments = [tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)] * count
        root.bert_pack_inputs.__call__.get_concrete_function(segments)
        root.bert_pack_inputs.__call__.get_concrete_function(
            segments, seq_length=tf.TensorSpec([], tf.int32, name="seq_length"))
    root.__call__ = tf.function(call, input_signature=[TEXT_SPEC], autograph=False)
    if vocab_path is not None:
        root.vocab_file = tf.saved_model.Asset(vocab_path)
    root.do_lower_case = tf.Variable(tokenizer.do_lower_case, trainable=False,
                                     name="do_lower_case")
    return root


def _parts(preprocessor):
    """(tokenizer, packer) of a preprocessor or of a task model's."""
    if isinstance(preprocessor, Task):
        if preprocessor.preprocessor is None:
            raise ExportError(f"This {type(preprocessor).__name__} has no preprocessor "
                              "(preprocessor=None): there is nothing to export.")
        preprocessor = preprocessor.preprocessor
    tokenizer = getattr(preprocessor, "tokenizer", None)
    packer = getattr(preprocessor, "packer", None)
    if not isinstance(tokenizer, BertTokenizer) or not isinstance(packer, BertPackInputs):
        raise ExportError(
            "export_preprocessor takes a BertPreprocessor (or a preprocessor with a "
            "BertTokenizer and a BertPackInputs, or a task model with one), got "
            f"{type(preprocessor).__name__}.")
    if tokenizer.vocabulary is None:
        raise ExportError("The preprocessor's tokenizer has no vocabulary yet: give it one "
                          "(set_vocabulary) before exporting.")
    return tokenizer, packer
