# The two commands: `make demo` and `make test`. Both set up .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

# The suite runs on every core (pytest-xdist; 2 workers on a 2-core machine, where 4
# were no quicker: the suite is bound by CPU), each worker stealing tests from the others
# once its own run out (the real agent CLIs' tests take up to half a minute each). Its
# temp folders go to tmpfs where there is one: the tests write thousands of small SQLite
# stores, and with their fsyncs on a disk the suite took 1.3-1.5x as long (2026-12-01).
# The tests that hold a hook to an agent's timeout, or a cost to a measured ratio
# (marked `timing`), run afterwards in one process, with no other test on the cores.
TEST_WORKERS ?= auto
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm)
PYTEST_ARGS ?= -n $(TEST_WORKERS) --dist worksteal
# Bytecode is written even where the shell says not to (PYTHONDONTWRITEBYTECODE): pytest
# keeps each test module it has rewritten for its asserts in __pycache__, and without that
# every worker and the timing run rewrote all of them again: 9 s of each one's 11 s of
# collection (2026-12-02).
TEST_ENV := PYTHONDONTWRITEBYTECODE= $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))
# The timing run collects only the modules that mark a test `timing` (every such mark is
# written `mark.timing` in its module): collecting the whole suite to keep 85 of its
# 2,000-odd tests took 3-4 s of the run's ~75 (2026-12-02).
TIMING_MODULES = $(shell grep -rlE --include='test_*.py' 'mark\.timing' tests | sort)

.PHONY: demo test lint bench clean

# The pip that comes with Python 3.11+ installs this project as it is: upgrading it
# first would only make both commands wait longer.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,mcp,tui,team]'
	touch $(STAMP)

# The demo needs only the package: no test tools, no MCP SDK, no panel (when `make test` has
# installed everything already, there is nothing to add).
$(DEMO_STAMP): $(BIN)/python pyproject.toml
	if [ $(STAMP) -nt pyproject.toml ]; then :; else \
		$(BIN)/python -m pip install --quiet -e .; fi
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/ken demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench docs
	$(BIN)/ruff format --check src tests bench docs
	$(BIN)/mypy
	$(TEST_ENV) $(BIN)/pytest $(PYTEST_ARGS) -m "not timing"
	$(TEST_ENV) $(BIN)/pytest -m timing $(TIMING_MODULES)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench docs
	$(BIN)/mypy

# Store sizes bench/scale_bench.py measures search, recall and pack at (each store is
# built once into $(BENCH_CACHE) and kept): `make bench BENCH_SIZES=100000,1000000`.
BENCH_SIZES ?= 10000,100000
BENCH_CACHE ?= /var/tmp/kenning-bench

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/hook_bench.py
	BENCH_SIZES=$(BENCH_SIZES) BENCH_CACHE=$(BENCH_CACHE) $(BIN)/python bench/scale_bench.py
	$(BIN)/python bench/mcp_bench.py
	$(BIN)/python bench/recall_bench.py
	$(BIN)/python bench/locked_bench.py
	$(BIN)/python bench/tokens_bench.py
	$(BIN)/python bench/redact_bench.py
	$(BIN)/python bench/collect_bench.py
	$(BIN)/python bench/panel_bench.py
	$(BIN)/python bench/lessons_bench.py
	$(BIN)/python bench/team_load.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
