"""The BERT optimizers: schedule values, which variables decay, LAMB's update, saving."""

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.training import AdamW, Lamb, LinearWarmupDecay, create_optimizer


def _original_bert_lr(step, peak, total, warmup, end=0.0):
    """google-research/bert optimization.py: polynomial_decay(power=1) from step 0, and the
    linear warm-up replacing it while global_step < num_warmup_steps."""
    decayed = (peak - end) * (1 - min(step, total) / total) + end
    if step < warmup:
        return peak * step / warmup
    return decayed


@pytest.mark.parametrize("warmup", [0, 1, 30])
def test_schedule_matches_the_original_formula(warmup):
    schedule = LinearWarmupDecay(3e-5, num_train_steps=200, num_warmup_steps=warmup)
    for step in [0, 1, 2, 29, 30, 31, 100, 199, 200, 201, 10_000]:
        want = _original_bert_lr(step, 3e-5, 200, warmup)
        assert float(schedule(step)) == pytest.approx(want, rel=1e-6, abs=1e-12), step


def test_schedule_end_learning_rate():
    schedule = LinearWarmupDecay(1e-3, num_train_steps=10, num_warmup_steps=0,
                                 end_learning_rate=1e-4)
    assert float(schedule(0)) == pytest.approx(1e-3)
    assert float(schedule(5)) == pytest.approx(5.5e-4)
    assert float(schedule(10)) == pytest.approx(1e-4)
    assert float(schedule(99)) == pytest.approx(1e-4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_train_steps=0), "num_train_steps must be >= 1"),
    (dict(num_train_steps="100"), "num_train_steps must be an int"),
    (dict(num_train_steps=100.5), "num_train_steps must be an int"),
    (dict(num_train_steps=10, num_warmup_steps=11), "num_warmup_steps must be <= 10"),
    (dict(num_train_steps=10, num_warmup_steps=-1), "num_warmup_steps must be >= 0"),
    (dict(num_train_steps=10, peak_learning_rate=0.0), "peak_learning_rate must be > 0"),
    (dict(num_train_steps=10, peak_learning_rate=float("nan")), "must be a finite number"),
])
def test_schedule_bad_values(kwargs, message):
    kwargs.setdefault("peak_learning_rate", 1e-4)
    with pytest.raises(ValueError, match=message):
        LinearWarmupDecay(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(optimizer="sgd"), "optimizer must be one of"),
    (dict(num_warmup_steps=10, warmup_ratio=0.1), "not both"),
    (dict(warmup_ratio=1.5), "warmup_ratio must be <= 1"),
    (dict(num_train_steps=True), "num_train_steps must be an int"),
])
def test_create_optimizer_bad_values(kwargs, message):
    kwargs.setdefault("num_train_steps", 100)
    with pytest.raises(ValueError, match=message):
        create_optimizer(1e-4, **kwargs)


def test_create_optimizer_recipe():
    optimizer = create_optimizer(2e-5, num_train_steps=1000, warmup_ratio=0.1)
    assert isinstance(optimizer, AdamW)
    assert (optimizer.weight_decay, optimizer.epsilon, optimizer.global_clipnorm) == (
        0.01, 1e-6, 1.0)
    schedule = optimizer.learning_rate_schedule
    assert (schedule.num_train_steps, schedule.num_warmup_steps) == (1000, 100)
    assert isinstance(create_optimizer(1e-3, 10, optimizer="lamb"), Lamb)


def _tiny_model():
    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=16)
    encoder = BertEncoder(config)
    head = keras.layers.Dense(2, name="classifier")
    head.build((None, 8))
    return encoder.trainable_variables + head.trainable_variables


@pytest.mark.parametrize("cls", [AdamW, Lamb])
def test_weight_decay_skips_layer_norm_and_biases(cls):
    """With zero gradients Adam's step is 0, so only weight decay moves a variable."""
    variables = _tiny_model()
    before = {v.path: v.numpy().copy() for v in variables}
    optimizer = cls(learning_rate=0.1, weight_decay=0.5)
    optimizer.apply_gradients([(np.zeros(v.shape, "float32"), v) for v in variables])
    decayed = sorted(v.path for v in variables if not np.array_equal(v.numpy(), before[v.path]))
    kept = sorted(v.path for v in variables if v.path not in decayed)
    assert kept and decayed
    for path in kept:
        assert path.endswith(("bias", "gamma", "beta")), path
    for path in decayed:
        assert path.endswith(("kernel", "embeddings")), path
    assert "embeddings/word_embeddings" in decayed
    assert "classifier/kernel" in decayed
    assert "classifier/bias" in kept


def test_adamw_step_matches_numpy():
    w0 = np.array([[0.5, -1.0], [2.0, 0.25]], "float32")
    g = np.array([[0.1, -0.2], [0.3, 0.0]], "float32")
    w = keras.Variable(w0, name="kernel")
    optimizer = AdamW(learning_rate=0.01, global_clipnorm=None)
    optimizer.apply_gradients([(g, w)])
    # decoupled decay with the pre-update weights, then Adam's bias-corrected step
    m, v = 0.1 * g, 0.001 * g * g
    m_hat, v_hat = m / (1 - 0.9), v / (1 - 0.999)
    want = w0 * (1 - 0.01 * 0.01) - 0.01 * m_hat / (np.sqrt(v_hat) + 1e-6)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-7)


def test_lamb_two_steps_match_numpy():
    w0 = np.array([[0.5, -1.0], [2.0, 0.25]], "float32")
    b0 = np.array([0.3, -0.1], "float32")
    grads = [(np.array([[0.1, -0.2], [0.3, 0.0]], "float32"), np.array([0.5, 0.5], "float32")),
             (np.array([[-0.3, 0.1], [0.2, 0.4]], "float32"), np.array([-1.0, 0.2], "float32"))]
    w, b = keras.Variable(w0, name="kernel"), keras.Variable(b0, name="bias")
    optimizer = Lamb(learning_rate=0.05, weight_decay=0.1, global_clipnorm=None)
    ref = {"w": [w0.astype("float64"), 0.0, 0.0], "b": [b0.astype("float64"), 0.0, 0.0]}
    for t, (gw, gb) in enumerate(grads, start=1):
        optimizer.apply_gradients([(gw, w), (gb, b)])
        for key, g, decay in (("w", gw, True), ("b", gb, False)):
            x, m, v = ref[key]
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            update = (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-6)
            if decay:
                update = update + 0.1 * x
                update = update * np.linalg.norm(x) / np.linalg.norm(update)
            ref[key] = [x - 0.05 * update, m, v]
    np.testing.assert_allclose(w.numpy(), ref["w"][0], rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), ref["b"][0], rtol=1e-5)


@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_compiled_model_round_trips_optimizer(tmp_path, kind):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer=create_optimizer(1e-3, 100, num_warmup_steps=10, optimizer=kind),
                  loss="mse")
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    model.fit(x, y, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    optimizer = loaded.optimizer
    assert type(optimizer).__name__ == {"adamw": "AdamW", "lamb": "Lamb"}[kind]
    assert optimizer.no_decay == model.optimizer.no_decay
    schedule = optimizer.learning_rate_schedule
    assert isinstance(schedule, LinearWarmupDecay)
    assert (schedule.num_train_steps, schedule.num_warmup_steps) == (100, 10)
    assert int(optimizer.iterations) == 1


@pytest.mark.parametrize("learning_rate", [1e-3, LinearWarmupDecay(1e-3, num_train_steps=10)])
def test_a_model_saved_before_its_optimizer_was_built_loads_silently(tmp_path, learning_rate):
    """A compiled, untrained model saves the optimizer's step (and a constant learning rate)
    only; the loaded model's optimizer is built, and Keras warned that the counts differ."""
    import warnings

    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.compile(AdamW(learning_rate=learning_rate), "mse")
    model.save(tmp_path / "untrained.keras")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(tmp_path / "untrained.keras")
        loaded.optimizer.build(loaded.trainable_variables)
        loaded.optimizer.load_own_variables(
            {str(i): v.numpy() for i, v in enumerate(model.optimizer.variables)})
    assert [str(w.message) for w in caught if w.category is not DeprecationWarning] == []
    assert int(loaded.optimizer.iterations) == 0 and len(loaded.optimizer.variables) > 2
    with pytest.warns(UserWarning, match="Skipping variable loading"):  # other counts still warn
        loaded.optimizer.load_own_variables({"0": np.int64(0), "1": np.zeros(3), "2": 0.0})
