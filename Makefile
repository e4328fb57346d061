# Two commands on a fresh machine: `make test` and `make app`. Everything else follows from them.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
# pytest caches its rewritten test modules in __pycache__ (git-ignored) unless the environment
# forbids bytecode files: allowed for the test runs, collection takes 5 s instead of 12
PYTEST  = env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
# both cores of a 2-core machine, a test module per worker at a time (its module fixtures are
# built once; each worker starts the browser tests' server at most once); XDIST= runs in one
# process. Not loadgroup: pytest-xdist 3.8 cannot set its group suffix on pytest 9's node ids.
XDIST  ?= -n 2 --dist loadfile
PORT   ?= 8866
HOST   ?= 127.0.0.1

.PHONY: test test-fast test-grid lint bench validate app install clean plotly-bundle docs screenshot \
	identity

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,app,docs]"
	touch $@

install: $(VENV)/.installed

# Every test but the whole-catalog grids, sampling tests at a fixed budget (tests/budget.py),
# the browser tests in Debian's chromium: within 15 minutes on a 2-core machine, install
# included. The 25 slowest tests are printed so a test that grows shows at once.
test: install
	$(PYTEST) -q -m "not grid" $(XDIST) --durations=25

# The developer's loop: no browser, server, notebook run, wheel build or grid (markers in
# tests/conftest.py); within 60 s on a 2-core machine.
test-fast: install
	$(PYTEST) -q -m "not slow and not browser and not grid" $(XDIST)

# The whole-catalog grids (every model x GPU x sizing mode, ...) and every sampling test with
# its full budget; not in CI (about 35 minutes on 2 cores): run it when the catalog or the review
# chain changes.
test-grid: install
	LLMCOST_BUDGET=full $(PYTEST) -q -m "grid or hypothesis or sampled" $(XDIST) --durations=25

# ruff (pyflakes, pycodestyle, import order: pyproject.toml [tool.ruff]) and mypy on the
# formula layers, every function annotated ([tool.mypy]); CI runs it before the tests
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# One table of timings, each section's rows printed as it ends; `make bench NO_BROWSER=1` leaves
# out the Voila load in chromium (benchmarks/load.py, several minutes on 2 cores)
bench: install
	$(PY) benchmarks/run.py $(if $(NO_BROWSER),--no-browser)

# Measured vs predicted tokens/s on every calibration row (data/calibration_runs.csv), then the
# review's and the napkin's GPU-hours against published whole runs (data/whole_runs.csv; that
# section alone: `.venv/bin/python benchmarks/validate.py --whole-runs`);
# `make validate FIT=1` also fits the constants per GPU generation (prints only);
# `make validate FIT=1 WRITE=1` rewrites data/step_model_errors.csv from the held-out errors.
# Every run prints each table's and each whole run's error beside the stored snapshot
# (benchmarks/step_model_snapshot.csv); `make validate SNAPSHOT=1` rewrites the snapshot.
# Last, benchmarks/serving_check.py: published serving TTFT, TPOT and tokens/s per GPU
# (data/serving_measurements.csv) against the serving model, per source, engine and load shape.
validate: install
	$(PY) benchmarks/validate.py $(if $(FIT),--fit) $(if $(WRITE),--write-errors) \
		$(if $(SNAPSHOT),--write-snapshot)
	$(PY) benchmarks/stack_fit.py
	$(PY) benchmarks/serving_check.py

# Every number of the review (the covering points and the whole grid) and of the validation
# tables, to JSON: `make identity OUT=before.json` on the parent commit, `OUT=after.json` on
# the refactoring, then `$(PY) benchmarks/identity.py --compare before.json after.json`
# (exits 1 on any difference above 1e-9 relative). POINTS=1: the 14 covering points only.
identity: install
	$(PY) benchmarks/identity.py --out $(or $(OUT),identity.json) $(if $(POINTS),--points-only)

# HTML into docs/_build/html; warnings are errors (CI runs it). The CLI reference, the data
# files' schema and the validation tables are generated from the code at build time.
docs: install
	rm -f docs/_build/.built-clean; $(VENV)/bin/sphinx-build -b html -W --keep-going -q docs \
		docs/_build/html && touch docs/_build/.built-clean

# Serves the apps of notebooks/ (python -m llmcost.server: Voila with the workbook's
# defaults): / opens the landing app, preheated kernels paint the first page fast, at most
# MAX_KERNELS pages' kernels (then a "busy, retry in a minute" page), a closed page's kernel
# is shut down after ~90 s. HOST=0.0.0.0 shares it on your LAN: there is no
# authentication, anyone who reaches the port can use it.
MAX_KERNELS ?= 24
app: install
	@echo "llmcost workbook: http://$(HOST):$(PORT)/"
	cd notebooks && ../$(PY) -m llmcost.server . --no-browser --port=$(PORT) --Voila.ip=$(HOST) \
		--CappedKernelManager.max_kernels=$(MAX_KERNELS)

# Rewrites notebooks/img/review.png, the README's picture: serves the workbook as `make app`
# does, opens the README's review link in Debian's headless chromium at 1400 x 900 and saves
# the viewport once the headline and plots have painted (benchmarks/screenshot.py; about 15 s).
# The PNG notes the link and headline it shows: tests/cli/test_readme.py fails when the README's
# review link or the review's figures change and the picture was not retaken.
screenshot: install
	$(PY) benchmarks/screenshot.py

# Rebuilds llmcost/apps/static/plotly-llmcost.min.js, plotly.js with only the trace types the
# apps draw (llmcost/apps/static/README.md). Needs node and npm; the result is committed, so
# `make app` and `make test` need neither.
plotly-bundle: install
	PY=$(PY) bash llmcost/apps/static/build.sh

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis docs/_build docs/generated docs/api
