# Two entry points, each building its own project-local virtual environment:
#   make demo   runs examples/pipeline.py
#   make test   runs ruff, mypy --strict and the whole pytest suite, then the suite again
#               (but Spark and the CLI) with the fast path off (TRIZMQ_FASTPATH=0)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the independent draft-API peer (libzmq 4.3.5 inside the npm package zeromq 6)
NODE_STAMP := node_modules/.installed

.PHONY: demo test lint venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,spark]'
	touch $(STAMP)

venv: $(STAMP)

# Installed from package-lock.json into ./node_modules; where npm is missing the
# draft-interop tests skip and say so.
$(NODE_STAMP): package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --no-audit --no-fund --loglevel=error && touch $(NODE_STAMP); \
	else \
		echo "npm not found: the Node.js draft-peer tests will be skipped"; \
	fi

demo: $(STAMP)
	$(BIN)/python examples/pipeline.py

lint: $(STAMP)
	$(BIN)/ruff check trizmq tests examples benchmarks
	$(BIN)/mypy

test: lint $(NODE_STAMP)
	$(BIN)/python -m pytest
	TRIZMQ_FASTPATH=0 $(BIN)/python -m pytest -q -p no:cacheprovider \
		--ignore=tests/spark --ignore=tests/cli --deselect tests/test_docs_build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
