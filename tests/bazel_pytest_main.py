"""Entry point of the Bazel py_test targets (see BUILD): runs pytest on the given test file.

Bazel starts it in the runfiles tree with the test file's path as argument. pytest.ini and
tests/conftest.py are in the runfiles, so the file runs as it does under `make test`; the
JUnit XML report goes where Bazel asks for it.
"""

import os
import sys

import pytest


def main(argv):
    args = ["-q", "-p", "no:cacheprovider", *argv]
    xml_output = os.environ.get("XML_OUTPUT_FILE")
    if xml_output:
        args.append(f"--junitxml={xml_output}")
    return pytest.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
