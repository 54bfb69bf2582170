"""`BertEncoder`: the BERT encoder as a Keras functional model."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.checks import check_kwargs, keyword_parameters
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.pooler import Pooler
from keras_bert.layers.transformer_block import TransformerBlock
from keras_bert.models import load_note, lora, memory, quantization
from keras_bert.models import weights as weights_lib
from keras_bert.models.preset_mixin import PresetMixin
from keras_bert import checks
from keras_bert.config import INPUT_NAMES



@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoder(PresetMixin, keras.Model):
    """The BERT encoder: embeddings, ``num_hidden_layers`` transformer blocks, pooler.

    Inputs are a dict of int32 ``[batch, seq]`` tensors named as in TF Hub BERT:
    ``input_word_ids``, ``input_mask`` (1 = real token, 0 = padding; padding gets no
    attention) and ``input_type_ids``. ``seq`` may be any length up to
    ``max_position_embeddings``. Outputs are a dict: ``sequence_output``
    ``[batch, seq, hidden]``, ``pooled_output`` ``[batch, hidden]`` and ``encoder_outputs``,
    the list of every block's output.

    Args:
        config: a `BertConfig` (or its dict).
        dtype: a Keras dtype policy (or its name, such as ``"mixed_bfloat16"``) for the model
            and every layer in it; ``encoder.dtype_policy`` reports it, and a ``.keras`` file
            keeps it. Default: the global policy.

    Sizes whose weights would not fit in the memory available raise
    `keras_bert.models.memory.ModelTooLargeError` at once, before any variable is made.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, intermediate_size=64))
    >>> ids = np.array([[2, 17, 42, 3, 0]], dtype="int32")
    >>> outputs = encoder({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...                    "input_type_ids": np.zeros_like(ids)})
    >>> outputs["sequence_output"].shape, outputs["pooled_output"].shape
    (TensorShape([1, 5, 32]), TensorShape([1, 32]))
    >>> len(outputs["encoder_outputs"])
    2

    Heads that read only some positions say which: ``encoder(inputs,
    output_positions=positions)`` (int ``[batch, positions]`` indices, or an int ``n`` for the
    first ``n``) runs the last block at those rows (and [CLS]) only, its keys and values still
    from every position, and returns ``sequence_output`` ``[batch, positions, hidden]`` (those
    rows of the full output) and ``pooled_output``. `BertClassifier` and
    `BertMultipleChoice` ask for [CLS] alone, `BertPretrainer` for the masked positions: the
    same results, one block's work less.

    >>> rows = encoder({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...                 "input_type_ids": np.zeros_like(ids)},
    ...                output_positions=np.array([[1, 2]], "int32"))
    >>> rows["sequence_output"].shape
    TensorShape([1, 2, 32])
    >>> bool(np.allclose(rows["sequence_output"], outputs["sequence_output"][:, 1:3], atol=1e-6))
    True

    Real weights come from a preset: ``BertEncoder.from_preset("base")`` (a name from
    ``keras_bert.presets()``, or a checkpoint directory or zip); ``encoder.save_to_preset(dir)``
    writes config, vocabulary and weights in a layout ``from_preset(dir)`` loads back.
    ``from_preset`` keeps the preset's vocabulary, casing and name on the encoder
    (``vocabulary``, ``do_lower_case``, ``preset_name``) for ``save_to_preset``, though the
    encoder itself never reads them; a ``.keras`` file keeps them too (the vocabulary as the
    asset ``vocabulary.txt``, the others in ``get_config``).

    Inputs are checked where they enter, before any layer runs: the three must be integer
    tensors (any int dtype; ``input_mask`` may be bool) of one shape ``[batch, seq]``, with
    ids in ``[0, vocab_size)``, type ids in ``[0, type_vocab_size)`` and mask values 0/1;
    other keys of the dict (e.g. the masker's ``masked_lm_*``) are ignored.

    Raises:
        ValueError: a missing key; a rank other than 2; shapes that differ (naming the three,
            e.g. a 1-row ``input_mask`` is not broadcast over a batch); values out of range;
            sequences of 0 tokens or longer than ``max_position_embeddings``;
            ``output_positions`` that are not an int >= 1 or ``[batch, positions]`` indices
            in ``[0, seq)`` for the same batch.
        TypeError: inputs that are not a dict, float, string or bool ids.
        tf.errors.InvalidArgumentError: inside a graph (``tf.function``, ``fit``, an export),
            values out of range or shapes the traced ones leave unknown and that differ at
            run time; the same messages, checked before the embeddings.
    """

    def __init__(self, config=None, dtype=None, name="bert_encoder", trainable=True, **kwargs):
        # keras.Model's functional constructor drops keyword arguments it does not know.
        check_kwargs("BertEncoder()", kwargs,
                     {"BertEncoder arguments": keyword_parameters(BertEncoder.__init__)})
        if config is None:
            config = BertConfig()
        elif isinstance(config, dict):
            config = BertConfig.from_dict(config)
        elif not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig or dict, got {type(config).__name__}.")
        # One policy for the model and every layer in it; keras.Model's functional
        # constructor takes no dtype, so the model's own is set after it (below).
        policy = keras.config.dtype_policy() if dtype is None else keras.dtype_policies.get(dtype)
        memory.check_weights_fit(config, policy.variable_dtype)  # before any variable exists

        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES
        }
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            dropout=config.hidden_dropout_prob,
            dtype=policy,
            name="embeddings",
        )
        x = embeddings((inputs["input_word_ids"], inputs["input_type_ids"]))
        blocks = []
        encoder_outputs = []
        for i in range(config.num_hidden_layers):
            block = TransformerBlock(
                hidden_size=config.hidden_size,
                num_attention_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act,
                dropout=config.hidden_dropout_prob,
                attention_dropout=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                dtype=policy,
                name=f"transformer_block_{i}",
            )
            x = block((x, inputs["input_mask"]))
            blocks.append(block)
            encoder_outputs.append(x)
        pooler = Pooler(
            config.hidden_size,
            initializer_range=config.initializer_range,
            dtype=policy,
            name="pooler",
        )
        outputs = {
            "sequence_output": x,
            "pooled_output": pooler(x),
            "encoder_outputs": encoder_outputs,
        }
        super().__init__(inputs=inputs, outputs=outputs, name=name, trainable=trainable)
        self.dtype_policy = policy  # what get_config saves and a .keras file restores
        self.bert_config = config
        self.embeddings = embeddings
        self.transformer_blocks = blocks
        self.pooler = pooler
        # Set by from_preset; written by save_to_preset, kept by a .keras round trip
        # (see PresetMixin): the vocabulary as an asset, casing and name in get_config.
        self.vocab_path = None
        self.do_lower_case = None
        self.preset_name = None
        self._lora_state = None  # enable_lora's rank, lora_alpha and targets

    # ------------------------------------------------------------ outputs at some positions
    def __call__(self, inputs, *args, output_positions=None, **kwargs):
        inputs = self._checked_inputs(inputs)
        if output_positions is not None:
            kwargs["output_positions"] = self._checked_positions(output_positions, inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None, mask=None, output_positions=None):
        if output_positions is None:
            return super().call(inputs, training=training, mask=mask)
        # The graph above with the last block run at the chosen rows only (and [CLS]).
        ids, input_mask, type_ids = (inputs[name] for name in INPUT_NAMES)
        x = self.embeddings((ids, type_ids), training=training)
        for block in self.transformer_blocks[:-1]:
            x = block((x, input_mask), training=training)
        last = self.transformer_blocks[-1]
        if isinstance(output_positions, int):  # the first n rows, [CLS] among them
            sequence = last((x, input_mask), training=training, output_positions=output_positions)
            cls = sequence
        else:
            rows = tf.concat([tf.zeros_like(output_positions[:, :1]), output_positions], axis=1)
            rows = last((x, input_mask), training=training, output_positions=rows)
            cls, sequence = rows[:, :1], rows[:, 1:]
        return {"sequence_output": sequence, "pooled_output": self.pooler(cls)}

    def compute_output_spec(self, inputs, training=None, mask=None, output_positions=None):
        if output_positions is None:
            return super().compute_output_spec(inputs, training=training, mask=mask)
        batch, seq = inputs["input_word_ids"].shape
        if isinstance(output_positions, int):
            rows = output_positions if seq is None else min(output_positions, seq)
        else:
            rows = output_positions.shape[1]
        dtype = self.dtype_policy.compute_dtype
        hidden = self.bert_config.hidden_size
        return {"sequence_output": keras.KerasTensor((batch, rows, hidden), dtype=dtype),
                "pooled_output": keras.KerasTensor((batch, hidden), dtype=dtype)}

    def _checked_positions(self, positions, inputs):
        """``output_positions`` checked like the inputs: an int >= 1, or integer
        ``[batch, positions]`` indices in ``[0, seq)`` for the same batch."""
        where = "BertEncoder: output_positions"
        if isinstance(positions, (bool, np.bool_)) or (
                isinstance(positions, (int, np.integer)) and positions < 1):
            raise ValueError(f"{where} must be an int >= 1 (the first n positions) or "
                             f"[batch, positions] indices; got {positions!r}")
        if isinstance(positions, (int, np.integer)):
            return int(positions)
        ids = inputs["input_word_ids"]
        if isinstance(positions, keras.KerasTensor):
            tensor = positions
        else:
            tensor = checks.integer_tensor(positions, where)
        shape = tf.TensorShape(tensor.shape)
        if shape.rank != 2:
            raise ValueError(f"{where} must be [batch, positions]; got shape "
                             f"{tuple(shape.as_list()) if shape.rank is not None else '?'}")
        if isinstance(tensor, keras.KerasTensor) or isinstance(ids, keras.KerasTensor):
            return tensor
        assertions = checks.same_dims([tensor, ids], ["output_positions", "input_word_ids"], 0,
                                      "batch size", "BertEncoder")
        seq = ids.shape[1]  # known unless a graph leaves it to run time
        assertions += checks.values_in(
            tensor, "output_positions", 0, tf.shape(ids)[1] if seq is None else seq,
            "BertEncoder", "" if seq is None else " (the sequence length)",
            high_name="seq_length")
        return checks.after(assertions, tf.cast(tensor, "int32"))

    # ------------------------------------------------------------ inputs

    def _checked_inputs(self, inputs):
        """The three inputs, checked as the class docstring says: static facts at once
        (ValueError/TypeError), the rest as assertions every input then depends on."""
        where = "BertEncoder"
        if not isinstance(inputs, dict):
            raise TypeError(f"{where} takes a dict with keys {', '.join(INPUT_NAMES)}, got "
                            f"{type(inputs).__name__}")
        missing = [name for name in INPUT_NAMES if name not in inputs]
        if missing:
            raise ValueError(f"{where}: the inputs lack {', '.join(missing)} (got keys "
                             f"{sorted(inputs)}); it takes {', '.join(INPUT_NAMES)}")
        symbolic = any(isinstance(inputs[n], keras.KerasTensor) for n in INPUT_NAMES)
        tensors = [
            inputs[n] if symbolic
            else checks.integer_tensor(_bool_as_int(inputs[n], n), f"{where}: {n}")
            for n in INPUT_NAMES
        ]
        shapes = [tf.TensorShape(t.shape) for t in tensors]
        if any(s.rank != 2 for s in shapes):
            got = ", ".join(f"{n} {tuple(s.as_list()) if s.rank is not None else '?'}"
                            for n, s in zip(INPUT_NAMES, shapes))
            raise ValueError(f"{where}: inputs must be [batch, seq]; got {got}")
        assertions = checks.same_shape(tensors, INPUT_NAMES, where)
        if shapes[0][1] == 0:
            raise ValueError(f"{where}: sequences must hold at least one token ([CLS], which "
                             f"the pooler reads); got input_word_ids {tuple(shapes[0])}")
        if symbolic:
            return dict(zip(INPUT_NAMES, tensors))
        if shapes[0][1] is None:
            assertions.append(tf.debugging.Assert(
                tf.shape(tensors[0])[1] > 0,
                [f"{where}: sequences must hold at least one token ([CLS], which the pooler "
                 "reads); got input_word_ids of shape", tf.shape(tensors[0])]))
        config = self.bert_config
        for tensor, name, high, hint in zip(
            tensors, INPUT_NAMES, (config.vocab_size, 2, config.type_vocab_size),
            (" (vocab_size)", " (0 or 1)", " (type_vocab_size)"),
        ):
            assertions += checks.values_in(tensor, name, 0, high, where, hint)
        tensors = checks.after(assertions, [tf.cast(t, "int32") for t in tensors])
        return dict(zip(INPUT_NAMES, tensors))

    # ------------------------------------------------------------ weights
    @property
    def token_embedding(self):
        """The layer that holds the word-embedding table (`BertEmbeddings`), under
        keras-hub's name: heads that tie to the word embeddings take it (``MaskedLMHead``)."""
        return self.embeddings

    @property
    def word_embeddings(self):
        """The word-embedding table, ``[vocab_size, hidden_size]`` (a variable), that
        ``bert/embeddings/word_embeddings`` loads into and tied decoders read."""
        return self.embeddings.word_embeddings

    def canonical_variables(self):
        """Every weight by its variable name in Google's original BERT checkpoints."""
        out = {}
        for name, var in self.embeddings.canonical_variables().items():
            out[f"bert/embeddings/{name}"] = var
        for i, block in enumerate(self.transformer_blocks):
            for name, var in block.canonical_variables().items():
                out[f"bert/encoder/layer_{i}/{name}"] = var
        for name, var in self.pooler.canonical_variables().items():
            out[f"bert/pooler/{name}"] = var
        return out

    def get_canonical_weights(self):
        """A dict of numpy arrays keyed by Google checkpoint variable names (with LoRA
        enabled, the kernels with the LoRA update merged in: what the model computes)."""
        merged = lora.merged_kernels(self)
        return {name: merged[id(var)] if id(var) in merged else np.asarray(var.numpy())
                for name, var in self.canonical_variables().items()}

    def set_canonical_weights(self, weights, source="weights"):
        """Assigns a dict keyed by Google variable names; checks every name and shape first.

        Keys this model has no variable for (pre-training heads, optimizer slots) are ignored.
        """
        weights_lib.assign(self.canonical_variables(), weights, source=source)

    # ------------------------------------------------------------ LoRA
    def enable_lora(self, rank, target_layer_names=None, lora_alpha=None):
        """LoRA, as keras-hub's ``Backbone.enable_lora``: freezes every weight of the
        encoder and gives the ``target_layer_names`` projections of every transformer block
        trainable factors of rank ``rank`` (`keras_bert.models.lora`).

        Args:
            rank: the factors' inner dimension, a positive int (4, 8, 16 are usual).
            target_layer_names: the projections: ``query``, ``key``, ``value``,
                ``attention_output``, ``intermediate``, ``output``. Default: ``query``,
                ``value``.
            lora_alpha: the update is scaled by ``lora_alpha / rank``; default ``rank``.
        """
        self._lora_state = lora.enable(self, rank, target_layer_names, lora_alpha)
        lora.reset_functions(self)

    @property
    def lora_config(self):
        """``{"rank", "lora_alpha", "target_layer_names"}`` of ``enable_lora``, or None."""
        state = self._lora_state
        return None if state is None else {**state, "target_layer_names": list(
            state["target_layer_names"])}

    def save_lora_weights(self, filepath):
        """Writes the LoRA factors alone to ``filepath`` (a ``.lora.h5`` file; local,
        ``gs://``); ``load_lora_weights`` reads them onto the same preset."""
        return lora.save(self, filepath)

    def load_lora_weights(self, filepath):
        """Loads a file of ``save_lora_weights``, enabling LoRA as it says when it is not
        enabled yet; ValueError naming what differs for another model's or rank's file."""
        lora.load(self, filepath)
        lora.reset_functions(self)

    def merge_lora(self):
        """Folds each LoRA update into its kernel (``W + lora_alpha / rank * A @ B``) and
        removes the factors: the same outputs, plain projections, for serving. The encoder
        stays frozen."""
        lora.merge(self)
        self._lora_state = None
        lora.reset_functions(self)

    # ------------------------------------------------------------ config
    def quantize(self, mode=None, **kwargs):
        """Keras' ``quantize`` (``"int8"``: docs/export.md), without its warning for each layer
        that stays float by design (`quantization.quantizing`), with one heap scan
        at the end instead of one per layer."""
        with quantization.quantizing():
            super().quantize(mode, **kwargs)

    def get_config(self):
        return load_note.add(lora.record(self, quantization.record(self, {
            "config": self.bert_config.to_dict(), "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            **self.preset_config()})))

    @classmethod
    def from_config(cls, config):
        config = load_note.drop(config)
        preset_state = cls.pop_preset_config(config)
        quantized = config.pop(quantization.CONFIG_KEY, None)
        lora_state = config.pop(lora.CONFIG_KEY, None)
        if "dtype" in config and isinstance(config["dtype"], dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        model = cls(**config)
        model.set_preset_config(preset_state)
        # LoRA first: it is refused on a quantized encoder, so a model that has both had
        # LoRA before it was quantized.
        return quantization.quantize_again(lora.enable_again(model, lora_state), quantized)


def _bool_as_int(x, name):
    """A bool input_mask as int32; bool ids stay bool (and are refused as not integers)."""
    if name == "input_mask" and getattr(x, "dtype", None) in (bool, np.bool_, tf.bool):
        return tf.cast(x, tf.int32)
    return x
