"""tools/export_saved_model.py run as a user runs it: exports from a .keras file, and its
errors (each one line on stderr, exit status 1, nothing written). The command lines of the
flag-error test, and those of the LiteRT test, run in one process each
(`tests.tool_runs.run_cases`: one start-up, each command line with its own exit status,
stdout and stderr, in order); the other tests run the tool in processes of their own."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests import tool_runs
from tests.models.tiny import POSITIVE, TEXT_DEPENDENT, VOCAB, tiny_encoder

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def _tool(*flags):
    return subprocess.run([sys.executable, str(REPO / "tools" / "export_saved_model.py"),
                           *flags], capture_output=True, text=True, timeout=300)


def _tool_cases(*argvs):
    """Each command line of ``argvs`` in one process: their results, in order."""
    _, results = tool_runs.run_cases("tools/export_saved_model.py", argvs, timeout=600)
    return results


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    path = tmp_path_factory.mktemp("models")
    # Logits that differ across POSITIVE's texts by far more than the tolerances below.
    model = keras_bert.BertClassifier(tiny_encoder(seed=0, **TEXT_DEPENDENT), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    model.save(path / "classifier.keras")
    tiny_encoder().save(path / "encoder.keras")
    return path, model


def test_serving_versions_and_encoder_from_a_keras_file(files, tmp_path):
    path, model = files
    base = tmp_path / "models" / "sentiment"
    (base / "1").mkdir(parents=True)  # an earlier version: --version=next writes 2
    (base / "1" / "saved_model.pb").write_bytes(b"")
    result = _tool(f"--model_file={path / 'classifier.keras'}", f"--export_dir={base}",
                   "--version=next", "--label_names=neg,pos")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    assert result.stdout == (
        f"Exported the serving SavedModel of BertClassifier to {base / '2'}; "
        "custom ops: FastWordpieceTokenizeWithOffsets, NormalizeUTF8\n")
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops, as a server must)

    serve = tf.saved_model.load(str(base / "2")).signatures["serving_default"]
    out = serve(text=tf.constant(POSITIVE))
    want = model.predict(POSITIVE, verbose=0)
    assert np.ptp(want, axis=0).min() > 100 * 1e-5  # an export that ignored its text fails
    np.testing.assert_allclose(out["logits"], want, atol=1e-5)
    assert set(out["labels"].numpy()) <= {b"neg", b"pos"}
    result = _tool(f"--model_file={path / 'classifier.keras'}", "--kind=encoder",
                   f"--export_dir={tmp_path / 'encoder'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.endswith(f"BertClassifier to {tmp_path / 'encoder'}; custom ops: "
                                  "none\n")
    assert (tmp_path / "encoder" / "assets" / "vocab.txt").is_file()


def _assert_flag_error(result, message):
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("FATAL Flags parsing error: "), result.stderr[-3000:]
    assert message in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def errors(files, tmp_path_factory):
    """The command lines that must fail, in one process: (their directory, results by name)."""
    path, _ = files
    tmp_path = tmp_path_factory.mktemp("errors")
    (tmp_path / "full" / "1").mkdir(parents=True)
    (tmp_path / "full" / "1" / "saved_model.pb").write_bytes(b"")
    cases = {
        "missing": [f"--model_file={tmp_path / 'none.keras'}",
                    f"--export_dir={tmp_path / 'm' / '1'}"],
        "full": [f"--model_file={path / 'classifier.keras'}",
                 f"--export_dir={tmp_path / 'full' / '1'}"],
        "unversioned": [f"--model_file={path / 'classifier.keras'}",
                        f"--export_dir={tmp_path / 'sentiment'}"],
        "wrong kind": [f"--model_file={path / 'encoder.keras'}", "--kind=serving",
                       f"--export_dir={tmp_path / 'wrong' / '1'}"],
    }
    for flags, what in PAIRS:
        cases[what] = ["--preset=tiny", "--kind=serving", "--task=classification",
                       "--num_classes=2", *flags, "--seq_length=4",
                       f"--export_dir={tmp_path / 'pairs' / '1'}"]
    return tmp_path, dict(zip(cases, _tool_cases(*cases.values())))


PAIRS = [(["--pairs"], "--pairs"),
         (["--task=multiple_choice", "--num_choices=2"], "--task=multiple_choice")]


def test_flag_errors(errors):
    tmp_path, results = errors
    _assert_flag_error(results["missing"],
                       f"flag --model_file={tmp_path / 'none.keras'}: no such file")
    _assert_flag_error(results["full"],
                       "already exists and is not empty; an export never overwrites one")
    _assert_flag_error(results["unversioned"],
                       "TF Serving loads a model from numbered version directories")
    for _, what in PAIRS:
        _assert_flag_error(results[what],
                           f"--seq_length=4 is too short for {what}, which packs text pairs: "
                           "[CLS] a [SEP] b [SEP] needs at least 5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


def test_a_model_of_the_wrong_kind(files, errors):
    path, _ = files
    result = errors[1]["wrong kind"]
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == (
        f"export_saved_model.py: --kind=serving exports a keras_bert task model; "
        f"{path / 'encoder.keras'} holds a BertEncoder.")
    assert not (errors[0] / "wrong").exists()


def test_litert_goes_beside_the_saved_model_in_its_version_directory(files, tmp_path):
    from keras_bert.export import litert_model

    path, model = files
    version = tmp_path / "sentiment" / "1"
    # One process, in order: the serving export, the LiteRT model beside it, then the errors
    # (never over an existing model.tflite; a preprocessor is not quantized; LiteRT takes no
    # tagger).
    serving, result, again, quantize, tagger = _tool_cases(
        [f"--model_file={path / 'classifier.keras'}", f"--export_dir={version}"],
        [f"--model_file={path / 'classifier.keras'}", "--kind=litert", f"--export_dir={version}"],
        [f"--model_file={path / 'classifier.keras'}", "--kind=litert", f"--export_dir={version}"],
        [f"--model_file={path / 'classifier.keras'}", "--kind=preprocessor", "--quantize=int8",
         f"--export_dir={tmp_path / 'q'}"],
        ["--preset=tiny", "--kind=litert", "--task=tagging", "--num_classes=3",
         f"--export_dir={tmp_path / 't' / '1'}"])
    assert serving.returncode == 0, serving.stderr[-3000:]
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(
        f"Exported the LiteRT model (float32) of BertClassifier to {version / 'model.tflite'} (")
    assert result.stdout.endswith("custom ops: FastBertNormalize, "
                                  "FastWordpieceTokenizeWithOffsets (tensorflow-text's LiteRT "
                                  "kernels)\n")
    assert sorted(p.name for p in version.iterdir()) == [
        "assets", "fingerprint.pb", "model.tflite", "saved_model.pb", "variables"]
    out = litert_model.load(str(version / "model.tflite"))(text=POSITIVE)
    want = model.predict(POSITIVE, verbose=0)
    assert np.ptp(want, axis=0).min() > 100 * 1e-4  # a LiteRT model that ignored its text fails
    np.testing.assert_allclose(out["logits"], want, atol=1e-4)
    _assert_flag_error(again, f"{version / 'model.tflite'} exists; an export never overwrites one")
    _assert_flag_error(quantize, "--quantize applies to --kind=serving, encoder and litert "
                       "(a preprocessor has no weights)")
    _assert_flag_error(tagger, "--kind=litert exports a classifier, a multiple-choice model or "
                       "an encoder, not --task=tagging")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sentiment"]


def test_int8_serving_and_encoder_exports(files, tmp_path):
    import keras

    path, _ = files
    int8 = keras.saving.load_model(path / "classifier.keras", compile=False)
    int8.quantize("int8")
    int8.save(tmp_path / "int8.keras")
    base = tmp_path / "sentiment"
    # One process, in order: the int8 serving export, the int8 encoder, a model that is int8
    # already.
    serving, encoder, again = _tool_cases(
        [f"--model_file={path / 'classifier.keras'}", "--quantize=int8",
         f"--export_dir={base}", "--version=next"],
        [f"--model_file={path / 'classifier.keras'}", "--kind=encoder", "--quantize=int8",
         f"--export_dir={tmp_path / 'encoder'}"],
        [f"--model_file={tmp_path / 'int8.keras'}", "--quantize=int8",
         f"--export_dir={tmp_path / 'again' / '1'}"])
    assert serving.returncode == 0, serving.stderr[-3000:]
    assert serving.stdout == (
        f"Exported the int8 serving SavedModel of BertClassifier to {base / '1'}; "
        "custom ops: FastWordpieceTokenizeWithOffsets, NormalizeUTF8\n")
    # oneDNN's int8 kernel, which TF Serving's x86 builds carry (a core op).
    assert b"_QuantizedMatMul" in (base / "1" / "saved_model.pb").read_bytes()
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops, as a server must)

    out = tf.saved_model.load(str(base / "1")).signatures["serving_default"](
        text=tf.constant(POSITIVE))["logits"].numpy()
    want = int8.predict(POSITIVE, verbose=0)  # the same model quantized in Keras
    np.testing.assert_allclose(out, want, atol=1e-4)
    assert not np.allclose(out, files[1].predict(POSITIVE, verbose=0), atol=1e-5)  # not float32
    assert encoder.returncode == 0, encoder.stderr[-3000:]
    assert encoder.stdout.startswith("Exported the int8 encoder SavedModel of BertClassifier to ")
    assert b"_QuantizedMatMul" in (tmp_path / "encoder" / "saved_model.pb").read_bytes()
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr.strip().splitlines()[-1] == (
        f"export_saved_model.py: --quantize=int8: {tmp_path / 'int8.keras'} holds a quantized "
        "model already; export it without --quantize.")
    assert not (tmp_path / "again").exists()
