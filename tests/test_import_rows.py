"""DESIGN.md's rows: a module imports from its own row or the rows below it, never above,
and never in a circle.

Every import counts, at module level or inside a function (a call-time import is still an
arrow of the house): there is no list of excused exceptions.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "keras_bert"

# DESIGN.md's table: the rows of keras_bert's packages and row-0 modules.
ROWS = {
    "config": 0, "backend": 0, "checks": 0, "vocab": 0, "storage": 0, "tempdirs": 0, "options": 0,
    "dir_swap": 0,
    "checkpoints": 1,
    "presets": 2,
    "layers": 3, "text": 3, "optimizers": 3,
    "models": 4,
    "training": 5, "data": 5,
    "export": 6, "serving": 6,
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
            where = "at module level" if top else "at call time"
            found.append(f"{module} (row {row}) imports {imported} (row {imported_row}) {where}")
    return found


def test_imports_follow_the_rows():
    assert _violations() == []


def test_the_check_sees_module_level_and_call_time_imports():
    tree = ast.parse("from keras_bert.presets import load_preset\n"
                     "def f():\n    from keras_bert.export import x\n")
    assert list(_imports(tree)) == [("keras_bert.presets.load_preset", True),
                                    ("keras_bert.export.x", False)]


def _module_graph():
    """{module: modules of keras_bert it imports} over every import, module level or not.
    ``from keras_bert.a import b`` names module ``keras_bert.a.b`` when that is a module, else
    ``keras_bert.a``."""
    modules = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    graph = {}
    for module, path in modules.items():
        targets = set()
        for imported, _ in _imports(ast.parse(path.read_text(), str(path))):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != module:
                targets.add(imported)
        graph[module] = targets
    return graph


def _circles(graph):
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_circle_of_modules():
    """A package's __init__ re-exports its modules, so the package itself is left out: the
    circles that count are between modules that use each other's code."""
    graph = {m: {t for t in targets if not PACKAGE.joinpath(*t.split(".")[1:], "__init__.py").exists()}
             for m, targets in _module_graph().items()}
    assert _circles(graph) == []


def test_the_circle_check_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
