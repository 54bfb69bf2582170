"""The README's Python examples run as written, and the shapes their comments promise hold.

A block that names placeholder paths (``/path/to/...``) only illustrates calls and is skipped.
A line of the form ``<expression>   # (2, 128, 384)`` is checked: the expression (a shape)
must equal that tuple.
"""

import ast
import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
_SHAPE_COMMENT = re.compile(r"^(?P<expr>[^#=]+?)\s+#\s*(?P<shape>\((?:\d+,\s*)*\d*\))\s*$")


def _python_blocks():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        line = text.count("\n", 0, match.start()) + 2
        blocks.append((line, match.group(1)))
    return blocks


def _runnable_blocks():
    return [(line, code) for line, code in _python_blocks() if "/path/to" not in code]


def test_readme_has_runnable_examples():
    assert len(_runnable_blocks()) >= 2


@pytest.mark.parametrize("line,code", _runnable_blocks(), ids=lambda v: str(v)[:12])
def test_readme_example_runs(line, code):
    namespace = {}
    checks = []
    for number, source_line in enumerate(code.splitlines(), start=line):
        match = _SHAPE_COMMENT.match(source_line)
        if match and not source_line.lstrip().startswith(("import", "from")):
            checks.append((number, match.group("expr").strip(), ast.literal_eval(match["shape"])))
    exec(compile(code, f"README.md:{line}", "exec"), namespace)  # noqa: S102
    for number, expr, shape in checks:
        got = tuple(eval(expr, namespace))  # noqa: S307
        assert got == shape, f"README.md line {number}: {expr} has shape {got}, README says {shape}"
