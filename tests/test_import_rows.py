"""DESIGN.md's rows: a module imports from its own row or the rows below it, never above.

Module-level imports are held to the rule without exception. A method that reaches a row
above at call time (a function-level import) is listed in `CALL_TIME_UPWARD` with the reason;
any other is an error, so a new one is a decision someone writes down, not an accident.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "keras_bert"

ROWS = {
    "config": 0, "backend": 0, "storage": 0,
    "layers": 1, "text": 1,
    "presets": 2, "checkpoints": 2,
    "models": 3,
    "training": 4, "data": 4,
    "export": 5, "serving": 5,
}

# (importing module, imported package) -> why the call-time import is there.
CALL_TIME_UPWARD = {
    ("keras_bert.text.preset_source", "keras_bert.presets"):
        "the text layers' from_preset resolve names through the one preset loader",
    ("keras_bert.models.task", "keras_bert.training"):
        "Task.compile() defaults to the BERT recipe optimizer",
    ("keras_bert.models.task", "keras_bert.export"):
        "Task.export() is Keras' verb for the serving SavedModel, which keras_bert.export writes",
}


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _row(module):
    parts = module.split(".")
    return ROWS.get(parts[1]) if len(parts) > 1 else None


def _imports(tree):
    """(imported keras_bert module, at module level?) for every import in the tree."""
    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, top
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    yield f"{child.module}.{alias.name}", top
            yield from visit(child, inner)
    for name, top in visit(tree, True):
        if name.startswith("keras_bert."):
            yield name, top


def _violations():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        row = _row(module)
        if row is None:  # keras_bert/__init__.py re-exports everything
            continue
        for imported, top in _imports(ast.parse(path.read_text(), str(path))):
            imported_row = _row(imported)
            if imported_row is None or imported_row <= row:
                continue
            package = ".".join(imported.split(".")[:2])
            if not top and (module, package) in CALL_TIME_UPWARD:
                continue
            where = "at module level" if top else "at call time, unlisted"
            found.append(f"{module} (row {row}) imports {imported} (row {imported_row}) {where}")
    return found


def test_imports_follow_the_rows():
    assert _violations() == []


def test_every_listed_call_time_import_exists():
    """An entry of CALL_TIME_UPWARD whose import went away is removed too."""
    seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for imported, top in _imports(ast.parse(path.read_text(), str(path))):
            if not top:
                seen.add((module, ".".join(imported.split(".")[:2])))
    assert set(CALL_TIME_UPWARD) - seen == set()


def test_the_check_sees_module_level_and_call_time_imports():
    tree = ast.parse("from keras_bert.presets import load_preset\n"
                     "def f():\n    from keras_bert.export import x\n")
    assert list(_imports(tree)) == [("keras_bert.presets.load_preset", True),
                                    ("keras_bert.export.x", False)]
