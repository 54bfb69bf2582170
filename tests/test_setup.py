"""setup.py: the optional extras by use, each read from its requirements file, so that pip,
the Makefile and readers see one list of pins."""

import pathlib
import re
import runpy
import subprocess

import pytest
import setuptools

REPO = pathlib.Path(__file__).resolve().parent.parent

EXTRAS = {
    "hf": "requirements-hf.txt",
    "keras_hub": "requirements-keras-hub.txt",
    "serve": "requirements-serve.txt",
    "hub": "requirements-hub.txt",
    "litert": "requirements-litert.txt",
    "test": "requirements-test.txt",
}


def _lines(name):
    """Requirement lines of a file, following `-r` includes (written out here on purpose,
    not taken from setup.py)."""
    found = []
    for raw in (REPO / name).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found += _lines(line[3:].strip())
        elif line:
            found.append(line)
    return found


@pytest.fixture(scope="module")
def setup_kwargs(monkeypatch_module):
    captured = {}
    monkeypatch_module.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
    runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    return captured


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_extras_by_use_exist(setup_kwargs):
    assert set(setup_kwargs["extras_require"]) == set(EXTRAS)


def test_runtime_requirements_are_requirements_txt(setup_kwargs):
    assert setup_kwargs["install_requires"] == _lines("requirements.txt")
    names = {re.split(r"[=<>!~;\[ ]", r, 1)[0].lower() for r in setup_kwargs["install_requires"]}
    # Optional heavy packages stay out of the runtime install; safetensors is runtime.
    assert not names & {"torch", "transformers", "keras-hub", "tensorflow-serving-api", "grpcio",
                        "huggingface_hub", "kagglehub"}
    assert "safetensors" in names


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_extra_is_its_file_beyond_the_runtime(setup_kwargs, extra):
    runtime = set(_lines("requirements.txt"))
    want = [r for r in dict.fromkeys(_lines(EXTRAS[extra])) if r not in runtime]
    assert setup_kwargs["extras_require"][extra] == want
    assert want, f"the [{extra}] extra is empty"


def test_the_pins_named_in_the_issue(setup_kwargs):
    extras = setup_kwargs["extras_require"]
    assert extras["keras_hub"] == ["keras-hub==0.32.0"]
    assert any(r.startswith("torch==") for r in extras["hf"])
    assert any(r.startswith("tensorflow-serving-api==") for r in extras["serve"])
    assert extras["hub"] == ["huggingface_hub==2.4.0", "kagglehub==1.0.2"]
    # The tests use the [hf], [keras_hub] and [hub] extras' pins and the parity references.
    assert set(extras["hf"]) | set(extras["keras_hub"]) | set(extras["hub"]) <= set(extras["test"])
    assert {"pytest", "transformers"} <= set(extras["test"])


def test_the_makefile_reads_its_pins_from_the_requirement_files():
    makefile = (REPO / "Makefile").read_text()
    assert not re.search(r"^[A-Z_]+\s*:?=\s*[\w.-]+==", makefile, re.M), \
        "a pin written into the Makefile; put it in a requirements file"
    lines = subprocess.run(["make", "-n", "test", "VENV=/nonexistent/fresh-venv"], cwd=REPO,
                           capture_output=True, text=True, timeout=60, check=True).stdout
    torch_pin = next(r for r in _lines("requirements-hf.txt") if r.startswith("torch=="))
    google_pin = _lines("requirements-google-bert.txt")[0]
    assert f'"{torch_pin}"' in lines and f'"{google_pin}"' in lines


def test_a_source_distribution_carries_the_requirement_files():
    assert "include requirements*.txt" in (REPO / "MANIFEST.in").read_text()
