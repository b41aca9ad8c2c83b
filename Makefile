# Two commands do all the set-up on a machine with python3 (3.10+) and make:
#   make demo   creates .venv if missing or older than pyproject.toml, installs, runs the main job
#   make test   the same set-up, then the test suite (notebooks included, in fast mode), ruff and mypy
#   make check  while editing: the fast tests (-m "not slow"), ruff and mypy, in under 3 minutes
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DALI   := $(VENV)/.dali
PEERS  := $(VENV)/.peers
DALI_PLUGIN := nvidia-dali-tf-plugin-cuda120==2.4.0
# The packages go in with uv (a pip-compatible installer that fetches and unpacks in parallel;
# results/NOTES.md has the times) where it can run, else with pip. uv leaves them uncompiled: the
# Python that make runs writes the bytecode of what it imports, once, as it first imports it
# (below), which compiles a third of the files compiling them all would.
UV      := $(VENV)/bin/uv
INSTALL  = { $(UV) pip install --quiet --python $(PY) $(1) || $(PY) -m pip install --quiet $(1); }
# Where PYTHONDONTWRITEBYTECODE is set (as on this project's machines) every process of a run (each
# kernel, child and command) would compile TensorFlow and kit from source again: the make targets
# clear it, so the first process to import a module writes its .pyc and the rest load that.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: demo test check lint lab bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip && { $(PY) -m pip install --quiet uv || echo "uv: not installed; pip installs"; }
	$(call INSTALL,-e '.[dev]')
	@touch $(STAMP)

# The optional dali variant (the `dali` extra, then DALI's TensorFlow plugin: it compiles its op
# against the installed TensorFlow with the system g++, which pip's isolated build cannot see, hence
# --no-build-isolation). Where it cannot be installed the dali tests skip and say why.
$(DALI): $(STAMP)
	@if [ "$$(uname -s)-$$(uname -m)" != Linux-x86_64 ]; then \
	  echo "dali: not installed: NVIDIA publishes DALI for Linux x86_64 only (this is $$(uname -s)-$$(uname -m)); the dali variant's tests skip"; \
	elif $(call INSTALL,-e '.[dali]') && $(PY) -m pip install --quiet --no-build-isolation '$(DALI_PLUGIN)'; then \
	  touch $(DALI); \
	else echo "dali: install failed (above); the dali tests skip. The plugin needs g++: apt-get install g++, then make test again"; fi

# The optional peers of the spectrogram loaders (the `peers` extra: Google Grain and ArrayRecord, for
# the grain variant and `convert --to arrayrecord`). ArrayRecord is published as binary wheels for
# some platforms only; where the extra cannot be installed, the grain tests skip and say why.
$(PEERS): $(STAMP)
	@if $(call INSTALL,-e '.[peers]'); then touch $(PEERS); \
	else echo "peers: install failed (above); the grain variant's tests skip (pip install 'kit[peers]' to retry)"; fi

# Prints its own progress; each notebook's kernel log goes to reports/logs/. Ends with the file
# to open (reports/index.html), the time it took and the size of the kit cache. The peers (Grain,
# DALI: a 424 MB wheel and a plugin built with g++) only when asked, `make demo WITH_PEERS=1`:
# the demo's pages say where a peer was left out and how to add it; make test always installs them.
demo: $(STAMP) $(if $(WITH_PEERS),$(DALI) $(PEERS))
	$(PY) -m kit demo --reports reports

# The browser tests need Debian's chromium (never a downloaded browser): installed here when root.
# pytest-xdist processes: every test has its own kit cache and ports, so they run side by side; the
# longest tests start first (tests/conftest.py), so they end together on short ones, and
# test_distribute.py runs whole on one of them (its module fixtures start once: --dist loadgroup).
# Three of them on two cores: part of each one's time goes on waiting (kernels, JupyterLab, servers
# and child processes starting), which a third fills (times: README). make check's tests hardly
# wait: two are as fast there.
# ruff (kit/, tests/ and lab/) and mypy (kit/) run first; a finding of theirs fails the target once the
# tests have run, so pytest's summary still closes the output (.ci/run).
TEST_WORKERS ?= 3
PYTEST := KIT_FAST=1 $(PY) -m pytest --dist loadgroup
RUFF   := $(VENV)/bin/ruff check kit tests lab
MYPY   := $(VENV)/bin/mypy kit
# Beside ruff and mypy (one core), one process imports what every test worker and kernel imports
# and so writes its bytecode (after a fresh install), so that they do not all compile it at once.
WARM   := $(PY) -c "import tensorflow, keras, pandas, plotly.graph_objects, kit.notebook"
define lint_then
	@$(WARM) >/dev/null 2>&1 & w=$$!; l=0; echo "$(RUFF)"; $(RUFF) || l=1; echo "$(MYPY)"; $(MYPY) || l=1; \
	  wait $$w; echo "$(1)"; \
	  $(1) && { [ $$l = 0 ] || { echo "make: ruff or mypy found problems (above)"; exit 1; }; }
endef

test: $(STAMP) $(DALI) $(PEERS)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || true; }
	$(call lint_then,$(PYTEST) -n $(TEST_WORKERS))

# While editing, in under 3 minutes on 2 cores: the tests not marked slow (the notebooks, the
# browser, child processes, the benches end to end: see `slow` in pyproject.toml), ruff and mypy.
check: $(STAMP) $(PEERS)
	$(call lint_then,$(PYTEST) -n 2 -m 'not slow')

lint: $(STAMP)
	$(RUFF) && $(MYPY)

# JupyterLab on 127.0.0.1 only, with its token login on (the URL it prints carries the token).
# As root (containers, CI machines) Jupyter refuses to start without --allow-root.
# First it installs nbstripout as the git filter for notebooks (scripts/strip_outputs_filter.sh),
# so outputs saved by JupyterLab never show in git diff/status nor get committed; scripts/lab_config.py
# has git status compare a saved notebook by its filtered content.
lab: $(STAMP)
	@sh scripts/strip_outputs_filter.sh "$(abspath $(PY))" && \
	  echo "nbstripout: notebook outputs stay on disk but out of git (see docs/development.md, 'Notebooks')"
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser $(if $(filter 0,$(shell id -u)),--allow-root) \
	  --config=$(abspath scripts/lab_config.py) notebooks/

bench: $(STAMP)
	$(PY) -m kit bench spectrogram

# The kit cache (derived stores, generated bench data) lives outside the repository and is
# left alone here: `python -m kit cache` lists it, `--clean --older-than 7d` trims it.
clean:
	rm -rf reports .pytest_cache
	@echo "The kit cache ($${KIT_CACHE:-~/.cache/kit}) is left alone: '$(PY) -m kit cache' lists it," \
	  "'$(PY) -m kit cache --clean --older-than 7d' (or --max-size 2GB) trims it."
