# One command each: `make demo`, `make test`. Everything runs inside .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APP_STAMP := $(VENV)/.installed-app
SCALE ?= S
PYTEST_ARGS ?=

.PHONY: demo test bench bench-history eval check format-check docs clean screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	-$(BIN)/pip install --quiet uv

# uv installs the same wheels as pip in a fraction of the time (about 10 s instead of 50 s on a
# fresh machine); pip stays the fallback wherever uv cannot run. Both write the bytecode at
# install (pip does by default): every gpufleet command is a new process, and where
# PYTHONDONTWRITEBYTECODE is set it would otherwise compile its imports each time (1.7 s of a
# scheduled run's 2.8 s of imports).
install = $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1) || $(BIN)/pip install --quiet $(1)
# The project's own modules (an editable install), compiled the same way before a benchmark.
compile_project = $(BIN)/python -m compileall -q pipelines gpufleet_app benchmarks > /dev/null

# The app alone for `make demo`; the dev extras (tests, browser, notebooks) for everything else.
$(APP_STAMP): pyproject.toml | $(BIN)/python
	$(call install,-e .)
	touch $(APP_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(call install,-e '.[dev]')
	touch $(STAMP) $(APP_STAMP)

demo: $(APP_STAMP)
	$(BIN)/gpufleet demo

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(compile_project)
	$(BIN)/python -m benchmarks.run --scale $(SCALE)

# The same next-hour update after 1, 2 and 4 weeks of history: does an update cost follow the history?
bench-history: $(STAMP)
	$(compile_project)
	$(BIN)/python -m benchmarks.history --scale $(SCALE)

eval: $(STAMP)
	$(BIN)/gpufleet evaluate --seeds 1..5

# docs/screenshots/*.png: every page at 1500x1000 in headless Chromium, from the demo database
# (`gpufleet demo --no-app` first builds it when SCREENSHOT_DB does not exist).
SCREENSHOT_DB ?= fleet.duckdb
screenshots: $(STAMP)
	test -f $(SCREENSHOT_DB) || $(BIN)/gpufleet --db $(SCREENSHOT_DB) demo --no-app
	$(BIN)/python -m tests.screenshots --db $(SCREENSHOT_DB) --out docs/screenshots

LINTED := pipelines gpufleet_app tests testkit app.py benchmarks

# Lint, the layer contracts (pyproject.toml [tool.importlinter]), types and the generated
# reference docs; all offline.
check: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pipelines.docgen --check

# Regenerate docs/reference/ (CLI help, settings) after changing a command or a setting.
docs: $(STAMP)
	$(BIN)/python -m pipelines.docgen

format-check: $(STAMP)
	$(BIN)/ruff format --check $(LINTED)

clean:
	rm -rf $(VENV) fleet.duckdb demo-data test-artifacts
