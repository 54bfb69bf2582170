"""Checks that .venv holds the stack keras_bert is pinned to; exits non-zero loudly otherwise.

Run by the Makefile after each install: `python .ci/check_venv.py` after the runtime install
(the pins of requirements.txt and requirements-presets.txt), `python .ci/check_venv.py --test`
after the test install (adds requirements-test.txt's pins, with those of the extras' files it
includes: [hf], [keras_hub], [serve], [hub], [litert]; torch is a CPU build and no
`nvidia-*` CUDA packages came with it).
"""

import importlib.metadata
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


def installed():
    return {d.metadata["Name"].lower().replace("_", "-"): d.version for d in importlib.metadata.distributions()}


def pins(name):
    """`name==version` lines of a requirements file (following `-r` includes)."""
    found = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found.update(pins(line[3:].strip()))
        elif "==" in line:
            package, version = line.split("==", 1)
            found[package.strip().lower().replace("_", "-")] = version.strip()
    return found


def problems(test):
    dists = installed()
    found = []
    wanted = pins("requirements-test.txt" if test else "requirements.txt")
    wanted.update(pins("requirements-presets.txt"))  # installed with --no-deps by both
    for package, version in wanted.items():
        have = dists.get(package)
        if have is None:
            found.append(f"{package}=={version} is not installed")
        elif have.split("+", 1)[0] != version:
            found.append(f"{package} {have} is installed, the pin is {version}")
    if "tensorflow" not in dists:
        found.append("the full `tensorflow` package is not installed")
    for name in ("tensorflow-cpu", "tensorflow-intel", "tf-nightly"):
        if name in dists:
            found.append(f"`{name}` is installed beside tensorflow; keras_bert pins the full package")
    if "keras-bert" in dists:
        found.append(
            "`keras-bert` (an unrelated PyPI project that also imports as keras_bert) is installed; "
            "`pip uninstall keras-bert`"
        )
    if test:
        nvidia = sorted(name for name in dists if name.startswith("nvidia-"))
        if nvidia:
            found.append(f"CUDA packages were pulled in: {', '.join(nvidia)}")
        try:
            import torch
        except ImportError as error:
            found.append(f"torch does not import: {error}")
        else:
            if torch.version.cuda is not None:
                found.append(f"torch {torch.__version__} is a CUDA build (cuda {torch.version.cuda})")
    return found


def main():
    found = problems(test="--test" in sys.argv[1:])
    if found:
        print("check_venv: the environment is not the pinned CPU stack:", file=sys.stderr)
        for problem in found:
            print(f"  - {problem}", file=sys.stderr)
        print("Remove .venv (make clean) and retry.", file=sys.stderr)
        if any("torch" in p or "CUDA" in p for p in found):
            print(
                "torch must be the CPU wheel: pip needs to reach https://download.pytorch.org/whl/cpu "
                "(the Makefile's TORCH_INDEX_URL) or find the +cpu wheel in its find-links.",
                file=sys.stderr,
            )
        return 1
    print("check_venv: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
