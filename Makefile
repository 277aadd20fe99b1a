# Two entry points, each building its own project-local virtual environment:
#   make demo   runs examples/pipeline.py
#   make test   runs ruff, mypy --strict and the whole pytest suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/pipeline.py

lint: $(STAMP)
	$(BIN)/ruff check trizmq tests examples benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
