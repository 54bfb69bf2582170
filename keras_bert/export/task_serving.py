"""`TaskServing`, the base of every task's serving adapter (`keras_bert.export.task_adapters`):
the checks of the export's options, the signatures' input specs, the text read and packed by
the model's preprocessor, label names on the outputs, and the LiteRT hooks. The contract it
serves is at the top of `keras_bert.export.task_export`.
"""

import tensorflow as tf

from keras_bert import checks
from keras_bert.export import modules
from keras_bert.export.export_dirs import ExportError
from keras_bert.text.preprocessor import BertPreprocessor


def strings(*names, shape=(None,)):
    """String input specs by name (a signature's text inputs), each of ``shape``.

    >>> sorted(strings("text_a", "text_b"))
    ['text_a', 'text_b']
    """
    return {name: tf.TensorSpec(shape, tf.string, name=name) for name in names}


class TaskServing:
    """The serving behaviour of one task model. Subclasses set the text inputs and the
    outputs; see `keras_bert.export.task_export` for the contract.

    Example (`for_model` picks the class of a task model, here `ClassifierServing`):

    >>> import tensorflow as tf
    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> from keras_bert.export.task_adapters import for_model
    >>> serving = for_model(model, pairs=True)
    >>> type(serving).__name__, serving.describe_inputs()
    ('ClassifierServing', 'text_a, text_b')
    >>> sorted(serving.ids_specs())
    ['input_mask', 'input_type_ids', 'input_word_ids']
    >>> texts = {"text_a": tf.constant(["a great movie"]), "text_b": tf.constant(["dull"])}
    >>> inputs, extras = serving.pack(texts)
    >>> inputs["input_type_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 0]]
    """

    takes_pairs = False  # whether `pairs=True` (text_a, text_b) makes sense for the task
    preprocessor_cls = BertPreprocessor  # the preprocessor the text signature works with
    # Whether the LiteRT export (keras_bert.export.litert) takes the task: its outputs need
    # no string ops, and `pack_tokens` packs its text.
    litert = False

    def __init__(self, model, pairs=False, label_names=None, top_k=5, max_answer_length=30):
        self.model = model
        if not isinstance(model.preprocessor, self.preprocessor_cls):
            raise ExportError(
                f"The serving export of {type(model).__name__} packs text with a "
                f"{self.preprocessor_cls.__name__}; this model's preprocessor is a "
                f"{type(model.preprocessor).__name__}.")
        self.pairs = checks.boolean("pairs", pairs)
        if self.pairs and not self.takes_pairs:
            raise ExportError(f"pairs=True: {type(model).__name__} takes no sentence pairs "
                              f"in its serving signature ({self.describe_inputs()}).")
        if label_names is None:  # the model's own class names (`LabelNames`), if any
            label_names = getattr(model, "label_names", None)
        self.label_names = None
        if label_names is not None:
            self.label_names = self.check_label_names(list(label_names))
        self.top_k = checks.integer("top_k", top_k, minimum=1)
        self.max_answer_length = checks.integer("max_answer_length", max_answer_length,
                                                minimum=1)

    # ---- inputs
    def text_specs(self):
        return strings("text_a", "text_b") if self.pairs else strings("text")

    def ids_specs(self):
        return modules.packed_specs()

    def describe_inputs(self):
        return ", ".join(self.text_specs())

    def read(self, texts):
        """The signature's text inputs, in the order of `text_specs`, read by the model's
        preprocessor (`keras_bert.text.raw_inputs`): a tuple of tensors."""
        parts = tuple(texts[name] for name in self.text_specs())
        return self.model.preprocessor.read_inputs(parts if len(parts) > 1 else parts[0])

    def pack(self, texts):
        """The signature's text inputs -> the model's inputs (and extras for the outputs)."""
        segments = self.read(texts)
        return self.model.preprocessor(segments if len(segments) > 1 else segments[0]), {}

    # ---- outputs
    def outputs(self, inputs, outputs):
        """Outputs of both signatures, from the model's inputs and outputs."""
        raise NotImplementedError

    def text_outputs(self, texts, inputs, extras, outputs):
        """Outputs of ``serving_default`` (by default those of ``serving_ids``)."""
        return self.outputs(inputs, outputs)

    def check_label_names(self, names):
        raise ExportError(f"label_names: {type(self.model).__name__} has no class labels.")

    def _names(self, names, count):
        if len(names) != count or not all(isinstance(n, str) for n in names):
            raise ExportError(f"label_names must be {count} strings, one per class of "
                              f"{type(self.model).__name__}; got {names!r:.200}.")
        return names

    def _with_labels(self, out, label_ids, key="labels", missing=None):
        if self.label_names is not None:
            names = tf.constant(self.label_names)
            if missing is None:
                out[key] = tf.gather(names, label_ids)
            else:  # label_ids of -1 (no label) -> ""
                out[key] = tf.where(label_ids >= 0, tf.gather(names, tf.maximum(label_ids, 0)),
                                    missing)
        return out

    def add_functions(self, root):
        """Adds functions other than the two signatures to the SavedModel's root object,
        whose ``serving_default`` is traced (none by default)."""

    # ---- LiteRT
    def check_litert(self):
        """ExportError when this model's LiteRT export cannot be made though its task's can
        (`litert`); checked before anything is traced."""

    def pack_tokens(self, tokenize, texts):
        """The signature's text inputs -> the model's inputs, packed as `pack` packs them but
        tokenized by ``tokenize`` (strings [batch] -> ragged int32 ids [batch, (tokens)]):
        what the LiteRT export runs, whose tokenizer is LiteRT's (see `litert`)."""
        return self.model.preprocessor.packer(
            [tokenize(texts[name]) for name in self.text_specs()])
