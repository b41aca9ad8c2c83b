# Two commands do all the set-up on a machine with python3 (3.10+) and make:
#   make demo   creates .venv if missing or older than pyproject.toml, installs, runs the main job
#   make test   the same set-up, then the test suite (notebooks included, in fast mode)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DALI   := $(VENV)/.dali
DALI_PLUGIN := nvidia-dali-tf-plugin-cuda120==2.4.0

.PHONY: demo test lab bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# The optional dali variant (the `dali` extra, then DALI's TensorFlow plugin: it compiles its op
# against the installed TensorFlow with the system g++, which pip's isolated build cannot see, hence
# --no-build-isolation). Where it cannot be installed the dali tests skip and say why.
$(DALI): $(STAMP)
	@if [ "$$(uname -s)-$$(uname -m)" != Linux-x86_64 ]; then \
	  echo "dali: not installed: NVIDIA publishes DALI for Linux x86_64 only (this is $$(uname -s)-$$(uname -m)); the dali variant's tests skip"; \
	elif $(PY) -m pip install --quiet -e '.[dali]' && $(PY) -m pip install --quiet --no-build-isolation '$(DALI_PLUGIN)'; then \
	  touch $(DALI); \
	else echo "dali: install failed (above); the dali tests skip. The plugin needs g++: apt-get install g++, then make test again"; fi

demo: $(STAMP) $(DALI)
	$(PY) -m kit demo --reports reports

test: $(STAMP) $(DALI)
	KIT_FAST=1 $(PY) -m pytest

# JupyterLab on 127.0.0.1 only, with its token login on (the URL it prints carries the token).
# As root (containers, CI machines) Jupyter refuses to start without --allow-root.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

bench: $(STAMP)
	$(PY) -m kit bench spectrogram

clean:
	rm -rf reports .pytest_cache
