# The README's two commands are `make demo` and `make test`; both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-fast bench lint format install compile clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --constraint constraints.txt --editable '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The admission core compiled with mypyc, in place, where a C compiler and Python's headers are
# present; otherwise (or with KQ_PURE=1) kq runs from its sources (tools/compile_core.py).
# Rebuilt only when a source of it changed; `make demo` and `make test` run it first.
compile: $(STAMP)
	$(BIN)/python tools/compile_core.py --if-stale

demo: compile
	$(BIN)/kq demo

# The suite runs against the embedded API server and a real kube-apiserver + etcd, built once
# from pinned Go modules into ~/.cache/kq (tests/realk8s/build.sh; a few minutes cold, cached).
test: compile
	bash tests/realk8s/build.sh >/dev/null
	KQ_REALK8S=1 $(BIN)/pytest --backend=both $(PYTEST_ARGS)

# Embedded backend only, no Go build: the quick loop while developing.
test-fast: compile
	$(BIN)/pytest $(PYTEST_ARGS)

# Every performance figure in one summary: mode A, B2 on the embedded API server and, with
# --real, on a real kube-apiserver (benchmarks/all.py). E.g. BENCH_ARGS="--scale 0.1 --real"
# or BENCH_ARGS="--scale 0.1 --compare main".
bench: compile
	$(BIN)/python benchmarks/all.py $(BENCH_ARGS)

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
	[ ! -x $(BIN)/python ] || $(BIN)/python tools/compile_core.py --clean
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

.PHONY: helm test-helm image test-image

# helm, built from pinned Go modules into ~/.cache/kq (tests/deploy_helm/build.sh; ~3 min cold).
helm:
	bash tests/deploy_helm/build.sh

# The Helm chart (deploy/helm/kq) alone: lint, the same objects as deploy/, server dry runs.
test-helm: $(STAMP)
	bash tests/realk8s/build.sh >/dev/null
	KQ_REALK8S=1 $(BIN)/pytest --backend=real tests/deploy_helm $(PYTEST_ARGS)

# kq's image from the Containerfile, offline: a debootstrapped Debian base and buildah (root).
# Tags localhost/kq:latest and writes build/kq-image.tar (docker-archive) to load or push.
image:
	bash deploy/image/build.sh --save build/kq-image.tar

# Builds the image and runs it (podman, read-only root) against a real kube-apiserver.
test-image: $(STAMP)
	bash tests/realk8s/build.sh >/dev/null
	command -v podman >/dev/null && command -v runc >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends podman runc; }
	KQ_IMAGE=1 KQ_REALK8S=1 $(BIN)/pytest tests/image $(PYTEST_ARGS)
