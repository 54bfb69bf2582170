"""BertMaskedLM: the head at masked positions only, tied decoder, loss, and the task contract
(tests/task_harness.py)."""

import keras
import numpy as np

from keras_bert import BertMaskedLM, BertMaskedLMPreprocessor
from keras_bert.training import AdamW
from tests.task_harness import check_task
from tiny import VOCAB, tiny_encoder  # tests/models/tiny.py

TEXTS = ["the cat sat", "the dog ran", "paris is red", "london is blue"] * 4


def test_decoder_is_tied_to_the_word_embeddings():
    model = BertMaskedLM(tiny_encoder())
    table = model.encoder.word_embeddings  # the encoder's accessor for heads that tie to it
    assert table is model.encoder.token_embedding.word_embeddings
    assert tuple(table.shape) == (len(VOCAB), model.encoder.bert_config.hidden_size)
    assert model.mlm_head.embeddings is model.encoder.token_embedding
    assert model.mlm_head.decoder_table is table
    ids = {id(v) for v in model.trainable_variables}
    assert len(ids) == len(model.trainable_variables)  # the shared table counted once
    assert not hasattr(model.mlm_head, "decoder")


def test_logits_only_at_masked_positions_and_match_a_reference():
    model = BertMaskedLM(tiny_encoder())
    rng = np.random.default_rng(0)
    ids = rng.integers(5, len(VOCAB), size=(2, 10)).astype("int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
         "input_type_ids": np.zeros_like(ids), "masked_lm_positions": np.array([[1, 7], [3, 0]])}
    logits = model.predict(x, verbose=0)
    assert logits.shape == (2, 2, len(VOCAB))
    sequence = model.encoder({k: v for k, v in x.items() if k != "masked_lm_positions"})[
        "sequence_output"].numpy()
    head = model.mlm_head
    h = np.take_along_axis(sequence, x["masked_lm_positions"][..., None], axis=1)
    h = h @ head.dense.kernel.numpy() + head.dense.bias.numpy()
    h = 0.5 * h * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2)))  # exact gelu
    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    h = (h - mean) / np.sqrt(var + 1e-12) * head.layer_norm.gamma.numpy() + \
        head.layer_norm.beta.numpy()
    want = h @ model.encoder.word_embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, want, atol=1e-4)


def test_masked_lm_fits_raw_text_with_dynamic_masks():
    keras.utils.set_random_seed(0)
    preprocessor = BertMaskedLMPreprocessor(VOCAB, seq_length=8, max_predictions_per_seq=3,
                                            seed=1)
    model = BertMaskedLM(tiny_encoder(), preprocessor=preprocessor)
    model.compile(optimizer=AdamW(learning_rate=3e-3))
    history = model.fit(TEXTS * 4, epochs=5, batch_size=8, verbose=0)
    assert set(history.history) == {"loss", "accuracy"}
    assert history.history["loss"][-1] < history.history["loss"][0]
    x1, _, _ = preprocessor(TEXTS[:4])
    x2, _, _ = preprocessor(TEXTS[:4])
    assert not np.array_equal(x1["masked_lm_positions"], x2["masked_lm_positions"]) or \
        not np.array_equal(x1["input_word_ids"], x2["input_word_ids"])


def test_task_contract_and_the_tie_after_loading(tmp_path):
    """Raw text is masked at random, so outputs are compared on inputs masked once.
    fit=False: test_masked_lm_fits_raw_text_with_dynamic_masks fits on raw text."""
    check = check_task(BertMaskedLM, TEXTS[:4], tmp_path=tmp_path, raw_predict=False, fit=False,
                       output_shape=(4, 3, 92), seq_length=8, max_predictions_per_seq=3)
    for model in (check.model, check.keras_loaded, check.preset_loaded, check.bare):
        assert model.mlm_head.decoder_table is model.encoder.word_embeddings
