# One command each: `make demo`, `make test`. Everything runs inside .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SCALE ?= S
PYTEST_ARGS ?=

.PHONY: demo test bench eval check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/gpufleet demo

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run --scale $(SCALE)

eval: $(STAMP)
	$(BIN)/gpufleet evaluate --seeds 1..5

check: $(STAMP)
	$(BIN)/ruff check pipelines gpufleet_app tests app.py

clean:
	rm -rf $(VENV) fleet.duckdb demo-data test-artifacts
