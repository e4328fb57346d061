# Two commands on a fresh machine: `make test` and `make app`. Everything else follows from them.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PORT   ?= 8866

.PHONY: test bench app install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis
