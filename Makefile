# agentlog — the two commands of the README's Quick start, and their parts.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup lint types pytest browser postgres bench clean

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; assert sys.version_info >= (3, 11), "agentlog needs Python >= 3.11"'
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

## make run: set up, capture this machine's agent history (or a demo corpus) and search it
run: $(STAMP)
	scripts/run.sh

## make test: set up (browser and PostgreSQL server included), then lint, type-check and run every test
test: $(STAMP) browser postgres
	$(BIN)/ruff check eventlog projections readers cli tests bench
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check eventlog projections readers cli tests bench

types: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q

browser:
	scripts/install-browser.sh

postgres:
	scripts/install-postgres.sh

bench: $(STAMP)
	$(BIN)/python bench/eventlog.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
