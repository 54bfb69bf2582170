"""LoRA on BertEncoder and the task models (keras_bert/models/lora.py): what is frozen and what
trains, the LoRA-only file onto a fresh from_preset model, the .keras round trip, merging,
the merged export, and the errors."""

import collections
import h5py
import io
import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import (BertClassifier, BertEncoder, BertMaskedLM, BertMultipleChoice,
                        BertSpanLabeler, BertTokenClassifier, storage)
from keras_bert.models import BertPretrainer, lora
from keras_bert.models.task import DEFAULT_LEARNING_RATE, DEFAULT_LORA_LEARNING_RATE
from tests.examples.tiny_preset import write_tiny_preset
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder

TEXTS = POSITIVE + NEGATIVE
LABELS = [1] * len(POSITIVE) + [0] * len(NEGATIVE)
HIDDEN, INTERMEDIATE, LAYERS = 16, 32, 2  # tiny_encoder's sizes


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    return write_tiny_preset(tmp_path_factory.mktemp("lora_preset"))


def _classifier(preset, **kwargs):
    return BertClassifier.from_preset(preset, num_classes=2, seq_length=16, **kwargs)


def _trained(preset, rank=4, targets=None):
    """A classifier with LoRA whose factors and head hold what training would leave (random
    values; fitting is tested once, below, as it costs seconds of tracing)."""
    keras.utils.set_random_seed(0)
    model = _classifier(preset)
    model.enable_lora(rank, targets)
    _randomize(model)
    return model


def _randomize(model, seed=2):
    rng = np.random.default_rng(seed)
    for v in model.trainable_weights:
        v.assign(rng.normal(size=v.shape).astype("float32") * 0.1)


def _params(variables):
    return sum(int(np.prod(v.shape)) for v in variables)


# ---------------------------------------------------------------- frozen and trainable
def test_only_the_factors_and_the_head_are_trainable(preset):
    model = _classifier(preset)
    full = _params(model.trainable_weights)
    model.enable_lora(4)
    trainable = {v.path for v in model.trainable_weights}
    factors = {f"transformer_block_{i}/{t}/lora_kernel_{ab}" for i in range(LAYERS)
               for t in ("query", "value") for ab in "ab"}
    assert trainable == factors | {"logits/kernel", "logits/bias"}
    # 2 blocks x 2 projections x (16x4 + 4x16) factors, and the 16x2 + 2 head.
    assert _params(model.trainable_weights) == LAYERS * 2 * (HIDDEN * 4 + 4 * HIDDEN) + 34
    assert _params(model.weights) == full + LAYERS * 2 * 2 * HIDDEN * 4  # nothing lost
    encoder = model.encoder
    assert not encoder.word_embeddings.trainable
    frozen = {v.path for v in model.weights if not v.trainable}
    assert {"embeddings/word_embeddings", "embeddings/layer_norm/gamma", "pooler/dense/kernel",
            "transformer_block_0/query/kernel", "transformer_block_0/query/bias",
            "transformer_block_1/output_layer_norm/beta"} <= frozen
    assert model.lora_config == encoder.lora_config == {
        "rank": 4, "lora_alpha": 4, "target_layer_names": ["query", "value"]}


@pytest.mark.parametrize("targets, expected", [
    (["query", "key", "value", "attention_output"],
     ["query", "key", "value", "attention_output"]),
    (["intermediate", "output"], ["intermediate", "output"]),
    (["query_dense", "value_dense"], ["query", "value"]),  # keras-hub's names
    ("key", ["key"]),
])
def test_targets_are_chosen_by_name(targets, expected):
    encoder = tiny_encoder()
    encoder.enable_lora(2, target_layer_names=targets)
    assert encoder.lora_config["target_layer_names"] == expected
    layers = {v.path.rsplit("/", 2)[1] for v in encoder.trainable_weights}
    assert layers == set(expected)
    sizes = {"intermediate": (HIDDEN, INTERMEDIATE), "output": (INTERMEDIATE, HIDDEN)}
    for v in encoder.trainable_weights:
        name = v.path.rsplit("/", 2)[1]
        n_in, n_out = sizes.get(name, (HIDDEN, HIDDEN))
        assert tuple(v.shape) == ((n_in, 2) if v.name == "lora_kernel_a" else (2, n_out))


@pytest.mark.parametrize("model_fn", [
    lambda e: BertTokenClassifier(e, num_classes=3),
    lambda e: BertSpanLabeler(e),
    lambda e: BertMultipleChoice(e, num_choices=2),
    lambda e: BertMaskedLM(e),
    lambda e: BertPretrainer(e),
], ids=["token_classifier", "span_labeler", "multiple_choice", "masked_lm", "pretrainer"])
def test_every_task_model_trains_factors_and_head_only(model_fn, tmp_path):
    keras.utils.set_random_seed(1)
    model = model_fn(tiny_encoder())
    model.enable_lora(2)
    encoder_weights = {id(v) for v in model.encoder.weights}
    head = {v.path for v in model.weights if id(v) not in encoder_weights}
    trainable = {v.path for v in model.trainable_weights}
    assert head and head <= trainable
    assert {p for p in trainable if p not in head} == {
        f"transformer_block_{i}/{t}/lora_kernel_{ab}" for i in range(LAYERS)
        for t in ("query", "value") for ab in "ab"}
    # Its LoRA file holds factors and head; a fresh model with the same base weights and
    # the file computes the same.
    _randomize(model)
    path = str(tmp_path / "task.lora.h5")
    model.save_lora_weights(path)
    keras.utils.set_random_seed(1)
    fresh = model_fn(tiny_encoder())
    fresh.load_lora_weights(path)
    inputs = _inputs(model)
    for got, want in zip(tf.nest.flatten(fresh(inputs)), tf.nest.flatten(model(inputs))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)


def _inputs(model):
    rng = np.random.default_rng(0)
    out = {}
    for name, spec in model.input.items():
        shape = tuple(2 if d is None else d for d in spec.shape)
        if name == "masked_lm_positions":
            out[name] = rng.integers(1, 4, size=(2, 2)).astype("int32")
        elif name == "input_word_ids":
            out[name] = rng.integers(5, len(VOCAB), size=shape[:-1] + (6,)).astype("int32")
        elif name == "input_mask":
            out[name] = np.ones(shape[:-1] + (6,), "int32")
        else:
            out[name] = np.zeros(shape[:-1] + (6,), "int32")
    return out


def test_the_factors_and_head_train_and_nothing_else_does(preset):
    keras.utils.set_random_seed(0)
    model = _classifier(preset)
    assert model.optimizer.learning_rate_schedule.peak_learning_rate == DEFAULT_LEARNING_RATE
    model.fit(TEXTS[:8], LABELS[:8], batch_size=8, verbose=0)  # the optimizer is built
    model.enable_lora(4)
    # compile()'s default optimizer again, fresh (Keras' refuses new variables), at the LoRA
    # learning rate.
    assert model.default_learning_rate() == DEFAULT_LORA_LEARNING_RATE
    assert model.optimizer.learning_rate_schedule.peak_learning_rate == DEFAULT_LORA_LEARNING_RATE
    before = {v.path: v.numpy().copy() for v in model.weights}
    model.fit(TEXTS, LABELS, epochs=1, batch_size=8, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 2
    changed = {v.path for v in model.weights if not np.array_equal(v.numpy(), before[v.path])}
    assert changed == {v.path for v in model.trainable_weights}
    assert len(changed) == LAYERS * 2 * 2 + 2


def test_a_user_optimizer_is_kept_and_renewed_once_it_has_trained(preset):
    model = BertClassifier(tiny_encoder(), 2)  # packed inputs: the cheapest training step
    x = _inputs(model)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.train_on_batch(x, np.array([0, 1]))
    model.enable_lora(2)  # other trainable weights: the optimizer is renewed, same settings
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert int(model.optimizer.iterations.numpy()) == 0
    assert model.optimizer.learning_rate.numpy() == pytest.approx(1e-3)
    model.train_on_batch(x, np.array([0, 1]))
    assert int(model.optimizer.iterations.numpy()) == 1


# ---------------------------------------------------------------- the LoRA-only file
def test_lora_file_onto_a_fresh_from_preset_model_gives_the_same_outputs(preset):
    model = _trained(preset)
    expected = model.predict(TEXTS, verbose=0)
    path = "ram://lora_test/run/sentiment.lora.h5"  # through keras_bert.storage
    assert model.save_lora_weights(path) == path
    with h5py.File(io.BytesIO(storage.read_bytes(path)), "r") as f:
        names = []
        f.visititems(lambda name, item: names.append(name)
                     if isinstance(item, h5py.Dataset) else None)
    assert sorted(names) == sorted(
        [f"lora/transformer_block_{i}/{t}/lora_kernel_{ab}" for i in range(LAYERS)
         for t in ("query", "value") for ab in "ab"] + ["head/logits/kernel", "head/logits/bias"])
    # Small: the factors and the head, not the model.
    stored = _params(model.trainable_weights) * 4
    assert storage.size(path) < stored + 64 * 1024 < _params(model.weights) * 4 + 64 * 1024
    fresh = _classifier(preset)  # LoRA enabled by the file
    fresh.load_lora_weights(path)
    assert fresh.lora_config == model.lora_config
    np.testing.assert_allclose(fresh.predict(TEXTS, verbose=0), expected, atol=1e-5)
    enabled = _classifier(preset)
    enabled.enable_lora(4)
    enabled.load_lora_weights(path)
    np.testing.assert_allclose(enabled.predict(TEXTS, verbose=0), expected, atol=1e-5)
    # Without the file, the fresh model is the base model with a new head.
    assert np.abs(_classifier(preset).predict(TEXTS, verbose=0) - expected).max() > 1e-3


def test_encoder_lora_file_holds_the_factors_alone(preset, tmp_path):
    encoder = BertEncoder.from_preset(preset)
    encoder.enable_lora(2, ["key", "output"])
    _randomize(encoder)
    path = str(tmp_path / "encoder.lora.h5")
    encoder.save_lora_weights(path)
    fresh = BertEncoder.from_preset(preset)
    fresh.load_lora_weights(path)
    inputs = _inputs(BertClassifier(tiny_encoder(), 2))
    np.testing.assert_allclose(fresh(inputs)["sequence_output"].numpy(),
                               encoder(inputs)["sequence_output"].numpy(), atol=1e-5)
    with h5py.File(path, "r") as f:
        assert list(f) == ["lora"]
    # On a task model, an encoder's file loads into its encoder; the head stays.
    task = BertClassifier.from_preset(preset, num_classes=2, seq_length=16)
    head = [w.copy() for w in task.logits.get_weights()]
    task.load_lora_weights(path)
    assert task.optimizer.learning_rate_schedule.peak_learning_rate == 5e-4
    np.testing.assert_allclose(task.encoder(inputs)["sequence_output"].numpy(),
                               encoder(inputs)["sequence_output"].numpy(), atol=1e-5)
    assert all(np.array_equal(a, b) for a, b in zip(head, task.logits.get_weights()))


@pytest.mark.parametrize("make, message", [
    (lambda p: _enabled(_classifier(p), 2), r"rank 4 in the file, 2 here"),
    (lambda p: _enabled(_classifier(p), 4, ["query", "key"]),
     r"target_layer_names \['query', 'value'\] in the file, \['query', 'key'\] here"),
    (lambda p: BertClassifier.from_preset(p, num_classes=3, seq_length=16),
     r"head weights do not match: shapes differ: logits/bias \(2,\) in the file, \(3,\) "
     r"here; logits/kernel \(16, 2\) in the file, \(16, 3\) here"),
    (lambda p: BertEncoder.from_preset(p), r"the LoRA weights of a BertClassifier, this model "
                                           r"is a BertEncoder"),
    (lambda p: BertClassifier(tiny_encoder(hidden_size=8), 2),
     r"another architecture: hidden_size 16 in the file, 8 here"),
])
def test_a_file_of_another_model_is_refused_naming_what_differs(preset, tmp_path, make,
                                                                 message):
    path = str(tmp_path / "a.lora.h5")
    model = _classifier(preset)
    model.enable_lora(4)
    model.save_lora_weights(path)
    other = make(preset)
    before = [w.copy() for w in other.get_weights()]
    with pytest.raises(ValueError, match=message):
        other.load_lora_weights(path)
    assert all(np.array_equal(a, b) for a, b in zip(before, other.get_weights()))


def _enabled(model, rank, targets=None):
    model.enable_lora(rank, targets)
    return model


def test_lora_file_errors(preset, tmp_path):
    model = _classifier(preset)
    with pytest.raises(ValueError, match="LoRA is not enabled.*enable_lora"):
        model.save_lora_weights(str(tmp_path / "x.lora.h5"))
    model.enable_lora(2)
    with pytest.raises(ValueError, match=r"must end in '.lora.h5'"):
        model.save_lora_weights(str(tmp_path / "x.h5"))
    model.save_weights(str(tmp_path / "whole.weights.h5"))
    with pytest.raises(ValueError, match="not a keras_bert LoRA weights file"):
        model.load_lora_weights(str(tmp_path / "whole.weights.h5"))
    (tmp_path / "text.lora.h5").write_text("hello")
    with pytest.raises(ValueError, match="not a LoRA weights file"):
        model.load_lora_weights(str(tmp_path / "text.lora.h5"))
    with pytest.raises(FileNotFoundError):
        model.load_lora_weights(str(tmp_path / "missing.lora.h5"))


# ---------------------------------------------------------------- arguments
@pytest.mark.parametrize("rank", [0, -1, 2.5, True, "8", None])
def test_bad_rank(rank):
    with pytest.raises(ValueError, match="rank must be a positive int"):
        tiny_encoder().enable_lora(rank)


@pytest.mark.parametrize("targets, message", [
    (["querry"], r"'querry' is not a projection.*valid names: query, key, value, "
                 r"attention_output, intermediate, output"),
    ([], "non-empty list"),
    ([3], "holds 3, not a layer name"),
    (["query", "query_dense"], "names 'query' twice"),
    (["pooler"], "'pooler' is not a projection"),
])
def test_bad_targets(targets, message):
    encoder = tiny_encoder()
    with pytest.raises(ValueError, match=message):
        encoder.enable_lora(2, targets)
    assert encoder.lora_config is None and encoder.trainable_weights  # nothing changed


def test_bad_alpha_twice_and_quantized():
    with pytest.raises(ValueError, match="lora_alpha must be a positive number"):
        tiny_encoder().enable_lora(2, lora_alpha=0)
    encoder = tiny_encoder()
    encoder.enable_lora(2)
    with pytest.raises(ValueError, match=r"already enabled \(rank 2, lora_alpha 2, on query, "
                                         r"value\); merge_lora\(\) first"):
        encoder.enable_lora(4)
    quantized = tiny_encoder()
    quantized.transformer_blocks[1].key.quantize("int8")
    with pytest.raises(ValueError, match=r"quantized encoder is not supported \(1 quantized "
                                         r"layers, e.g. transformer_block_1/key\)"):
        quantized.enable_lora(2)
    with pytest.raises(ValueError, match="LoRA is not enabled, there is nothing to merge"):
        tiny_encoder().merge_lora()


# ---------------------------------------------------------------- .keras, merging, export
def test_keras_file_round_trip_keeps_the_lora_model(preset, tmp_path):
    model = _trained(preset, rank=2, targets=["value", "intermediate"])
    expected = model.predict(TEXTS, verbose=0)
    path = str(tmp_path / "lora.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.lora_config == model.lora_config
    assert ({v.path for v in loaded.trainable_weights}
            == {v.path for v in model.trainable_weights})
    for a, b in zip(loaded.weights, model.weights):  # factors and base kernels as they were
        assert a.path == b.path
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), expected, atol=1e-6)


def test_lora_then_int8_round_trips(tmp_path):
    # LoRA is refused on a quantized encoder, but Keras quantizes a LoRA one: a .keras file of
    # such a model rebuilds LoRA first, then quantizes.
    encoder = tiny_encoder()
    encoder.enable_lora(2)
    _randomize(encoder)
    encoder.transformer_blocks[0].value.quantize("int8")
    inputs = _inputs(BertClassifier(tiny_encoder(), 2))
    path = str(tmp_path / "lora_int8.keras")
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.transformer_blocks[0].value.quantization_mode == "int8"
    assert loaded.lora_config == encoder.lora_config
    np.testing.assert_allclose(loaded(inputs)["pooled_output"].numpy(),
                               encoder(inputs)["pooled_output"].numpy(), atol=1e-5)


def test_merge_gives_the_same_outputs_from_plain_kernels(preset, tmp_path):
    model = _trained(preset)
    expected = model.predict(TEXTS, verbose=0)
    canonical = model.encoder.get_canonical_weights()  # with LoRA: the merged kernels
    preset_dir = str(tmp_path / "saved_preset")
    model.save_to_preset(preset_dir)
    model.merge_lora()
    assert model.lora_config is None
    assert not any("lora" in v.path for v in model.weights)
    np.testing.assert_allclose(model.predict(TEXTS, verbose=0), expected, atol=1e-5)
    for name, value in model.encoder.get_canonical_weights().items():
        np.testing.assert_allclose(value, canonical[name], atol=1e-6)
    reloaded = BertClassifier.from_preset(preset_dir)  # save_to_preset wrote merged kernels
    np.testing.assert_allclose(reloaded.predict(TEXTS, verbose=0), expected, atol=1e-5)
    assert {v.path for v in model.trainable_weights} == {"logits/kernel", "logits/bias"}
    model.enable_lora(2)  # again, on the merged kernels
    np.testing.assert_allclose(model.predict(TEXTS, verbose=0), expected, atol=1e-5)


def test_for_export_is_the_model_itself_without_lora_and_a_merged_copy_with_it(preset):
    plain = _classifier(preset)
    assert lora.for_export(plain) is plain
    model = _trained(preset)
    inputs = _inputs(model)
    copy = lora.for_export(model)
    assert copy is not model and copy.preprocessor is model.preprocessor
    assert copy.lora_config is None and model.lora_config is not None  # the model keeps them
    assert not any("lora" in v.path for v in copy.weights)
    assert len(copy.trainable_weights) == len(plain.trainable_weights)  # all trainable again
    np.testing.assert_allclose(copy(inputs).numpy(), model(inputs).numpy(), atol=1e-5)


def _op_types(loaded):
    """How many ops of each type the serving signature's graph (and its functions) holds."""
    graph = loaded.signatures["serving_default"].graph.as_graph_def()
    return collections.Counter([node.op for node in graph.node] + [
        node.op for function in graph.library.function for node in function.node_def])


@pytest.mark.parametrize("through", ["model.export", "export_model"])
def test_export_serves_the_merged_model(preset, tmp_path, through):
    import tensorflow_text  # noqa: F401  (the tokenizer's ops, for loading)
    from keras_bert.export import export_model

    model = _trained(preset)
    expected = model.predict(TEXTS, verbose=0)
    path = str(tmp_path / "sentiment" / "1")
    path = model.export(path) if through == "model.export" else export_model(model, path)
    assert model.lora_config is not None  # the model keeps its factors
    loaded = tf.saved_model.load(path)
    assert not any("lora" in v.name for v in loaded.variables)
    # The factors are merged into the kernels: the serving graph runs the ops of the same
    # model exported without LoRA, op for op (unmerged, each projection would add two
    # matmuls and an add).
    plain = tf.saved_model.load(_classifier(preset).export(str(tmp_path / "plain" / "1")))
    assert _op_types(loaded) == _op_types(plain)
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(served["logits"].numpy(), expected, atol=1e-5)


def test_encoder_export_is_merged_and_fine_tunable(preset, tmp_path):
    from keras_bert.export import export_encoder

    encoder = BertEncoder.from_preset(preset)
    encoder.enable_lora(2)
    _randomize(encoder)
    inputs = _inputs(BertClassifier(tiny_encoder(), 2))
    expected = encoder(inputs)["pooled_output"].numpy()
    loaded = tf.saved_model.load(export_encoder(encoder, str(tmp_path / "hub")))
    assert len(loaded.trainable_variables) == len(tiny_encoder().trainable_weights)
    got = loaded({k: tf.constant(v) for k, v in inputs.items()}, training=False)
    np.testing.assert_allclose(got["pooled_output"].numpy(), expected, atol=1e-5)
    assert encoder.lora_config is not None


def test_mixed_precision_keeps_float32_factors():
    model = BertClassifier(BertEncoder(tiny_encoder().bert_config, dtype="mixed_bfloat16"), 2)
    model.enable_lora(2)
    assert {v.dtype for v in model.encoder.trainable_weights} == {"float32"}
    _randomize(model)
    outputs = model(_inputs(model))
    assert outputs.dtype == "float32" and np.isfinite(outputs.numpy()).all()
