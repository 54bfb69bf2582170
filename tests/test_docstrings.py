"""Runs the examples in keras_bert's docstrings, and checks that public classes have one.

A meta-test over the whole package (it does not mirror one module): every module under
keras_bert is imported; each docstring with a ``>>>`` example that runs (not all ``+SKIP``)
is one test, run with ELLIPSIS and NORMALIZE_WHITESPACE. Every public class must have a
``>>>`` example in its own docstring: a class named in an ``__all__`` of keras_bert or one of
its packages, or defined at the top of a keras_bert module under a name without a leading
underscore (exceptions and option classes too).
"""

import doctest
import importlib
import inspect
import io
import pkgutil
import traceback

import pytest

import keras_bert

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names():
    names = [keras_bert.__name__]
    # A package that fails to import is listed all the same: _import_all reports it.
    for info in pkgutil.walk_packages(keras_bert.__path__, prefix=keras_bert.__name__ + ".",
                                      onerror=lambda name: None):
        names.append(info.name)
    return sorted(names)


def _import_all(names):
    """{name: module} of the modules that import, and {name: traceback} of those that do not."""
    modules, failures = {}, {}
    for name in names:
        try:
            modules[name] = importlib.import_module(name)
        except Exception:  # reported by test_every_module_imports
            failures[name] = traceback.format_exc()
    return modules, failures


def _runs(test):
    return any(not example.options.get(doctest.SKIP) for example in test.examples)


def _examples(modules):
    """(module name, docstring name) of every docstring with an example that runs."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    return sorted((module_name, test.name) for module_name, module in modules.items()
                  for test in finder.find(module, module_name) if _runs(test))


def _public_classes(modules):
    classes = {}
    for module_name, module in modules.items():
        found = [getattr(module, name) for name in getattr(module, "__all__", ())]
        found += [value for name, value in vars(module).items()
                  if not name.startswith("_") and getattr(value, "__module__", None) == module_name]
        for value in found:
            if inspect.isclass(value) and value.__module__.split(".")[0] == keras_bert.__name__:
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(classes.items())


MODULES, IMPORT_FAILURES = _import_all(_module_names())
EXAMPLES = _examples(MODULES)
PUBLIC_CLASSES = _public_classes(MODULES)


def test_every_module_imports():
    assert not IMPORT_FAILURES, "\n".join(IMPORT_FAILURES.values())


def test_package_has_examples_and_public_classes():
    assert len(MODULES) > 1 and EXAMPLES and PUBLIC_CLASSES
    assert ("keras_bert.models.encoder", "keras_bert.models.encoder.BertEncoder") in EXAMPLES
    assert ("keras_bert.models.encoder.BertEncoder", keras_bert.BertEncoder) in PUBLIC_CLASSES


@pytest.mark.parametrize("module_name,name", EXAMPLES, ids=[name for _, name in EXAMPLES])
def test_docstring_example_runs(module_name, name):
    # Found again here: a DocTest's globals are cleared once it has run.
    finder = doctest.DocTestFinder(exclude_empty=True)
    test = {t.name: t for t in finder.find(MODULES[module_name], module_name)}[name]
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report = io.StringIO()
    runner.run(test, out=report.write)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, (
        f"{results.failed} docstring example(s) failed:\n{report.getvalue()}")


@pytest.mark.parametrize("name,cls", PUBLIC_CLASSES, ids=[name for name, _ in PUBLIC_CLASSES])
def test_public_class_docstring_has_example(name, cls):
    doc = cls.__dict__.get("__doc__") or ""
    assert doc.strip(), f"{name} has no docstring of its own"
    assert ">>>" in doc, f"{name}'s docstring has no `>>>` example"
