# Two commands do all the set-up on a machine with python3 (3.10+) and make:
#   make demo   creates .venv if missing or older than pyproject.toml, installs, runs the main job
#   make test   the same set-up, then the test suite (notebooks included, in fast mode)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lab bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m kit demo --reports reports

test: $(STAMP)
	KIT_FAST=1 $(PY) -m pytest

# JupyterLab on 127.0.0.1 only, with its token login on (the URL it prints carries the token).
# As root (containers, CI machines) Jupyter refuses to start without --allow-root.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

bench: $(STAMP)
	$(PY) -m kit bench spectrogram

clean:
	rm -rf reports .pytest_cache
