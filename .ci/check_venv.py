"""Checks that .venv holds the stack keras_bert is pinned to; exits non-zero loudly otherwise.

Run by the Makefile after each install: `python .ci/check_venv.py` after the runtime install,
`python .ci/check_venv.py --test` after the test install (adds: torch is a CPU build and no
`nvidia-*` CUDA packages came with it).
"""

import importlib.metadata
import sys


def installed():
    return {d.metadata["Name"].lower().replace("_", "-"): d.version for d in importlib.metadata.distributions()}


def problems(test):
    dists = installed()
    found = []
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
        print(
            "Remove .venv (make clean) and retry; torch must be the CPU wheel "
            "(e.g. TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu).",
            file=sys.stderr,
        )
        return 1
    print("check_venv: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
