"""What each task model's serving export takes and returns (the spec is at the top of
`keras_bert.export.task_export`): one class per task family, each turning the signature's text
inputs into the model's packed inputs and the model's outputs into scores and labels. The text
inputs are read and packed by the model's preprocessor (`keras_bert.text.raw_inputs`, the one
reader of raw input, which reads them as ``fit`` and ``predict`` do); their common base,
`keras_bert.export.task_serving.TaskServing`, holds what every task shares.
`SERVING_ADAPTERS` maps each task model class to its adapter.

Everything here runs inside the exported graph: core TensorFlow ops plus the tokenizer's
(tensorflow-text's ``NormalizeUTF8`` and ``FastWordpieceTokenizeWithOffsets``).
"""

import tensorflow as tf

from keras_bert.export import modules
from keras_bert.export.export_dirs import ExportError
from keras_bert.export.task_serving import TaskServing, strings
from keras_bert import vocab as vocab_lib
from keras_bert.models.classifier import BertClassifier
from keras_bert.models.masked_lm import BertMaskedLM
from keras_bert.models.multiple_choice import BertMultipleChoice
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.models.span_labeler import BertSpanLabeler
from keras_bert.models.text_embedder import BertTextEmbedder
from keras_bert.models.token_classifier import BertTokenClassifier
from keras_bert.text.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert.text.preprocessor import sync_packer
from keras_bert.text.text_embedder_preprocessor import BertTextEmbedderPreprocessor
from keras_bert.text.token_classifier_preprocessor import BertTokenClassifierPreprocessor


def _classes(logits, softmaxed=False):
    """Logits [..., C] -> (probabilities, label ids [...] int32)."""
    probabilities = logits if softmaxed else tf.nn.softmax(logits, axis=-1)
    return probabilities, tf.argmax(logits, axis=-1, output_type=tf.int32)


class ClassifierServing(TaskServing):
    """`BertClassifier`: ``text`` (or ``text_a``, ``text_b``) -> ``logits``,
    ``probabilities``, ``label_ids`` (+ ``labels``); regression -> ``score``; multi-label ->
    ``logits``, ``probabilities`` by sigmoid (+ ``labels``, the names of the classes above
    0.5).

    >>> import tensorflow as tf
    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> serving = ClassifierServing(model, label_names=["negative", "positive"])
    >>> texts = {"text": tf.constant(["a great movie", "dull"])}
    >>> inputs, extras = serving.pack(texts)
    >>> out = serving.text_outputs(texts, inputs, extras, model(inputs))
    >>> sorted(out), out["probabilities"].shape, out["labels"].dtype
    (['label_ids', 'labels', 'logits', 'probabilities'], TensorShape([2, 2]), tf.string)
    """

    takes_pairs = True
    litert = True

    def check_label_names(self, names):
        if self.model.regression:
            return super().check_label_names(names)
        return self._names(names, self.model.num_classes)

    def outputs(self, inputs, outputs):
        if self.model.regression:
            return {"score": outputs[:, 0]}
        if self.model.multi_label:
            return self._multi_label(outputs)
        softmaxed = self.model.activation is not None and (
            self.model.activation.__name__ == "softmax")
        probabilities, label_ids = _classes(outputs, softmaxed)
        out = {"logits": outputs, "probabilities": probabilities, "label_ids": label_ids}
        return self._with_labels(out, label_ids)


    def _multi_label(self, outputs):
        """A multi-label classifier: ``logits``, ``probabilities`` (each class's sigmoid)
        [batch, num_classes], and with label names ``labels`` [batch, num_classes]: the name of
        each class whose probability is above 0.5, "" for the others."""
        sigmoided = self.model.activation is not None and (
            self.model.activation.__name__ == "sigmoid")
        probabilities = outputs if sigmoided else tf.sigmoid(outputs)
        out = {"logits": outputs, "probabilities": probabilities}
        if self.label_names is not None:  # (a gather, not a select, of strings: LiteRT has it)
            count = len(self.label_names)
            ids = tf.range(count)[None, :] + tf.zeros_like(probabilities, tf.int32)
            chosen = tf.where(probabilities > 0.5, ids, count)  # count: the "" after the names
            out["labels"] = tf.gather(tf.constant(self.label_names + [""]), chosen)
        return out


class MultipleChoiceServing(TaskServing):
    """`BertMultipleChoice`: ``context`` [batch] and ``choices`` [batch, num_choices] ->
    ``logits``, ``probabilities``, ``label_ids`` (the index of the chosen choice).

    >>> import tensorflow as tf
    >>> from keras_bert import BertMultipleChoice
    >>> model = BertMultipleChoice.from_preset("tiny_random", num_choices=3, seq_length=6)
    >>> serving = MultipleChoiceServing(model)
    >>> texts = {"context": tf.constant(["he"]), "choices": tf.constant([["ran", "sat", "slept"]])}
    >>> inputs, extras = serving.pack(texts)
    >>> inputs["input_word_ids"].shape
    TensorShape([1, 3, 6])
    >>> out = serving.text_outputs(texts, inputs, extras, model(inputs))
    >>> out["probabilities"].shape, out["label_ids"].shape
    (TensorShape([1, 3]), TensorShape([1]))
    """

    preprocessor_cls = BertMultipleChoicePreprocessor
    litert = True

    def text_specs(self):
        return {**strings("context"),
                **strings("choices", shape=(None, self.model.num_choices))}

    def ids_specs(self):
        return modules.packed_specs(shape=(None, self.model.num_choices, None))

    def outputs(self, inputs, outputs):
        probabilities, label_ids = _classes(outputs)
        return {"logits": outputs, "probabilities": probabilities, "label_ids": label_ids}

    def pack_tokens(self, tokenize, texts):
        # [batch, num_choices, seq_length]: each choice after its context, as
        # BertMultipleChoicePreprocessor packs them.
        num_choices = self.model.num_choices
        contexts = tf.repeat(texts["context"], num_choices)
        choices = tf.reshape(texts["choices"], [-1])
        packed = self.model.preprocessor.packer([tokenize(contexts), tokenize(choices)])
        shape = [-1, num_choices, self.model.preprocessor.seq_length]
        return {name: tf.reshape(value, shape) for name, value in packed.items()}


class TokenClassifierServing(TaskServing):
    """`BertTokenClassifier`: ``text`` (words separated by whitespace) -> per token
    ``logits``, ``probabilities``, ``label_ids`` [batch, seq]; per word (text signature)
    ``words``, ``word_label_ids`` (+ ``word_labels``) [batch, words].

    >>> import tensorflow as tf
    >>> from keras_bert import BertTokenClassifier
    >>> model = BertTokenClassifier.from_preset("tiny_random", num_classes=3, seq_length=8)
    >>> serving = TokenClassifierServing(model, label_names=["O", "B-LOC", "I-LOC"])
    >>> texts = {"text": tf.constant(["Paris is biggest"])}
    >>> inputs, extras = serving.pack(texts)
    >>> out = serving.text_outputs(texts, inputs, extras, model(inputs))
    >>> out["words"].numpy().tolist(), out["word_labels"].shape, out["label_ids"].shape
    ([[b'Paris', b'is', b'biggest']], TensorShape([1, 3]), TensorShape([1, 8]))
    """

    preprocessor_cls = BertTokenClassifierPreprocessor

    def check_label_names(self, names):
        return self._names(names, self.model.num_classes)

    def pack(self, texts):
        words = self.read(texts)[0]  # [batch, (words)], split on whitespace as fit/predict
        return self.model.preprocessor(words), {"words": words}

    def outputs(self, inputs, outputs):
        probabilities, label_ids = _classes(outputs)
        return {"logits": outputs, "probabilities": probabilities, "label_ids": label_ids}

    def text_outputs(self, texts, inputs, extras, outputs):
        out = self.outputs(inputs, outputs)
        words = extras["words"]
        first = self.model.preprocessor.first_piece_positions(words)  # [batch, (words)]
        per_word = tf.gather(out["label_ids"], tf.maximum(first, 0), batch_dims=1)
        word_ids = first.with_flat_values(tf.where(
            first.flat_values >= 0, per_word.flat_values, -1)).to_tensor(default_value=-1)
        out["words"] = words.to_tensor(default_value="")
        out["word_label_ids"] = word_ids
        return self._with_labels(out, word_ids, key="word_labels", missing="")


class SpanLabelerServing(TaskServing):
    """`BertSpanLabeler`: ``question``, ``context`` -> ``start_logits``, ``end_logits``
    [batch, seq], the best span in the context ``start_index``, ``end_index`` [batch]
    (0, 0: none) and, from the text signature, its WordPiece text ``answer``.

    >>> import tensorflow as tf
    >>> from keras_bert import BertSpanLabeler
    >>> model = BertSpanLabeler.from_preset("tiny_random", seq_length=10)
    >>> serving = SpanLabelerServing(model, max_answer_length=2)
    >>> texts = {"question": tf.constant(["who ran"]), "context": tf.constant(["he ran home"])}
    >>> inputs, extras = serving.pack(texts)
    >>> out = serving.text_outputs(texts, inputs, extras, model(inputs))
    >>> sorted(out)
    ['answer', 'end_index', 'end_logits', 'start_index', 'start_logits']
    >>> start, end = int(out["start_index"][0]), int(out["end_index"][0])
    >>> 4 <= start <= end <= 6 and end - start < 2  # in the context, at most 2 tokens
    True
    """

    def text_specs(self):
        return strings("question", "context")

    def outputs(self, inputs, outputs):
        start, end = outputs["start_logits"], outputs["end_logits"]  # [batch, seq]
        seq = tf.shape(start)[1]
        # A span lies in the context (type 1, not padding, not its closing [SEP]), ends at
        # or after its start and holds at most max_answer_length tokens (run_squad.py).
        sep = self.model.preprocessor.tokenizer.sep_token_id
        in_context = ((inputs["input_type_ids"] == 1) & (inputs["input_mask"] == 1)
                      & (inputs["input_word_ids"] != sep))  # [batch, seq]
        i = tf.range(seq)[:, tf.newaxis]
        j = tf.range(seq)[tf.newaxis, :]
        allowed = (j >= i) & (j - i < self.max_answer_length)  # [seq, seq]
        valid = allowed[tf.newaxis] & in_context[:, :, tf.newaxis] & in_context[:, tf.newaxis]
        scores = start[:, :, tf.newaxis] + end[:, tf.newaxis, :]  # [batch, seq, seq]
        scores = tf.where(valid, scores, float("-inf"))
        best = tf.argmax(tf.reshape(scores, [tf.shape(start)[0], -1]), axis=1,
                         output_type=tf.int32)
        found = tf.reduce_any(valid, axis=[1, 2])
        start_index = tf.where(found, best // seq, 0)
        end_index = tf.where(found, best % seq, 0)
        return {"start_logits": start, "end_logits": end, "start_index": start_index,
                "end_index": end_index}

    def text_outputs(self, texts, inputs, extras, outputs):
        out = self.outputs(inputs, outputs)
        start, end = out["start_index"], out["end_index"]
        found = end > 0
        lengths = tf.where(found, end - start + 1, 0)
        offsets = tf.ragged.range(tf.zeros_like(lengths), lengths)  # [batch, (span)]
        positions = offsets + tf.expand_dims(start, 1)
        ids = tf.gather(inputs["input_word_ids"], positions, batch_dims=1)
        out["answer"] = self.model.preprocessor.tokenizer.detokenize(ids)
        return out


class MaskedLMServing(TaskServing):
    """`BertMaskedLM`, `BertPretrainer`: ``text`` (or ``text_a``, ``text_b``) holding
    ``[MASK]`` -> at each ``[MASK]`` the ``top_k`` predictions: ``top_ids``,
    ``top_probabilities``, ``top_tokens`` [batch, predictions, k]; the text signature also
    gives ``masked_lm_positions`` and ``masked_lm_weights`` (1 for a real prediction, 0 for
    padding) [batch, predictions]; `BertPretrainer` adds ``next_sentence_probabilities``
    [batch, 2] (0: text_b follows text_a).

    >>> import tensorflow as tf
    >>> from keras_bert import BertMaskedLM
    >>> model = BertMaskedLM.from_preset("tiny_random", seq_length=8)
    >>> serving = MaskedLMServing(model, top_k=2)
    >>> texts = {"text": tf.constant(["a [MASK] movie"])}
    >>> inputs, extras = serving.pack(texts)
    >>> inputs["masked_lm_positions"].numpy().tolist()  # [CLS] a [MASK] movie [SEP]
    [[2]]
    >>> out = serving.text_outputs(texts, inputs, extras, model(inputs))
    >>> out["top_tokens"].shape, out["masked_lm_weights"].numpy().tolist()
    (TensorShape([1, 1, 2]), [[1.0]])
    """

    takes_pairs = True

    def ids_specs(self):
        return modules.packed_specs(extra=("masked_lm_positions",))

    def pack(self, texts):
        preprocessor = self.model.preprocessor
        tokenizer = preprocessor.tokenizer
        sync_packer(preprocessor.packer, tokenizer)
        segments = [_tokenize_with_masks(tokenizer, text) for text in self.read(texts)]
        packed = preprocessor.packer(segments)
        mask_id = tokenizer.mask_token_id
        seq = tf.shape(packed["input_word_ids"])[1]
        is_mask = (packed["input_word_ids"] == mask_id) & (packed["input_mask"] == 1)
        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(tf.range(seq), tf.shape(is_mask)), is_mask)  # [batch, (P)]
        packed["masked_lm_positions"] = positions.to_tensor(default_value=0)
        weights = tf.ones_like(positions, tf.float32).to_tensor(default_value=0.0)
        return packed, {"masked_lm_weights": weights}

    def outputs(self, inputs, outputs):
        mlm = outputs["mlm_logits"] if isinstance(outputs, dict) else outputs
        vocabulary = self.model.preprocessor.tokenizer.vocabulary
        k = min(self.top_k, self.model.encoder.bert_config.vocab_size)
        probabilities, ids = tf.math.top_k(tf.nn.softmax(mlm, axis=-1), k=k)
        out = {"top_ids": ids, "top_probabilities": probabilities,
               "top_tokens": tf.gather(tf.constant(vocabulary), ids)}
        if isinstance(outputs, dict) and "nsp_logits" in outputs:
            out["next_sentence_probabilities"] = tf.nn.softmax(outputs["nsp_logits"], axis=-1)
        return out

    def text_outputs(self, texts, inputs, extras, outputs):
        out = self.outputs(inputs, outputs)
        out["masked_lm_positions"] = inputs["masked_lm_positions"]
        out["masked_lm_weights"] = extras["masked_lm_weights"]
        return out


class TextEmbedderServing(TaskServing):
    """`BertTextEmbedder`: ``text`` [batch] -> ``embeddings`` float32 [batch, dim], the
    model's vectors (L2-normalized when the model normalizes). ``serving_default`` puts the
    model's default prompt (``default_prompt_name``) before each text, as ``encode`` does;
    ``serving_ids`` embeds the ids as they are. The SavedModel is also callable, as TF Hub's
    text embedding models are: ``tf.saved_model.load(path)(texts)`` (and
    ``hub.KerasLayer(path)``) gives the embeddings [batch, dim].

    >>> import tensorflow as tf
    >>> from keras_bert import (BertConfig, BertEncoder, BertTextEmbedder,
    ...                         BertTextEmbedderPreprocessor)
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat", "dog", "sat"]
    >>> encoder = BertEncoder(BertConfig(vocab_size=len(vocab), hidden_size=8,
    ...                                  num_hidden_layers=1, num_attention_heads=2,
    ...                                  intermediate_size=16))
    >>> model = BertTextEmbedder(encoder,
    ...                          preprocessor=BertTextEmbedderPreprocessor(vocab, seq_length=8))
    >>> serving = TextEmbedderServing(model)
    >>> texts = {"text": tf.constant(["a cat sat", "a dog"])}
    >>> inputs, extras = serving.pack(texts)
    >>> out = serving.text_outputs(texts, inputs, extras, model(inputs))
    >>> sorted(out), out["embeddings"].shape
    (['embeddings'], TensorShape([2, 8]))
    """

    preprocessor_cls = BertTextEmbedderPreprocessor
    litert = True

    @property
    def prompt(self):
        """The text ``serving_default`` puts before each text: the default prompt, or ""."""
        name = self.model.default_prompt_name
        return self.model.prompts[name] if name is not None else ""

    def read(self, texts):
        (text,) = super().read(texts)
        if self.prompt:
            text = tf.strings.join([self.prompt, text])
        return (text,)

    def outputs(self, inputs, outputs):
        return {"embeddings": outputs}

    def add_functions(self, root):
        # TF Hub's convention for text embeddings (Universal Sentence Encoder, NNLM): the
        # object itself maps strings [batch] to vectors [batch, dim].
        serve = root.serving_default
        root.__call__ = tf.function(lambda text: serve({"text": text})["embeddings"],
                                    input_signature=[tf.TensorSpec([None], tf.string)],
                                    autograph=False)

    def check_litert(self):
        if self.prompt:
            raise ExportError(
                f"The LiteRT export cannot put this model's default prompt "
                f"({self.model.default_prompt_name!r}: {self.prompt!r}) before the texts "
                "(LiteRT has no string ops): export the SavedModel, or export with "
                "model.default_prompt_name = None and put the prompt in the texts.")


def _tokenize_with_masks(tokenizer, text):
    """Strings [batch] with ``[MASK]`` written in them -> ragged ids [batch, (tokens)] with
    the mask id there (the tokenizer alone reads ``[MASK]`` as the text "[ mask ]").

    Each text is split at ``[MASK]``; its P parts are tokenized, and a mask id follows each
    part but the last. Built with gathers on the flat ids (no ragged concat)."""
    parts = tf.strings.split(text, sep=vocab_lib.MASK)  # [batch, (P >= 1)]
    ids = tokenizer.tokenize(parts.flat_values)  # [parts, (tokens)]
    counts = tf.cast(ids.row_lengths(), tf.int32)  # [parts]
    last = tf.scatter_nd(tf.cast(parts.row_limits()[:, tf.newaxis] - 1, tf.int32),
                         tf.ones_like(parts.row_limits(), tf.int32), tf.shape(counts))
    lengths = counts + 1 - last  # each part's tokens, then a mask unless it is the last
    part = tf.repeat(tf.range(tf.size(counts)), lengths)  # part of each output token
    starts = tf.cumsum(lengths, exclusive=True)
    offset = tf.range(tf.reduce_sum(lengths)) - tf.gather(starts, part)
    source = tf.cast(tf.gather(ids.row_starts(), part), tf.int32) + offset
    values = tf.concat([ids.values, [tokenizer.mask_token_id]], axis=0)
    flat = tf.gather(values, tf.where(offset < tf.gather(counts, part), source,
                                      tf.size(ids.values)))
    # Every text has a part (split gives [""] for ""), so every row gets its sum.
    per_text = tf.math.segment_sum(lengths, tf.cast(parts.value_rowids(), tf.int32))
    return tf.RaggedTensor.from_row_lengths(flat, per_text)


# The serving adapter of each task model class (a subclass gets its nearest base's), as
# Model Garden's `SERVING_MODULES` maps its tasks to their serving modules: the export code
# knows the model classes, the models never import it.
SERVING_ADAPTERS = {
    BertClassifier: ClassifierServing,
    BertMultipleChoice: MultipleChoiceServing,
    BertTokenClassifier: TokenClassifierServing,
    BertSpanLabeler: SpanLabelerServing,
    BertMaskedLM: MaskedLMServing,
    BertPretrainer: MaskedLMServing,
    BertTextEmbedder: TextEmbedderServing,
}


def adapter_class(model):
    """The `TaskServing` class of ``model`` by its class (or its nearest base class in
    `SERVING_ADAPTERS`); None when it has none."""
    for cls in type(model).__mro__:
        if cls in SERVING_ADAPTERS:
            return SERVING_ADAPTERS[cls]
    return None


def describe_tasks(litert=False):
    """The task model classes with a serving export (``litert``: a LiteRT one), for messages."""
    return ", ".join(cls.__name__ for cls, adapter in SERVING_ADAPTERS.items()
                     if adapter.litert or not litert)


def for_model(model, **options):
    """The `TaskServing` of a task model; ExportError for other models."""
    adapter = adapter_class(model)
    if adapter is None:
        raise ExportError(f"A serving export is made from a keras_bert task model "
                          f"({describe_tasks()}), got {type(model).__name__}.")
    return adapter(model, **options)
