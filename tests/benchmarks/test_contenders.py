"""benchmarks/common/contenders.py: the serving targets' ratios from a run's rows."""

from benchmarks.common import contenders


def _row(name, texts_per_s, batch1_ms, accuracy, ours=True, precision="fp32"):
    return {"contender": name, "ours": ours, "precision": precision,
            "texts_per_s": texts_per_s, "batch1_median_ms": batch1_ms, "accuracy": accuracy}


def test_accuracy_loss_against_whichever_float32_loader_ran():
    int8 = _row("keras_bert_int8_session", 800.0, 3.0, 0.8600, precision="int8")
    plain = _row("keras_bert_fp32_plain", 350.0, 6.0, 0.8650)
    ort = _row("ort_int8", 700.0, 1.0, 0.8500, ours=False, precision="int8")
    t = contenders.targets([int8, plain, ort])
    assert t["fastest_saved_model"] == "keras_bert_int8_session"
    assert t["fastest_saved_model_accuracy_loss_points"] == 0.5
    assert t["fastest_saved_model_vs_ort_int8"] == round(800 / 700, 3)
    assert t["quickest_saved_model_batch1_vs_fp32_plain"] == 0.5
    # keras_bert_fp32 (the SavedModel in Keras) is the reference when it ran.
    saved = _row("keras_bert_fp32", 300.0, 7.0, 0.8700)
    t = contenders.targets([int8, plain, ort, saved])
    assert t["fastest_saved_model_accuracy_loss_points"] == 1.0
    # No float32 row: the loss is not measured, and the line says so.
    t = contenders.targets([int8, ort])
    assert t["fastest_saved_model_accuracy_loss_points"] is None
    assert any("accuracy loss" in line and "not measured" in line
               for line in contenders.describe_targets(t))


def test_batch1_against_the_float32_saved_model_in_the_same_loader():
    int8 = _row("keras_bert_int8_session", 800.0, 3.0, 0.86, precision="int8")
    plain = _row("keras_bert_fp32_plain", 350.0, 6.0, 0.865)
    ort = _row("ort_int8", 700.0, 1.0, 0.85, ours=False, precision="int8")
    assert contenders.targets([int8, plain, ort])[
        "quickest_saved_model_batch1_vs_fp32_saved_model"] is None  # its float32 did not run
    session = _row("keras_bert_fp32_session", 360.0, 7.5, 0.865)
    t = contenders.targets([int8, plain, ort, session])
    assert t["quickest_saved_model_batch1_vs_fp32_saved_model"] == 0.4
    assert t["quickest_saved_model_batch1_vs_fp32_plain"] == 0.5
    assert any("float32 SavedModel's in the same loader: 0.4 (met" in line
               for line in contenders.describe_targets(t))
