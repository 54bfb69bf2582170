"""Runs the examples in keras_bert's docstrings, and checks that public classes have one.

A meta-test over the whole package (it does not mirror one module): every module under
keras_bert is imported and its doctests run with ELLIPSIS and NORMALIZE_WHITESPACE.
"""

import doctest
import importlib
import inspect
import io
import pkgutil

import pytest

import keras_bert
import keras_bert.layers

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names():
    names = [keras_bert.__name__]
    for info in pkgutil.walk_packages(keras_bert.__path__, prefix=keras_bert.__name__ + "."):
        names.append(info.name)
    return sorted(names)


def _public_classes():
    classes = {}
    for namespace in (keras_bert, keras_bert.layers):
        names = getattr(namespace, "__all__", None)
        if names is None:
            names = [name for name in vars(namespace) if not name.startswith("_")]
        for name in names:
            value = getattr(namespace, name)
            # Exceptions are documented where they are raised; an example would say nothing.
            if inspect.isclass(value) and not issubclass(value, BaseException):
                classes[f"{namespace.__name__}.{name}"] = value
    return sorted(classes.items())


MODULES = _module_names()
PUBLIC_CLASSES = _public_classes()


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report = io.StringIO()
    for test in finder.find(module, module_name):
        runner.run(test, out=report.write)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} docstring example(s) failed:\n{report.getvalue()}"


def test_package_has_modules():
    assert len(MODULES) > 1 and PUBLIC_CLASSES


@pytest.mark.parametrize("name,cls", PUBLIC_CLASSES, ids=[name for name, _ in PUBLIC_CLASSES])
def test_public_class_docstring_has_example(name, cls):
    doc = cls.__dict__.get("__doc__") or ""
    assert doc.strip(), f"{name} has no docstring of its own"
    assert ">>>" in doc, f"{name}'s docstring has no `>>>` example"
