"""tests/ mirrors keras_bert/: every module (``__init__.py`` aside) has a test file of its own
name at the same place, ``keras_bert/text/packer.py`` -> ``tests/text/test_packer.py``. Its
tests live there, not under another name (a test of the public API, of a tool, of the module
that uses it), so that a reader looking for what holds a module finds it. A meta-test over
the whole package, as tests/test_docstrings.py is."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = REPO / "keras_bert"


def mirrored_test_file(module):
    """``keras_bert/a/b.py`` -> ``tests/a/test_b.py`` (both relative to the repository)."""
    relative = module.relative_to(PACKAGE)
    return pathlib.Path("tests", *relative.parent.parts, f"test_{relative.name}")


def _modules():
    return sorted(p.relative_to(REPO) for p in PACKAGE.rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def test_the_mirror_of_a_module():
    assert mirrored_test_file(PACKAGE / "text" / "packer.py") == pathlib.Path(
        "tests/text/test_packer.py")
    assert mirrored_test_file(PACKAGE / "config.py") == pathlib.Path("tests/test_config.py")


def test_every_module_has_its_mirrored_test_file():
    modules = _modules()
    assert len(modules) > 100, modules  # the package was found
    missing = [f"{module} -> {mirrored_test_file(REPO / module)}" for module in modules
               if not (REPO / mirrored_test_file(REPO / module)).is_file()]
    assert not missing, ("modules without a test file of their own name (move the tests "
                         "about the module there, or write them):\n" + "\n".join(missing))
