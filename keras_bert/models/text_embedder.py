"""`BertTextEmbedder`: text in, one vector per text out (sentence-transformers' models)."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import checks
from keras_bert.checkpoints import sentence_transformers as st_files
from keras_bert.checks import TaskInputError
from keras_bert.layers.heads import head_dtype
from keras_bert.layers.sentence_pooling import SentencePooling, pooling_modes
from keras_bert.models import retrieval
from keras_bert.models.ranking_loss import MultipleNegativesRankingLoss
from keras_bert.models.task import Task
from keras_bert.text.text_embedder_preprocessor import BertTextEmbedderPreprocessor

DOCUMENT_PROMPTS = ("document", "passage", "corpus")  # encode_document's, in this order


def dense_specs(dense):
    """``dense`` (None, an int, a dict, or a list of them) as a list of ``{"units",
    "activation", "use_bias"}``; an int is ``units`` with sentence-transformers' default
    activation (tanh) and a bias."""
    if dense is None:
        return []
    items = list(dense) if isinstance(dense, (list, tuple)) else [dense]
    specs = []
    for item in items:
        spec = {"units": item} if not isinstance(item, dict) else dict(item)
        unknown = sorted(set(spec) - {"units", "activation", "use_bias"})
        if unknown:
            raise ValueError(f"dense takes units, activation and use_bias; got {unknown}.")
        spec["units"] = checks.count("dense units", spec.get("units"))
        spec["activation"] = spec.get("activation", "tanh") or "linear"
        if spec["activation"] not in st_files.TORCH_ACTIVATIONS:
            raise ValueError(f"dense activation must be one of "
                             f"{', '.join(map(repr, st_files.TORCH_ACTIVATIONS))} (what "
                             f"sentence-transformers' Dense module has), got "
                             f"{spec['activation']!r}.")
        spec["use_bias"] = checks.boolean("dense use_bias", spec.get("use_bias", True))
        specs.append(spec)
    return specs


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedder(Task):
    """BERT for sentence embeddings: each text becomes one vector, for search, similarity,
    clustering and reranking, as sentence-transformers computes it.

    The encoder's ``sequence_output`` is pooled over the real tokens (`SentencePooling`),
    optionally projected by dense layers (sentence-transformers' ``Dense`` modules) and
    L2-normalized: the output is float32 ``[batch, dim]``. ``from_preset`` of a
    sentence-transformers model (``minilm_l6``, a directory or ``hf://`` handle with
    ``modules.json``) reads its pooling, projections, normalization, ``max_seq_length`` (the
    preprocessor's ``seq_length``) and prompts, so the vectors are sentence-transformers'.

    ``fit`` takes columns of texts, ``(anchors, positives)`` or ``(anchors, positives,
    negatives)`` (or lists of pairs, triples), and no labels: the default loss is in-batch
    negatives (`MultipleNegativesRankingLoss`, scale 20). Given columns, the model returns
    ``[batch, columns, dim]``. Batches are drawn at random (``group_by_length`` is False):
    the other texts of a batch are each anchor's negatives.

    Args:
        encoder: a `BertEncoder`.
        pooling: ``"mean"`` (default), ``"cls"``, ``"max"``, ``"mean_sqrt_len"``, or a list
            of them (concatenated).
        normalize: L2-normalize the output (then cosine similarity is a dot product).
        dense: None, or projections after the pooling: an int (units; tanh and a bias, as
            sentence-transformers' ``Dense``) or ``{"units", "activation", "use_bias"}``, or
            a list of them, applied in order.
        preprocessor: a `BertTextEmbedderPreprocessor` for raw text, or None (packed
            inputs). `from_preset` attaches the preset's.
        prompts: ``{name: text}`` put before the texts by ``encode(prompt_name=...)``,
            ``encode_query`` and ``encode_document`` (e.g. ``{"query": "query: "}``).
        default_prompt_name: the prompt ``encode`` uses when given none.
        similarity_fn_name: how `similarity` and `search` score: ``"cosine"`` (default),
            ``"dot"``, ``"euclidean"``, ``"manhattan"``.
        compile: compile with the BERT recipe and the in-batch negatives loss.

    Example:

    >>> from keras_bert import BertConfig, BertEncoder, BertTextEmbedder
    >>> from keras_bert import BertTextEmbedderPreprocessor
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat", "dog", "sat", "ran"]
    >>> encoder = BertEncoder(BertConfig(vocab_size=len(vocab), hidden_size=8,
    ...                                  num_hidden_layers=1, num_attention_heads=2,
    ...                                  intermediate_size=16))
    >>> embedder = BertTextEmbedder(encoder,
    ...                             preprocessor=BertTextEmbedderPreprocessor(vocab, seq_length=8))
    >>> embedder.predict(["a cat sat", "a dog ran"], verbose=0).shape
    (2, 8)
    >>> history = embedder.fit((["a cat", "a dog"], ["cat sat", "dog ran"]), epochs=1, verbose=0)
    >>> hits = embedder.search(["a cat"], ["a dog ran", "a cat sat"], top_k=1)
    >>> sorted(hits[0][0])
    ['corpus_id', 'score']

    ``BertTextEmbedder.from_preset("minilm_l6")`` gives all-MiniLM-L6-v2's vectors.
    """

    trim_predictions = True  # one vector per text: predict cuts the padding (pooling masks it)
    group_by_length = False  # in-batch negatives want batches drawn at random
    needs_labels = False  # the pairs are the labels
    preprocessor_cls = BertTextEmbedderPreprocessor

    def __init__(self, encoder, pooling="mean", normalize=True, dense=None, preprocessor=None,
                 prompts=None, default_prompt_name=None, similarity_fn_name="cosine",
                 **kwargs):
        modes = pooling_modes(pooling)
        self.pooling = modes[0] if len(modes) == 1 else list(modes)
        self.normalize = checks.boolean("normalize", normalize)
        self.dense = dense_specs(dense)
        self.prompts = _prompts(prompts)
        if default_prompt_name is not None and default_prompt_name not in self.prompts:
            raise ValueError(f"default_prompt_name {default_prompt_name!r} is not one of the "
                             f"prompts ({sorted(self.prompts)}).")
        self.default_prompt_name = default_prompt_name
        self.similarity_fn_name = retrieval.check_function(similarity_fn_name)
        dtype = head_dtype(encoder)
        # The pooler is not used here (cls pooling reads the [CLS] token itself): freeze it,
        # as it gets no gradients.
        encoder.pooler.trainable = False
        inputs = encoder.input
        if modes == ("cls",):  # the last block computes the [CLS] row only
            tokens = encoder(inputs, output_positions=1)["sequence_output"]  # [batch, 1, h]
            mask = inputs["input_mask"][:, :1]
        else:
            tokens = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
            mask = inputs["input_mask"]
        x = SentencePooling(self.pooling, dtype=dtype, name="pooling")(tokens, mask)
        self.dense_layers = [
            keras.layers.Dense(spec["units"], activation=spec["activation"],
                               use_bias=spec["use_bias"], dtype=dtype, name=f"dense_{i}")
            for i, spec in enumerate(self.dense)]
        for layer in self.dense_layers:
            x = layer(x)
        if self.normalize:
            x = keras.layers.UnitNormalization(dtype=dtype, name="normalize")(x)
        super().__init__(inputs=inputs, outputs=x, encoder=encoder,  # [batch, dim]
                         preprocessor=preprocessor, **kwargs)
        # Columns of texts ([batch, columns, seq]) come in too (`call` embeds each text), and
        # a traced function may leave the rank unknown: the encoder checks its inputs.
        self.input_spec = None

    def call(self, inputs, training=None, mask=None):
        ids = inputs["input_word_ids"]
        rank = tf.TensorShape(ids.shape).rank
        if rank == 2:
            return super().call(inputs, training=training, mask=mask)
        if rank not in (3, None):
            raise ValueError(f"{type(self).__name__} takes packed texts [batch, seq] or columns "
                             f"of them [batch, columns, seq]; input_word_ids has shape "
                             f"{tuple(ids.shape)}.")
        # [batch, columns, seq] (or a rank a traced function left unknown) -> [rows, seq]
        shape = tf.shape(ids)
        flat = {k: tf.reshape(v, [-1, shape[-1]]) for k, v in inputs.items()}
        out = super().call(flat, training=training, mask=mask)  # [rows, dim]
        return tf.reshape(out, tf.concat([shape[:-1], tf.shape(out)[-1:]], axis=0))

    @property
    def embedding_dim(self):
        """The size of the vectors."""
        return int(self.output.shape[-1])

    # ------------------------------------------------------------------ training
    def default_loss(self):
        return MultipleNegativesRankingLoss()

    def check_labels(self, y):
        if isinstance(self.loss, MultipleNegativesRankingLoss):
            raise TaskInputError(
                f"{type(self).__name__} trains with in-batch negatives, which take no labels: "
                "pass the columns alone, fit((anchors, positives)) or fit((anchors, "
                "positives, negatives)) (or compile with a loss that reads labels).")

    def check_labels_in_graph(self, y):
        self.check_labels(y)
        return y

    # ------------------------------------------------------------------ embedding
    def encode(self, texts, prompt_name=None, prompt=None, batch_size=32, verbose=0):
        """The embeddings of ``texts`` (a list of strings, or one string) as numpy:
        ``[n, dim]`` (one string: ``[dim]``), as sentence-transformers' ``encode``: the
        prompt (``prompt``, else ``prompts[prompt_name]``, else the default prompt) goes
        before each text."""
        text = self._prompt(prompt_name, prompt)
        single = isinstance(texts, (str, bytes))
        batch = [texts] if single else texts
        if text:
            batch = [text + _as_str(t) for t in _text_list(batch, type(self).__name__)]
        out = np.asarray(self.predict(batch, batch_size=batch_size, verbose=verbose))
        return out[0] if single else out

    def encode_query(self, texts, prompt_name=None, prompt=None, batch_size=32, verbose=0):
        """`encode` with the ``"query"`` prompt (none when the model has none: not the
        default prompt either) unless another is given, as sentence-transformers'
        ``encode_query``."""
        if prompt_name is None and prompt is None:
            prompt = self.prompts.get("query", "")
        return self.encode(texts, prompt_name, prompt, batch_size, verbose)

    def encode_document(self, texts, prompt_name=None, prompt=None, batch_size=32, verbose=0):
        """`encode` with the first of the ``"document"``, ``"passage"``, ``"corpus"``
        prompts the model has (none when it has none: not the default prompt either)
        unless another is given, as sentence-transformers' ``encode_document``."""
        if prompt_name is None and prompt is None:
            prompt_name = next((n for n in DOCUMENT_PROMPTS if n in self.prompts), None)
            prompt = "" if prompt_name is None else None
        return self.encode(texts, prompt_name, prompt, batch_size, verbose)

    def _prompt(self, prompt_name, prompt):
        if prompt is not None:
            return prompt
        if prompt_name is not None:
            if prompt_name not in self.prompts:
                raise ValueError(f"Prompt name {prompt_name!r} is not one of this model's "
                                 f"prompts ({sorted(self.prompts)}).")
            return self.prompts[prompt_name]
        if self.default_prompt_name is not None:
            return self.prompts[self.default_prompt_name]
        return ""

    def similarity(self, a, b):
        """The scores ``[len(a), len(b)]`` of ``a`` against ``b``: embeddings (``[n, dim]``)
        or texts (embedded with `encode`), under ``similarity_fn_name`` (cosine: as
        sentence-transformers' ``util.cos_sim``)."""
        return retrieval.similarity(self._embeddings(a, self.encode),
                                    self._embeddings(b, self.encode), self.similarity_fn_name)

    def search(self, queries, corpus, top_k=10, batch_size=32):
        """For each query, the ``top_k`` best entries of ``corpus`` (None: all), as
        sentence-transformers' ``util.semantic_search``: ``[[{"corpus_id": int, "score":
        float}, ...], ...]``, one list per query, sorted by decreasing score. Queries and
        corpus are texts (embedded with `encode_query` and `encode_document`) or
        embeddings."""
        queries = self._embeddings(queries, self.encode_query, batch_size)
        corpus = self._embeddings(corpus, self.encode_document, batch_size)
        return retrieval.semantic_search(queries, corpus, top_k, self.similarity_fn_name)

    def _embeddings(self, x, encode, batch_size=32):
        """Texts -> their embeddings; embeddings as they are."""
        if isinstance(x, (str, bytes)):
            return encode([x], batch_size=batch_size)
        if isinstance(x, (list, tuple)) and (not x or isinstance(x[0], (str, bytes))):
            return encode(list(x), batch_size=batch_size) if x else np.zeros(
                [0, self.embedding_dim], np.float32)
        array = np.asarray(x)
        if array.dtype.kind in "USO":
            return encode(array.tolist(), batch_size=batch_size)
        return array

    # ------------------------------------------------------------------ presets
    @classmethod
    def preset_defaults(cls, metadata):
        """The arguments a sentence-transformers preset gives (its description in
        ``metadata``: `keras_bert.checkpoints.sentence_transformers`); ValueError for a
        model whose embedding keras_bert does not compute."""
        description = metadata.get(st_files.METADATA_KEY)
        if not description:
            return {}
        if description.get("unsupported"):
            raise ValueError(f"{cls.__name__} cannot compute this model's embedding: "
                             f"{description['unsupported']}.")
        args = {"pooling": list(description["pooling"]), "normalize": description["normalize"],
                "dense": [dict(spec) for spec in description.get("dense") or []] or None,
                "prompts": dict(description.get("prompts") or {}) or None,
                "default_prompt_name": description.get("default_prompt_name"),
                "similarity_fn_name": description.get("similarity_fn_name") or "cosine"}
        if description.get("max_seq_length"):
            args["seq_length"] = description["max_seq_length"]
        return args

    def preset_metadata(self):
        """This model as a sentence-transformers description (what
        ``save_to_preset(format="sentence_transformers")`` writes)."""
        return {st_files.METADATA_KEY: {
            "pooling": list(pooling_modes(self.pooling)), "dense": [dict(s) for s in self.dense],
            "normalize": self.normalize,
            "max_seq_length": getattr(self.preprocessor, "seq_length", None),
            "prompts": dict(self.prompts), "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name, "unsupported": None}}

    def head_variables(self):
        out = {}
        for i, layer in enumerate(self.dense_layers):
            kernel, bias = st_files.dense_names(i)
            out[kernel] = (layer.kernel, False)
            if layer.use_bias:
                out[bias] = (layer.bias, False)
        return out

    def get_config(self):
        config = super().get_config()
        config.update({
            "pooling": self.pooling, "normalize": self.normalize,
            "dense": [dict(s) for s in self.dense] or None,
            "prompts": dict(self.prompts) or None,
            "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name,
        })
        return config


def _prompts(prompts):
    if prompts is None:
        return {}
    if not isinstance(prompts, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
        raise ValueError(f"prompts must be a dict of name: text (str), got {prompts!r:.200}.")
    return dict(prompts)


def _text_list(texts, owner):
    if hasattr(texts, "tolist"):
        texts = texts.tolist()
    if not isinstance(texts, (list, tuple)) or not all(
            isinstance(t, (str, bytes)) for t in texts):
        raise TaskInputError(f"{owner}.encode takes a string or a list of strings; got "
                             f"{type(texts).__name__} {texts!r:.80}.")
    return list(texts)


def _as_str(text):
    return text.decode("utf-8") if isinstance(text, bytes) else text
