# kvviz: `make run` starts the dashboard on http://localhost:8501; `make test` lints and runs every test.
# Both create .venv from the system python3 (3.11) and install the pinned requirements. Neither installs
# kvviz itself: the app, the tests (pytest.ini's pythonpath) and the benchmarks (run as modules) all
# import it from this folder, so a change is live without a build. `pip install .` is for the `kvviz`
# command elsewhere.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
export DEBIAN_FRONTEND := noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# kvviz's matrices are small and a server has many users: one BLAS thread each is faster.
export OPENBLAS_NUM_THREADS ?= 1
# glibc gives every thread that allocates a heap of its own (up to 8 per core) and keeps what is freed
# there; a server parses and measures uploads in many script threads. Two heaps hold less, and give
# more back (python -m bench.bench_classroom --uploads measures it).
export MALLOC_ARENA_MAX ?= 2

.PHONY: run lint test test-fast bench chromium clean

$(PY):
	$(PYTHON) -m venv $(VENV) || { apt-get update && apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV); }

# A stamp named after a hash of the pins says the venv holds them: an edit of a requirement file installs
# again, while a fresh clone beside a venv that holds the same pins (newer files, same text) does not.
RUN_DEPS := $(VENV)/.run-deps-$(shell cat requirements.txt | sha1sum | cut -c1-12)
DEV_DEPS := $(VENV)/.dev-deps-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)

$(RUN_DEPS): | $(PY)
	$(PY) -m pip install -q -r requirements.txt
	rm -f $(VENV)/.run-deps*
	touch $@

$(DEV_DEPS): | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	rm -f $(VENV)/.run-deps* $(VENV)/.dev-deps*
	touch $@ $(RUN_DEPS)

# Every compiled kernel first (minutes on a fresh checkout, seconds after), then the server: no visitor
# waits for a compile. It prints how long the compile took, and a ready line once the server answers.
run: $(RUN_DEPS)
	$(PY) -m ui.kit.serve --server.headless true --server.port $(PORT)

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
chromium:
	@test -x /usr/bin/chromium || { apt-get update && apt-get install -y chromium; }

# Ruff (configured in pyproject.toml): the lint rules, and the code as ruff's formatter writes it.
lint: $(DEV_DEPS)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Lint first, then two workers (pytest-xdist), one per core: the browser tests mostly wait on a
# server or Chromium, so the core tests run beside them.
test: lint chromium
	$(PY) -m pytest -n 2 --dist worksteal

# The core and AppTest tests only, without the browser.
test-fast: lint
	$(PY) -m pytest -n 2 --dist worksteal --ignore=tests/e2e

# Each benchmark is a module of the bench package, run from here so it imports kvviz and tests.e2e.
bench: $(DEV_DEPS)
	@for b in bench/bench_*.py; do m=bench.$$(basename $$b .py); echo "== $$m"; $(PY) -m $$m || exit 1; done

clean:
	rm -rf $(VENV) test-results .pytest_cache build dist kvviz.egg-info
