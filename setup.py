"""Packaging for keras_bert.

The distribution is called ``keras-bert-zoo``: ``keras-bert`` on PyPI is an unrelated 2022
project that also imports as ``keras_bert`` (do not install both). The pins live in
requirements files so that pip, the Makefile and readers see one list:

=================  ==============================  ==========================================
extra              file                            for
=================  ==============================  ==========================================
(none)             ``requirements.txt``            the runtime (Hugging Face safetensors too)
``[hf]``           ``requirements-hf.txt``         ``pytorch_model.bin`` checkpoints (torch)
``[keras_hub]``    ``requirements-keras-hub.txt``  reading keras-hub presets
``[serve]``        ``requirements-serve.txt``      TF Serving's gRPC client API
``[hub]``          ``requirements-hub.txt``        ``hf://`` and ``kaggle://`` preset handles
``[litert]``       ``requirements-litert.txt``     running and serving LiteRT (``.tflite``) models
``[test]``         ``requirements-test.txt``       the tests (includes the other extras)
=================  ==============================  ==========================================
"""

import pathlib
import re

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).resolve().parent


def read_requirements(name):
    """Requirement lines of a requirements file without comments, `-r` includes followed."""
    requirements = []
    for line in (HERE / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            requirements += [r for r in read_requirements(line[3:].strip())
                             if r not in requirements]
        elif line and not line.startswith("-"):
            requirements.append(line)
    return requirements


def read_version():
    text = (HERE / "keras_bert" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


install_requires = read_requirements("requirements.txt")
# Each extra: its file's requirements beyond the runtime ones.
EXTRA_FILES = {
    "hf": "requirements-hf.txt",
    "keras_hub": "requirements-keras-hub.txt",
    "serve": "requirements-serve.txt",
    "hub": "requirements-hub.txt",
    "litert": "requirements-litert.txt",
    "test": "requirements-test.txt",
}
extras_require = {
    extra: [r for r in read_requirements(name) if r not in install_requires]
    for extra, name in EXTRA_FILES.items()
}

setup(
    name="keras-bert-zoo",
    version=read_version(),
    description="BERT on TensorFlow and Keras 3: encoder, task heads, in-graph tokenization, "
    "pre-training and SavedModel export.",
    long_description=(HERE / "README.md").read_text() if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["keras_bert", "keras_bert.*"]),
    package_data={"keras_bert": ["**/*.json", "**/*.txt"]},
    python_requires=">=3.11",
    install_requires=install_requires,
    extras_require=extras_require,
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
