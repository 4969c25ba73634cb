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

.PHONY: install demo test lint ui ui-screenshot bench clean

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

test: $(STAMP)
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/ruff format --check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts

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

clean:
	rm -rf $(VENV) data/warehouse data/cache .dagster_home

ui-screenshot: $(STAMP) $(DAGSTER_HOME)
	$(BIN)/python -c "import playwright" 2>/dev/null || $(BIN)/pip install --quiet playwright
	$(BIN)/python scripts/ui_screenshots.py
