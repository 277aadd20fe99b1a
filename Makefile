# Two entry points, each building its own project-local virtual environment:
#   make demo   runs examples/pipeline.py
#   make test   runs ruff, mypy --strict and the whole pytest suite (installing Chromium
#               for the browser test where it can), then the suite again with the
#               fast path off (TRIZMQ_FASTPATH=0), but for what does not reach the
#               I/O path: Spark, the CLI, packaging, the docs build, the benchmark
#               and soak smoke tests (harnesses, timed by their own deadlines, which
#               sharing the CPUs with Spark would stretch), the fresh-project plugin
#               tests and the sans-I/O protocol core's (tests/zmtp: no runtime, no
#               fast path). That second run goes alongside the Spark tests, which
#               spend most of their time waiting for their JVMs and batches; its
#               report follows theirs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the independent draft-API peer (libzmq 4.3.5 inside the npm package zeromq 6)
NODE_STAMP := node_modules/.installed

.PHONY: demo test lint venv clean browser prometheus

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,spark,metrics]'
	touch $(STAMP)

venv: $(STAMP)

# Installed from package-lock.json into ./node_modules (zeromq.js, the libzmq peer of
# the draft and ws:// interop tests; playwright-core, which drives Chromium for the
# browser test); where npm is missing those tests skip and say so.
$(NODE_STAMP): package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --no-audit --no-fund --loglevel=error && touch $(NODE_STAMP); \
	else \
		echo "npm not found: the Node.js draft-peer tests will be skipped"; \
	fi

demo: $(STAMP)
	$(BIN)/python examples/pipeline.py

lint: $(STAMP)
	$(BIN)/ruff check trizmq tests examples benchmarks _trizmq_entry.py
	$(BIN)/mypy

# Debian's Chromium for the browser test of examples/browser_dashboard.py, installed
# where this runs as root with apt-get; elsewhere the test skips and says how.
browser:
	@if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get install -y -q chromium >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) || \
		echo "could not install chromium: the browser test will be skipped"; \
	else \
		echo "chromium not found (apt-get install chromium): the browser test will be skipped"; \
	fi

# Debian's Prometheus server for the test that has it scrape a trizmq process
# (tests/metrics/test_prometheus_server.py), installed where this runs as root with
# apt-get; elsewhere that test skips and says how.
prometheus:
	@if command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get install -y -q prometheus >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q prometheus >/dev/null 2>&1)) || \
		echo "could not install prometheus: the Prometheus server test will be skipped"; \
	else \
		echo "prometheus not found (apt-get install prometheus): the Prometheus server test will be skipped"; \
	fi

# the report of the run with the fast path off, shown once the Spark tests are done
FASTPATH_OFF_LOG := .pytest-fastpath-off.log

test: lint $(NODE_STAMP) browser prometheus
	$(BIN)/python -m pytest --ignore=tests/spark
	@echo "the Spark tests, and meanwhile the suite with the fast path off (TRIZMQ_FASTPATH=0)"
	@TRIZMQ_FASTPATH=0 $(BIN)/python -m pytest -q -p no:cacheprovider \
		--ignore=tests/spark --ignore=tests/cli --ignore=tests/test_packaging.py \
		--ignore=tests/test_benchmarks_smoke.py --ignore=tests/test_soak_smoke.py \
		--ignore=tests/testing/test_fresh_project.py --ignore=tests/zmtp \
		--deselect tests/test_docs_build.py > $(FASTPATH_OFF_LOG) 2>&1 & off=$$!; \
	$(BIN)/python -m pytest -p no:cacheprovider tests/spark; spark=$$?; \
	wait $$off; offrc=$$?; \
	echo "== the suite with the fast path off (TRIZMQ_FASTPATH=0), exit status $$offrc:"; \
	cat $(FASTPATH_OFF_LOG); \
	[ $$spark -eq 0 ] && [ $$offrc -eq 0 ]

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(FASTPATH_OFF_LOG)
