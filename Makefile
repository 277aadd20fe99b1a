# Two entry points, each building its project-local virtual environment(s):
#   make demo   runs examples/pipeline.py
#   make test   runs ruff, mypy --strict and the whole pytest suite on the newest trio
#               (the newest when .venv was built: a fresh clone's is the newest there
#               is), installing Chromium for the browser test and JeroMQ for its interop
#               tests where it can, and omq.rs
#               (pyomq, in .venv-omq from a Python >= 3.12) for its interop tests, then
#               the Spark tests, and meanwhile the suite more times: with the fast path
#               off (TRIZMQ_FASTPATH=0), with it on against the oldest trio that
#               pyproject.toml admits on the oldest CPython found (in a second venv,
#               .venv-trio-oldest), and with it on under each other CPython from 3.10
#               to 3.13 that the machine has (a venv each, .venv-py3.X), all without
#               what none of them changes
#               (SECOND_RUN_SKIPS, below). Their reports follow the Spark tests'; each
#               header names its interpreter and trio and whether the fast path's probes
#               accepted them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the independent draft-API peer (libzmq 4.3.5 inside the npm package zeromq 6)
NODE_STAMP := node_modules/.installed

.PHONY: demo test test-setup lint venv venv-trio-oldest venv-omq venv-pythons venvs-second \
	pythons clean browser prometheus jeromq

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,spark,metrics]'
	touch $(STAMP)

venv: $(STAMP)

# The oldest trio pyproject.toml admits (its "trio>=X" floor), in a second venv of the
# same install less what its run skips (Spark, the docs build); `make test` runs the
# suite against it with the fast path on, as the main venv runs it against the newest.
# It is built on the oldest CPython the suite runs on (OLDEST_PYTHON, below: 3.10 where
# the machine has it), so that one run is the suite on that CPython and on that trio,
# the oldest of both that pyproject.toml admits, and 3.10 needs no run of its own.
TRIO_OLDEST := $(shell sed -n 's/^ *"trio>=\([^",;]*\)".*/\1/p' pyproject.toml)
OLDEST_VENV := .venv-trio-oldest
OLDEST_BIN := $(OLDEST_VENV)/bin
OLDEST_STAMP := $(OLDEST_VENV)/.installed

$(OLDEST_STAMP): pyproject.toml | $(STAMP)
	@[ -n "$(TRIO_OLDEST)" ] || { echo 'no "trio>=" floor found in pyproject.toml'; exit 1; }
	$(OLDEST_PYTHON) -m venv --clear $(OLDEST_VENV)
	$(OLDEST_BIN)/python -m pip install --quiet --upgrade pip
	$(OLDEST_BIN)/python -m pip install --quiet --prefer-binary -e '.[dev,metrics]' \
		'trio==$(TRIO_OLDEST)'
	touch $(OLDEST_STAMP)

venv-trio-oldest: $(OLDEST_STAMP)

# A working interpreter of the first of the versions $(1) found: pyenv's builds (the
# newest patch release of each, under `pyenv root`), then pythonX.Y on the PATH. Each
# candidate must run: a pyenv shim of a version that is not selected only prints an
# error.
find_python = $(shell root=$$(pyenv root 2>/dev/null); \
	{ for v in $(1); do \
		[ -z "$$root" ] || ls -d "$$root"/versions/$$v.*/bin/python$$v 2>/dev/null | sort -Vr; \
	done; \
	for v in $(1); do command -v python$$v; done; } | \
	while read -r py; do \
		"$$py" -c 'import sys' >/dev/null 2>&1 && { echo "$$py"; break; }; \
	done)

# Every CPython from 3.10 to 3.13 other than the main venv's: `make test` runs the
# suite, fast path on, in a venv of each that the machine has (.venv-py3.X), with the
# install of the oldest trio's venv; pip's --prefer-binary takes an older wheel over a
# newer sdist (atheris 3 has no wheel for 3.10, and its sdist needs clang's libFuzzer).
TESTED_PYTHONS := 3.10 3.11 3.12 3.13
MAIN_PYTHON := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
OTHER_PYTHONS := $(filter-out $(MAIN_PYTHON),$(TESTED_PYTHONS))
FOUND_PYTHONS := $(foreach v,$(OTHER_PYTHONS),$(if $(call find_python,$(v)),$(v)))
MISSING_PYTHONS := $(filter-out $(FOUND_PYTHONS),$(OTHER_PYTHONS))
# The oldest of them, when it is older than the main venv's, carries the oldest trio's
# run (above); the others get a venv and a run each.
OLDEST_VERSION := $(filter-out $(MAIN_PYTHON),$(shell printf '%s\n' $(FOUND_PYTHONS) \
	$(MAIN_PYTHON) | sort -V | head -n 1))
OLDEST_PYTHON := $(if $(OLDEST_VERSION),$(call find_python,$(OLDEST_VERSION)),$(PYTHON))
OWN_RUN_PYTHONS := $(filter-out $(OLDEST_VERSION),$(FOUND_PYTHONS))
PY_STAMPS := $(foreach v,$(OWN_RUN_PYTHONS),.venv-py$(v)/.installed)

.venv-py%/.installed: pyproject.toml | $(STAMP)
	$(call find_python,$*) -m venv --clear .venv-py$*
	.venv-py$*/bin/python -m pip install --quiet --upgrade pip
	.venv-py$*/bin/python -m pip install --quiet --prefer-binary -e '.[dev,metrics]'
	touch $@

venv-pythons: $(PY_STAMPS)

pythons:
	@echo "CPythons for the suite: the main venv's $(MAIN_PYTHON) ($(PYTHON));" \
		"found $(or $(foreach v,$(FOUND_PYTHONS),$(v) ($(call find_python,$(v)))),none);" \
		"the oldest trio's run on $(or $(OLDEST_VERSION),$(MAIN_PYTHON));" \
		"skipped, not on this machine: $(or $(MISSING_PYTHONS),none)"

# The second runs' venvs, one editable install of this tree at a time (they would
# share its build files): the oldest trio's, then each other CPython's; -j1, or the
# -j2 of `make test` would build two of them at once.
venvs-second:
	@$(MAKE) --no-print-directory -j1 venv-trio-oldest
	@$(MAKE) --no-print-directory -j1 venv-pythons

# omq.rs, the Rust ZeroMQ, through its Python binding pyomq (which needs Python >= 3.12):
# the peer of tests/interop/test_omq.py (tests/omq/peer.py runs in this venv) and the
# pyomq rows of `python -m benchmarks`. Pinned to 0.27: the tests pin what its wire and
# API do (its PEER's identity frames, its udp datagram's flags byte), and pyomq is alpha,
# free to change them between minor versions. Where no such Python exists the omq.rs
# tests skip and say so (tests/omq_python.py finds this venv, or $TRIZMQ_OMQ_PYTHON).
PYOMQ := pyomq>=0.27,<0.28
OMQ_PYTHON := $(call find_python,3.14 3.13 3.12)
OMQ_VENV := .venv-omq
#: holds the pin it was installed with: a new pin rebuilds the venv
OMQ_STAMP := $(OMQ_VENV)/.installed

venv-omq:
	@if [ -z "$(OMQ_PYTHON)" ]; then \
		echo "no Python >= 3.12 found (pyenv, python3.12/3.13/3.14 on the PATH): the" \
			"omq.rs interop tests and benchmark rows will be skipped"; \
	elif [ "$$(cat $(OMQ_STAMP) 2>/dev/null)" != "$(PYOMQ)" ]; then \
		echo "omq.rs: $(PYOMQ) in $(OMQ_VENV) ($(OMQ_PYTHON))" && \
		$(OMQ_PYTHON) -m venv --clear $(OMQ_VENV) && \
		$(OMQ_VENV)/bin/python -m pip install --quiet --upgrade pip && \
		$(OMQ_VENV)/bin/python -m pip install --quiet '$(PYOMQ)' && \
		echo '$(PYOMQ)' > $(OMQ_STAMP); \
	fi

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
# switch nor the trio version nor the interpreter changes (packaging, the docs build,
# and the sans-I/O protocol core's and routing's tests, tests/zmtp and tests/patterns:
# synchronous, no trio, none of the fast path's bytecode or internals); the CLI's, the
# docs' examples' and the fresh-project plugin's tests (the same sockets in
# subprocesses, mostly start-up time: the docs' examples alone are 80 s of a loaded
# run); and the benchmark and soak smoke tests
# (harnesses, timed by their own deadlines, which sharing the CPUs would stretch); and
# the burst of 600 peers against 20 handshake slots, which holds only while each
# handshake ends within the slots' 0.1 s eviction grace: with three suites and Spark
# side by side on two busy cores it does not, and messages are lost as
# docs/security.md says they can be ("the grace is a time, not a guarantee"). It runs
# in the first run, where nothing else shares the CPUs.
SECOND_RUN_SKIPS := --ignore=tests/spark --ignore=tests/cli --ignore=tests/test_packaging.py \
	--ignore=tests/test_benchmarks_smoke.py --ignore=tests/test_soak_smoke.py \
	--ignore=tests/testing/test_fresh_project.py --ignore=tests/zmtp --ignore=tests/patterns \
	--ignore=tests/test_docs_examples.py \
	--deselect tests/test_docs_build.py \
	--deselect tests/test_crowd.py::test_a_burst_of_peers_larger_than_the_handshake_slots_loses_nobody
# The second runs, a target each: the fast path off, the oldest trio, each other CPython
# found. Each writes its report to .pytest-RUN.log and its exit status beside it, and
# `make test` prints them once the Spark tests are done. (Not .PHONY: make would skip
# the second-run-py% pattern rule for a phony target; no file of these names is made.)
SECOND_RUNS := fastpath-off trio-oldest $(foreach v,$(OWN_RUN_PYTHONS),py$(v))
FASTPATH_OFF_LOG := .pytest-fastpath-off.log
TRIO_OLDEST_LOG := .pytest-trio-oldest.log

second-run-fastpath-off:
	@TRIZMQ_FASTPATH=0 $(BIN)/python -m pytest -p no:cacheprovider $(SECOND_RUN_SKIPS) \
		> $(FASTPATH_OFF_LOG) 2>&1; echo $$? > $(FASTPATH_OFF_LOG).rc

second-run-trio-oldest:
	@$(OLDEST_BIN)/python -m pytest -p no:cacheprovider $(SECOND_RUN_SKIPS) \
		> $(TRIO_OLDEST_LOG) 2>&1; echo $$? > $(TRIO_OLDEST_LOG).rc

second-run-py%:
	@.venv-py$*/bin/python -m pytest -p no:cacheprovider $(SECOND_RUN_SKIPS) \
		> .pytest-py$*.log 2>&1; echo $$? > .pytest-py$*.log.rc

# The second runs' venvs are built while ruff, mypy and the other installs run (after
# the main venv: two editable installs of one tree at once would share its build
# files); those others run one at a time (browser, prometheus and jeromq share apt's
# lock).
# The second runs go SECOND_RUNS_AT_ONCE at a time beside the Spark tests (which mostly
# wait on their JVMs). Each run waits on its sockets and peers far more than it
# computes (3 minutes of CPU in 12 of a loaded machine's time), so more at once would
# end sooner, and stretch the suites' timing tests on two cores: 2 is what was tried.
SECOND_RUNS_AT_ONCE ?= 2
test: $(STAMP)
	@$(MAKE) --no-print-directory -j2 test-setup venvs-second
	@$(MAKE) --no-print-directory pythons
	$(BIN)/python -m pytest --ignore=tests/spark
	@echo "the Spark tests, and meanwhile, $(SECOND_RUNS_AT_ONCE) at a time, the suite with" \
		"the fast path off" \
		"(TRIZMQ_FASTPATH=0), on the oldest trio admitted (trio==$(TRIO_OLDEST))" \
		"and CPython $(or $(OLDEST_VERSION),$(MAIN_PYTHON)), and on" \
		"$(or $(foreach v,$(OWN_RUN_PYTHONS),CPython $(v)),no other CPython)"
	@rm -f $(foreach run,$(SECOND_RUNS),.pytest-$(run).log.rc); \
	printf '%s\n' $(SECOND_RUNS) | \
		xargs -P $(SECOND_RUNS_AT_ONCE) -I RUN $(MAKE) --no-print-directory second-run-RUN \
		& runs=$$!; \
	$(BIN)/python -m pytest -p no:cacheprovider tests/spark; status=$$?; \
	wait $$runs; \
	for run in $(SECOND_RUNS); do \
		rc=$$(cat .pytest-$$run.log.rc 2>/dev/null || echo "missing"); \
		[ "$$rc" = 0 ] || status=1; \
		case $$run in \
		fastpath-off) title="with the fast path off (TRIZMQ_FASTPATH=0)";; \
		trio-oldest) title="on the oldest trio admitted (trio==$(TRIO_OLDEST)), on CPython $(or $(OLDEST_VERSION),$(MAIN_PYTHON)) (.venv-trio-oldest)";; \
		*) title="on CPython $${run#py} (.venv-$$run)";; \
		esac; \
		echo "== the suite $$title, exit status $$rc:"; \
		cat .pytest-$$run.log; \
	done; \
	$(MAKE) --no-print-directory pythons; \
	exit $$status

test-setup:
	@for goal in lint $(NODE_STAMP) browser prometheus jeromq venv-omq; do \
		$(MAKE) --no-print-directory $$goal || exit 1; \
	done

clean:
	rm -rf $(VENV) $(OLDEST_VENV) $(OMQ_VENV) .venv-py3.* .pytest_cache .mypy_cache .ruff_cache \
		.pytest-*.log .pytest-*.log.rc
