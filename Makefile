# One entry point for users and CI. `make demo` and `make test` work from a fresh clone.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
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
	$(BIN)/rag-eval run
	$(BIN)/rag-eval scorecard

test: $(STAMP)
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts
	$(BIN)/ruff format --check rag_eval_pipeline rag_eval_pipeline_tests benchmarks scripts

ui: $(STAMP) $(DAGSTER_HOME)
	$(BIN)/dagster dev -w workspace.yaml

bench: $(STAMP)
	$(BIN)/python benchmarks/ir_metrics.py
	$(BIN)/python benchmarks/embedding_quality.py
	$(BIN)/python benchmarks/judge_throughput.py
	$(BIN)/python benchmarks/tier1_scale.py
	$(BIN)/python benchmarks/pipeline.py

clean:
	rm -rf $(VENV) data/warehouse data/cache .dagster_home

ui-screenshot: $(STAMP) $(DAGSTER_HOME)
	$(BIN)/python -c "import playwright" 2>/dev/null || $(BIN)/pip install --quiet playwright
	$(BIN)/python scripts/ui_screenshots.py
