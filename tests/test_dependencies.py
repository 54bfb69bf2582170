"""A missing test dependency fails the test and names the package; nothing skips on it."""

import pathlib
import re

import pytest

from tests.dependencies import require

TESTS = pathlib.Path(__file__).resolve().parent


def test_require_returns_the_module():
    assert require("json").dumps([1]) == "[1]"


def test_a_missing_package_fails_naming_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "keras_hub", None)  # import now raises ImportError
    with pytest.raises(pytest.fail.Exception, match=r"needs keras-hub \(requirements-keras-hub"):
        require("keras_hub")


@pytest.mark.parametrize("module", ["huggingface_hub", "kagglehub"])
def test_a_missing_hub_client_fails_naming_the_hub_extra(monkeypatch, module):
    import sys

    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(pytest.fail.Exception, match=rf"needs {module} \(requirements-hub\.txt, "
                       r"the \[hub\] extra\)"):
        require(module)


def test_no_test_skips_on_a_missing_import():
    # (A `skipif` with a platform reason may stay; skipping on an import may not.)
    pattern = re.compile(r"importorskip|pytest\.skip\(")
    offenders = [f"{path.relative_to(TESTS)}:{n}"
                 for path in TESTS.rglob("*.py") if path.name != "dependencies.py"
                 and path != pathlib.Path(__file__).resolve()
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if pattern.search(line)]
    assert not offenders, f"skips in tests (use tests.dependencies.require): {offenders}"
