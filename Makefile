# One entry point for users and CI. `make demo` and `make test` work from a fresh clone.
# `make demo` evaluates the shipped dataset versions over the last 7 days up to today (UTC).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
PORT ?= 3000
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export TOKENIZERS_PARALLELISM := false

.PHONY: install browser demo test test-fast lint ui ui-screenshot bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

$(DAGSTER_HOME):
	mkdir -p $(DAGSTER_HOME)
	test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: $(STAMP) $(DAGSTER_HOME)
	$(BIN)/rag-eval run --days 7 --parallel 2

# The browser tests (rag_eval_pipeline_tests/test_browser.py) drive Debian's Chromium with
# Playwright (a dev dependency). Missing, it is installed when we may (root or passwordless
# sudo, apt-get); otherwise one line says the browser tests will be skipped and how to enable them.
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM
APT_INSTALL_CHROMIUM := apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif ! command -v apt-get >/dev/null; then \
		echo "browser tests will be skipped: no $(CHROMIUM) and no apt-get (install Chromium, then CHROMIUM=/path/to/chromium make test)"; \
	elif [ "$$(id -u)" = 0 ]; then echo "installing chromium (apt-get) for the browser tests"; \
		sh -c '$(APT_INSTALL_CHROMIUM)' || echo "browser tests will be skipped: apt-get install chromium failed"; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then echo "installing chromium (sudo apt-get) for the browser tests"; \
		sudo sh -c '$(APT_INSTALL_CHROMIUM)' || echo "browser tests will be skipped: apt-get install chromium failed"; \
	else echo "browser tests will be skipped: no $(CHROMIUM) (enable them: sudo apt-get install -y chromium)"; fi

# Test files run side by side in PYTEST_WORKERS processes (pytest-xdist, one file per worker at a
# time): most of the suite waits on servers, daemons and subprocesses, not on the 2 cores.
PYTEST_WORKERS ?= 3
test: $(STAMP) browser
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/lint-imports
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

# The unit tests only (marker `unit`: no server, no Dagster instance, no model).
test-fast: $(STAMP)
	$(BIN)/pytest -q -m unit -n 2

lint: $(STAMP)
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/ruff format --check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/lint-imports

# `make ui PORT=3001`. Started from DAGSTER_HOME, so dagster dev does not warn about the
# project's template dagster.yaml; its hint to use `dg dev` (not installed) is silenced.
ui: $(STAMP) $(DAGSTER_HOME)
	cd $(DAGSTER_HOME) && PYTHONWARNINGS='ignore:Function `dev_command` is superseded' \
		$(CURDIR)/$(BIN)/dagster dev -w $(CURDIR)/workspace.yaml -p $(PORT)

bench: $(STAMP)
	$(BIN)/python benchmarks/ir_metrics.py
	$(BIN)/python benchmarks/embedding_quality.py
	$(BIN)/python benchmarks/judge_throughput.py
	$(BIN)/python benchmarks/http_system.py
	$(BIN)/python benchmarks/tier1_scale.py
	$(BIN)/python benchmarks/pipeline.py
	$(BIN)/python benchmarks/stats_peers.py
	$(BIN)/python benchmarks/skip_check.py --date 2026-11-21 demo-v1 demo-v2

clean:
	rm -rf $(VENV) data/warehouse data/cache .dagster_home

ui-screenshot: $(STAMP) $(DAGSTER_HOME) browser
	$(BIN)/python scripts/ui_screenshots.py
