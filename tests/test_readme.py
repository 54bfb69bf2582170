"""The Python examples of README.md and docs/*.md run as written, and the shapes their
comments promise hold.

Every ```python block of those pages runs, each in a fresh namespace, except blocks that only
illustrate calls which cannot run on a test machine: a block whose first line is a comment
starting with ``# not run:`` (followed by the reason: a TPU, a bucket, a large download, a
server to talk to), and a block that names placeholder paths (``/path/to/...``).
A line of the form ``<expression>   # (2, 128, 384)`` is checked: the expression (a shape)
must equal that tuple. A page without Python examples is fine.

Shell commands are not run; every ``python tools/<tool>.py`` command in a ```sh block must use
only flags that tool defines, and the raw-text pre-training route's ``bert_config.json`` must
load.
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


# ---- the shell commands and configs the pages show (not run: checked against the tools)
def _blocks(page, language):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    return [m.group(1) for m in re.finditer(rf"^ *```{language}\n(.*?)^ *```", text,
                                            flags=re.S | re.M)]


def _tool_flags(tool):
    """The flags ``tools/<tool>`` defines: its ``flags.DEFINE_*("name", ...)`` calls and the
    fields of the option classes it passes to ``options_lib.define_flags``, read from its
    source (importing it would define them in absl's global registry)."""
    import importlib

    from keras_bert import options as options_lib

    path = os.path.join(ROOT, "tools", tool)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    imported = {}  # the names the tool imports -> "module" or "module.name"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    names = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr.startswith("DEFINE_") and isinstance(node.args[0], ast.Constant):
            names.add(node.args[0].value)
        elif node.func.attr == "define_flags":
            source = ast.unparse(node.args[0]).split(".")
            dotted = ".".join([imported[source[0]]] + source[1:])
            module, _, name = dotted.rpartition(".")
            try:
                options_class = getattr(importlib.import_module(module), name)
            except ModuleNotFoundError:  # `from package import module`, then module.Class
                package, _, module_name = module.rpartition(".")
                options_class = getattr(importlib.import_module(f"{package}.{module_name}"),
                                        name)
            names |= {field for field, _, _ in options_lib.declared_fields(options_class)}
    return names


def _commands(page):
    """(tool, [flag names]) of every ``python tools/<tool>.py ...`` command in the page's
    ```sh blocks (continuation lines joined, comments dropped)."""
    out = []
    for block in _blocks(page, "sh"):
        lines = [line.split(" #")[0].rstrip() for line in block.splitlines()]
        for command in re.split(r"(?<!\\)\n", "\n".join(lines)):
            match = re.search(r"python tools/(\w+\.py)(.*)", command.replace("\\\n", " "))
            if match:
                flags = re.findall(r"(?:^|\s)--(?:no)?(\w+)", match.group(2))
                out.append((match.group(1), flags))
    return out


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_shell_commands_use_flags_their_tool_defines(page):
    for tool, flags in _commands(page):
        defined = _tool_flags(tool)
        unknown = [f for f in flags if f not in defined and f"no{f}" not in defined]
        assert unknown == [], f"{_name(page)}: tools/{tool} defines no --{unknown}"


def test_the_raw_text_route_starts_from_build_vocab_and_a_config_that_loads(tmp_path):
    """docs/pre-training.md, from raw text: learn vocab.txt with tools/build_vocab.py, write
    the small bert_config.json shown (Google's format reader takes it), then pre-train on the
    text with both."""
    from keras_bert.checkpoints import google

    with open(os.path.join(DOCS, "pre-training.md"), encoding="utf-8") as f:
        section = f.read().split("## From raw text, from scratch\n")[1].split("\n## ")[0]
    route = tmp_path / "route.md"
    route.write_text(section)
    (build, build_flags), (pretrain, pretrain_flags) = _commands(str(route))
    assert (build, pretrain) == ("build_vocab.py", "pretrain.py")
    assert {"input_files", "output"} <= set(build_flags)
    assert {"bert_config_file", "vocab_file", "input_format", "input_file"} <= set(pretrain_flags)
    (config_text,) = _blocks(str(route), "json")
    (tmp_path / "bert_config.json").write_text(config_text)
    config = google.config_from_json(str(tmp_path / "bert_config.json"))
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (30522, 256, 4)
