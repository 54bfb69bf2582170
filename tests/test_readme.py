"""The Python examples of README.md and docs/*.md run as written, and the shapes their
comments promise hold.

Every ```python block of those pages runs, each in a fresh namespace, except blocks that only
illustrate calls which cannot run on a test machine: a block whose first line is a comment
starting with ``# not run:`` (followed by the reason: a TPU, a bucket, a large download, a
server to talk to), and a block that names placeholder paths (``/path/to/...``).
A line of the form ``<expression>   # (2, 128, 384)`` is checked: the expression (a shape)
must equal that tuple. A page without Python examples is fine.
"""

import ast
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
PAGES = [README] + sorted(glob.glob(os.path.join(DOCS, "*.md")))
NOT_RUN = "# not run:"
_SHAPE_COMMENT = re.compile(r"^(?P<expr>[^#=]+?)\s+#\s*(?P<shape>\((?:\d+,\s*)*\d*\))\s*$")


def _name(page):
    return os.path.relpath(page, ROOT)


def _python_blocks(page):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        line = text.count("\n", 0, match.start()) + 2
        blocks.append((line, match.group(1)))
    return blocks


def _runs(code):
    return "/path/to" not in code and not code.lstrip().startswith(NOT_RUN)


def _runnable_blocks(page):
    return [(line, code) for line, code in _python_blocks(page) if _runs(code)]


def _all_runnable():
    return [(_name(page), line, code) for page in PAGES for line, code in _runnable_blocks(page)]


def test_readme_has_runnable_examples():
    assert len(_runnable_blocks(README)) >= 2


def test_docs_pages_are_found():
    assert os.path.join(DOCS, "README.md") in PAGES


@pytest.mark.parametrize("page,line,code", _all_runnable(),
                         ids=[f"{page}:{line}" for page, line, _ in _all_runnable()])
def test_readme_example_runs(page, line, code):
    namespace = {}
    checks = []
    for number, source_line in enumerate(code.splitlines(), start=line):
        match = _SHAPE_COMMENT.match(source_line)
        if match and not source_line.lstrip().startswith(("import", "from")):
            checks.append((number, match.group("expr").strip(), ast.literal_eval(match["shape"])))
    exec(compile(code, f"{page}:{line}", "exec"), namespace)  # noqa: S102
    for number, expr, shape in checks:
        got = tuple(eval(expr, namespace))  # noqa: S307
        assert got == shape, f"{page} line {number}: {expr} has shape {got}, the page says {shape}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_example_parses(page):
    # The blocks that are not run are still valid Python, so that they can be copied.
    for line, code in _python_blocks(page):
        ast.parse(code, f"{_name(page)}:{line}")
