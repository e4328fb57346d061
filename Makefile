# Two commands on a fresh machine: `make test` and `make app`. Everything else follows from them.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PORT   ?= 8866
HOST   ?= 127.0.0.1

.PHONY: test bench validate app install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,app]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/run.py

# Measured vs predicted tokens/s on every calibration row (data/calibration_runs.csv);
# `make validate FIT=1` also fits the constants per GPU generation (prints only);
# `make validate FIT=1 WRITE=1` rewrites data/step_model_errors.csv from the held-out errors.
validate: install
	$(PY) benchmarks/validate.py $(if $(FIT),--fit) $(if $(WRITE),--write-errors)

# Serves every notebook under notebooks/ without code cells; the landing page lists the
# apps, and each app links the others. Idle kernels are culled (Voila keeps one per page load).
app: install
	@echo "llmcost workbook: http://$(HOST):$(PORT)/voila/render/review.ipynb (all apps: http://$(HOST):$(PORT)/)"
	cd notebooks && ../$(VENV)/bin/voila . --no-browser --port=$(PORT) --Voila.ip=$(HOST) \
		--strip_sources=True --MappingKernelManager.cull_interval=60 \
		--MappingKernelManager.cull_idle_timeout=300 --MappingKernelManager.cull_connected=True

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis notebooks/reports
