"""A Python toolchain whose interpreter is the repository's virtual environment.

`py_runtime.interpreter_path` must be absolute, so a repository rule finds the workspace
root and writes the toolchain's BUILD file there. The interpreter is the venv's `bin/python`
itself (not the file it links to), so Python sees the venv's `pyvenv.cfg` and its packages.
"""

_BUILD = """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    stub_shebang = "#!{python}",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

def _venv_python_impl(rctx):
    workspace_root = rctx.path(Label("//:WORKSPACE")).dirname
    python = "%s/%s/bin/python" % (workspace_root, rctx.attr.venv)
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)
    rctx.file("BUILD", _BUILD.format(python = python))

venv_python = repository_rule(
    implementation = _venv_python_impl,
    attrs = {"venv": attr.string(default = ".venv")},
    local = True,
)
