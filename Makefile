# Two commands on a fresh machine with Python 3.11 and pip:
#   make demo   set up .venv, build the sample session, run three queries
#   make test   set up .venv, run the tests and the tutorial notebooks
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: setup demo test bench notebooks clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "loom-nb needs Python 3.11+, found " + sys.version' 
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/loom-nb demo --out build/demo-session

test: $(STAMP)
	$(BIN)/python -m pytest -q --doctest-modules loom_nb tests
	# LOOM_CHAT_REPLAY: the chat tutorial replays its recording even where an Ollama server runs;
	# TMPDIR: the folders the tutorials make with tempfile go in one folder, removed after the run
	scratch=$$(mktemp -d) && LOOM_CHAT_REPLAY=1 TMPDIR=$$scratch $(BIN)/python -m pytest -q --nbval-lax --nbval-current-env \
		--nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks; status=$$?; rm -rf "$$scratch"; exit $$status

# Rebuild the tutorial notebooks from tools/make_*.py and save them executed.
notebooks: $(STAMP)
	for f in tools/make_*.py; do $(BIN)/python $$f; done
	$(BIN)/python tools/execute_notebooks.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
