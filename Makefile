# Two entry points, each building its project-local virtual environment(s):
#   make demo   runs examples/pipeline.py
#   make test   runs ruff, mypy --strict and the whole pytest suite on the newest trio
#               (the newest when .venv was built: a fresh clone's is the newest there
#               is), installing Chromium for the browser test and JeroMQ for its
#               interop tests where it can, then the Spark tests, and meanwhile the
#               suite twice more: with the fast path off
#               (TRIZMQ_FASTPATH=0), and with it on against the oldest trio that
#               pyproject.toml admits (in a second venv, .venv-trio-oldest), both
#               without what neither changes (SECOND_RUN_SKIPS, below). Their reports
#               follow the Spark tests'; each header names its trio and whether the
#               fast path's probes of trio's internals accepted it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the independent draft-API peer (libzmq 4.3.5 inside the npm package zeromq 6)
NODE_STAMP := node_modules/.installed

.PHONY: demo test test-setup lint venv venv-trio-oldest clean browser prometheus jeromq

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,spark,metrics]'
	touch $(STAMP)

venv: $(STAMP)

# The oldest trio pyproject.toml admits (its "trio>=X" floor), in a second venv of the
# same install less what its run skips (Spark, the docs build); `make test` runs the
# suite against it with the fast path on, as the main venv runs it against the newest.
TRIO_OLDEST := $(shell sed -n 's/^ *"trio>=\([^",;]*\)".*/\1/p' pyproject.toml)
OLDEST_VENV := .venv-trio-oldest
OLDEST_BIN := $(OLDEST_VENV)/bin
OLDEST_STAMP := $(OLDEST_VENV)/.installed

$(OLDEST_STAMP): pyproject.toml | $(STAMP)
	@[ -n "$(TRIO_OLDEST)" ] || { echo 'no "trio>=" floor found in pyproject.toml'; exit 1; }
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_BIN)/python -m pip install --quiet --upgrade pip
	$(OLDEST_BIN)/python -m pip install --quiet -e '.[dev,metrics]' 'trio==$(TRIO_OLDEST)'
	touch $(OLDEST_STAMP)

venv-trio-oldest: $(OLDEST_STAMP)

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

# Debian's JeroMQ 0.3.6 (a ZMTP 2.0 peer, /usr/share/java/jeromq.jar) for the interop
# tests of tests/interop/test_jeromq.py, which compile tests/jeromq/Peer.java with the
# JDK's javac; installed where this runs as root with apt-get; elsewhere those tests
# skip and say how.
jeromq:
	@if [ -f /usr/share/java/jeromq.jar ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get install -y -q libjeromq-java >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libjeromq-java >/dev/null 2>&1)) || \
		echo "could not install libjeromq-java: the JeroMQ interop tests will be skipped"; \
	else \
		echo "jeromq.jar not found (apt-get install libjeromq-java): the JeroMQ interop tests will be skipped"; \
	fi
	@command -v javac >/dev/null 2>&1 || \
		echo "javac not found (a JDK): the JeroMQ interop tests will be skipped"

# What the second runs leave out: Spark (run once, beside them); what neither the
# switch nor the trio version changes (packaging, the docs build, and the sans-I/O
# protocol core's and routing's tests, tests/zmtp and tests/patterns: synchronous, no
# trio); the CLI's and the fresh-project plugin's tests (the same sockets in
# subprocesses, mostly start-up time); and the benchmark and soak smoke tests
# (harnesses, timed by their own deadlines, which sharing the CPUs would stretch); and
# the burst of 600 peers against 20 handshake slots, which holds only while each
# handshake ends within the slots' 0.1 s eviction grace: with three suites and Spark
# side by side on two busy cores it does not, and messages are lost as
# docs/security.md says they can be ("the grace is a time, not a guarantee"). It runs
# in the first run, where nothing else shares the CPUs.
SECOND_RUN_SKIPS := --ignore=tests/spark --ignore=tests/cli --ignore=tests/test_packaging.py \
	--ignore=tests/test_benchmarks_smoke.py --ignore=tests/test_soak_smoke.py \
	--ignore=tests/testing/test_fresh_project.py --ignore=tests/zmtp --ignore=tests/patterns \
	--deselect tests/test_docs_build.py \
	--deselect tests/test_crowd.py::test_a_burst_of_peers_larger_than_the_handshake_slots_loses_nobody
# the reports of the runs with the fast path off and on the oldest trio, shown once
# the Spark tests are done
FASTPATH_OFF_LOG := .pytest-fastpath-off.log
TRIO_OLDEST_LOG := .pytest-trio-oldest.log

# The oldest trio's venv is built while ruff, mypy and the other installs run (after
# the main venv: two editable installs of one tree at once would share its build
# files); those others run one at a time (browser, prometheus and jeromq share apt's
# lock).
test: $(STAMP)
	@$(MAKE) --no-print-directory -j2 test-setup venv-trio-oldest
	$(BIN)/python -m pytest --ignore=tests/spark
	@echo "the Spark tests, and meanwhile the suite with the fast path off" \
		"(TRIZMQ_FASTPATH=0) and the suite on the oldest trio admitted (trio==$(TRIO_OLDEST))"
	@TRIZMQ_FASTPATH=0 $(BIN)/python -m pytest -p no:cacheprovider $(SECOND_RUN_SKIPS) \
		> $(FASTPATH_OFF_LOG) 2>&1 & off=$$!; \
	$(OLDEST_BIN)/python -m pytest -p no:cacheprovider $(SECOND_RUN_SKIPS) \
		> $(TRIO_OLDEST_LOG) 2>&1 & oldest=$$!; \
	$(BIN)/python -m pytest -p no:cacheprovider tests/spark; spark=$$?; \
	wait $$off; offrc=$$?; \
	wait $$oldest; oldestrc=$$?; \
	echo "== the suite with the fast path off (TRIZMQ_FASTPATH=0), exit status $$offrc:"; \
	cat $(FASTPATH_OFF_LOG); \
	echo "== the suite on the oldest trio admitted (trio==$(TRIO_OLDEST)), exit status $$oldestrc:"; \
	cat $(TRIO_OLDEST_LOG); \
	[ $$spark -eq 0 ] && [ $$offrc -eq 0 ] && [ $$oldestrc -eq 0 ]

test-setup:
	@for goal in lint $(NODE_STAMP) browser prometheus jeromq; do \
		$(MAKE) --no-print-directory $$goal || exit 1; \
	done

clean:
	rm -rf $(VENV) $(OLDEST_VENV) .pytest_cache .mypy_cache .ruff_cache $(FASTPATH_OFF_LOG) \
		$(TRIO_OLDEST_LOG)
