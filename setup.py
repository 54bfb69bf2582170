"""Packaging for keras_bert.

The distribution is called ``keras-bert-zoo``: ``keras-bert`` on PyPI is an unrelated 2022
project that also imports as ``keras_bert`` (do not install both). The pins live in
``requirements.txt`` (runtime) and ``requirements-test.txt`` (test extras) so that pip, the
Makefile and readers see one list.
"""

import pathlib
import re

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).resolve().parent


def read_requirements(name):
    """Requirement lines of a requirements file, without comments and `-r` includes."""
    requirements = []
    for line in (HERE / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            requirements.append(line)
    return requirements


def read_version():
    text = (HERE / "keras_bert" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


install_requires = read_requirements("requirements.txt")
test_requires = [r for r in read_requirements("requirements-test.txt") if r not in install_requires]

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
    extras_require={"test": test_requires},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
