"""Keeps the Bazel BUILD files in step with the tree.

Every tests/**/test_*.py must be the test file of exactly one py_test, no py_test may name a
file that does not exist, and every keras_bert/**/*.py must be in the srcs of a py_library.

BUILD files are Starlark, which for the forms used here is Python syntax: each one is
evaluated with stand-ins for the Bazel functions (`glob` with Bazel's semantics, stopping at
sub-packages and at .bazelignore entries), so explicit lists and globs are checked alike.
"""

import os
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD_NAMES = ("BUILD", "BUILD.bazel")


def _ignored_dirs():
    ignore = REPO / ".bazelignore"
    dirs = {".git"}
    if ignore.is_file():
        for line in ignore.read_text().splitlines():
            line = line.split("#", 1)[0].strip().strip("/")
            if line:
                dirs.add(line)
    return dirs


IGNORED = _ignored_dirs()


def _is_ignored(relative):
    return relative.startswith("bazel-") or any(
        relative == d or relative.startswith(d + "/") for d in IGNORED
    )


def _walk(top=""):
    """Files under REPO/top as repository-relative paths, pruning ignored and output dirs."""
    for dirpath, dirnames, filenames in os.walk(REPO / top):
        here = pathlib.Path(dirpath).relative_to(REPO).as_posix()
        here = "" if here == "." else here
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != "__pycache__" and not _is_ignored(f"{here}/{d}" if here else d)
        )
        for name in filenames:
            yield f"{here}/{name}" if here else name


def _package_dirs():
    """Directories (relative to the repository, '' for the root) that hold a BUILD file."""
    return sorted({f.rpartition("/")[0] for f in _walk() if f.rpartition("/")[2] in BUILD_NAMES})


def _glob_regex(pattern):
    """Bazel glob pattern -> regex: `**` spans directories, `*` and `?` stay in one name."""
    out = []
    for i, part in enumerate(pattern.split("/")):
        last = i == len(pattern.split("/")) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        piece = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        out.append(piece if last else piece + "/")
    return re.compile("".join(out) + r"\Z")


def _package_files(package, packages):
    """Files of one package, relative to it: its tree minus sub-packages."""
    others = [p for p in packages if p != package and (package == "" or p.startswith(package + "/"))]
    prefix = f"{package}/" if package else ""
    return [
        f[len(prefix) :]
        for f in _walk(package)
        if not any(f.startswith(p + "/") for p in others)
    ]


def _evaluate(package, packages):
    """Runs one BUILD file; returns its py_library and py_test rules as dicts."""
    files = _package_files(package, packages)
    rules = []

    def glob(include, exclude=(), exclude_directories=1, allow_empty=True):
        keep = [f for f in files if any(_glob_regex(p).match(f) for p in include)]
        return sorted(f for f in keep if not any(_glob_regex(p).match(f) for p in exclude))

    def rule(kind):
        def record(**attrs):
            rules.append(dict(attrs, kind=kind, package=package))

        return record

    def ignore(*args, **kwargs):
        return None

    namespace = {
        "glob": glob,
        "py_library": rule("py_library"),
        "py_test": rule("py_test"),
        "py_binary": rule("py_binary"),
        "load": ignore,
        "package": ignore,
        "filegroup": ignore,
        "exports_files": ignore,
        "alias": ignore,
        "select": lambda conditions: conditions.get("//conditions:default", []),
    }
    build = next((REPO / package / n) for n in BUILD_NAMES if (REPO / package / n).is_file())
    exec(compile(build.read_text(), str(build), "exec"), namespace)
    return rules


def _in_repo(rule, src):
    """A srcs entry (a file name relative to its package) as a path from the repository root."""
    if src.startswith(("//", ":", "@")):
        pytest.fail(f"use plain file names in srcs, not labels: {src!r} in {rule['name']}")
    return f"{rule['package']}/{src}" if rule["package"] else src


@pytest.fixture(scope="module")
def rules():
    packages = _package_dirs()
    assert "" in packages, "no BUILD file at the top of the repository"
    return [r for package in packages for r in _evaluate(package, packages)]


def _disk(top, pattern):
    regex = _glob_regex(pattern)
    return {f for f in _walk(top) if regex.match(f)}


def test_every_test_file_has_one_py_test(rules):
    on_disk = _disk("tests", "tests/**/test_*.py")
    assert on_disk, "no test files found"
    tested = []
    for rule in rules:
        if rule["kind"] != "py_test":
            continue
        test_files = [s for s in rule.get("srcs", []) if re.match(r"test_.*\.py\Z", s.rsplit("/", 1)[-1])]
        assert len(test_files) == 1, f"py_test {rule['name']} should run one test file: {test_files}"
        tested.append(_in_repo(rule, test_files[0]))
    missing = sorted(on_disk - set(tested))
    stale = sorted(set(tested) - on_disk)
    twice = sorted({t for t in tested if tested.count(t) > 1})
    problems = [
        f"test files without a py_test in BUILD: {missing}" if missing else "",
        f"py_test targets for test files that do not exist: {stale}" if stale else "",
        f"test files with more than one py_test: {twice}" if twice else "",
    ]
    assert not any(problems), "\n".join(p for p in problems if p)


def test_every_module_is_in_a_py_library(rules):
    on_disk = _disk("keras_bert", "keras_bert/**/*.py")
    assert "keras_bert/__init__.py" in on_disk
    covered = {_in_repo(r, s) for r in rules if r["kind"] == "py_library" for s in r.get("srcs", [])}
    missing = sorted(on_disk - covered)
    stale = sorted(s for s in covered - on_disk if s.startswith("keras_bert/"))
    problems = [
        f"modules not in any py_library srcs in BUILD: {missing}" if missing else "",
        f"py_library srcs that do not exist: {stale}" if stale else "",
    ]
    assert not any(problems), "\n".join(p for p in problems if p)


def test_py_test_names_mirror_their_files(rules):
    for rule in rules:
        if rule["kind"] == "py_test":
            test_file = next(s for s in rule["srcs"] if s.rsplit("/", 1)[-1].startswith("test_"))
            assert rule["name"] == test_file[: -len(".py")], (
                f"py_test {rule['name']!r} should be named after its file {test_file!r}"
            )


def test_test_file_names_are_unique():
    """tests/ folders have no __init__.py, so pytest imports each test file by its bare name:
    two files with one name in different folders would clash at collection."""
    import collections
    import pathlib

    root = pathlib.Path(__file__).resolve().parent
    names = collections.Counter(p.name for p in root.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
