import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent


def _import_with(env_backend):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_BACKEND", None)
    if env_backend is not None:
        env["KERAS_BACKEND"] = env_backend
    return subprocess.run(
        [sys.executable, "-c", "import keras_bert, keras; print(keras.config.backend())"],
        env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def unset():
    """`import keras_bert, keras` with KERAS_BACKEND unset, in a fresh process (both tests
    below read the same run)."""
    return _import_with(None)


def test_selects_tensorflow_when_unset(unset):
    result = unset
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "tensorflow"


def test_refuses_another_backend():
    result = _import_with("jax")
    assert result.returncode != 0
    assert "KERAS_BACKEND='jax'" in result.stderr
    assert "TensorFlow backend" in result.stderr


def test_import_keeps_stderr_readable(unset):
    """TensorFlow's C++ start-up notices are held back; the package prints nothing itself."""
    result = unset
    assert result.returncode == 0, result.stderr
    noise = [line for line in result.stderr.splitlines() if "I0000" in line or "absl::" in line]
    assert noise == [], result.stderr


def test_first_import_on_a_machine_prints_nothing_under_absl(tmp_path):
    """Keras imports matplotlib, which builds its font cache on a machine's first import and
    logs "generated new fontManager" at INFO: a tool run by absl.app (root logger at INFO)
    printed it. An empty MPLCONFIGDIR is a machine that never imported matplotlib."""
    program = ("from absl import app\n"
               "def main(_):\n"
               "    import keras_bert\n"
               "    print('ok')\n"
               "app.run(main)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3",
               MPLCONFIGDIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()), "matplotlib wrote no font cache: the case did not happen"
    assert result.stderr == ""
    assert result.stdout.strip() == "ok"
