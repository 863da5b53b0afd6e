# The README's two commands are `make demo` and `make test`; both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-fast lint format install clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --constraint constraints.txt --editable '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/kq demo

# The suite runs against the embedded API server and a real kube-apiserver + etcd, built once
# from pinned Go modules into ~/.cache/kq (tests/realk8s/build.sh; a few minutes cold, cached).
test: $(STAMP)
	bash tests/realk8s/build.sh >/dev/null
	KQ_REALK8S=1 $(BIN)/pytest --backend=both $(PYTEST_ARGS)

# Embedded backend only, no Go build: the quick loop while developing.
test-fast: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

# tools/complexity.py: no function above cyclomatic complexity 25 as radon counts it (issue 23).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python tools/complexity.py --max 25 kq plugins

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
