# stichtag — the two commands for a fresh machine are `make serve` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.DEFAULT_GOAL := help
.PHONY: help setup serve test test-quick test-long lint typecheck bench clean browser schemas image image-builder docs

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "stichtag needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,train]'
	touch $(STAMP)

setup: $(STAMP) ## create the virtual environment, install, build the ONNX models (idempotent)
	$(BIN)/stichtag models build

serve: setup ## set up, load the demo tenant (key shown once), run the server on the embedded PostgreSQL
	$(BIN)/stichtag demo
	$(BIN)/stichtag serve

# One xdist worker per core (STICHTAG_TEST_WORKERS overrides); a test module stays on one
# worker, so its module fixtures are built once (docs/testing.md, "Parallel runs").
WORKERS ?= $(or $(STICHTAG_TEST_WORKERS),auto)
PYTEST_PARALLEL := -n $(WORKERS) --dist loadfile

test: setup browser lint typecheck ## set up, lint, type-check and run the whole test suite (parallel; prints the 25 slowest)
	$(PY) -m pytest -q $(PYTEST_PARALLEL) --durations=25

test-quick: setup ## the inner loop: unit tests and the fast integration tests (not the slow-marked modules)
	$(PY) -m pytest -q $(PYTEST_PARALLEL) -m "not slow"

browser: ## Debian's chromium + chromedriver for the console tests (root; skipped if present)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } || \
		echo "warning: could not install chromium; tests/e2e needs /usr/bin/chromium and chromedriver"

test-long: setup ## the long profiles (docs/testing.md): model-based 900 examples, fuzz 200, hostile 1M lines, replica, crash loop 50+3
	STICHTAG_MODEL_EXAMPLES=900 STICHTAG_FUZZ_EXAMPLES=200 STICHTAG_HOSTILE_LONG=1 STICHTAG_REPLICA_LONG=1 \
		$(PY) -m pytest -q $(PYTEST_PARALLEL) --durations=10 tests/integration/test_bitemporal_model.py \
		tests/integration/test_fuzz_api.py tests/integration/test_hostile_documents.py tests/integration/test_replica.py
	$(PY) bench/crash_loop.py --server-kills 50 --postmaster-kills 3 --seed $${SEED:-9}

# lint and typecheck need the installed tools only, not the models that setup builds.
lint: $(STAMP) ## ruff over app, tests and bench (rules and their reasons: pyproject.toml)
	$(BIN)/ruff check app tests bench setup.py

typecheck: $(STAMP) ## mypy --strict on app/stichtag/ and the fakes of the ports (tests/fakes.py)
	$(BIN)/mypy

schemas: $(STAMP) ## regenerate schemas/ (JSON Schemas, openapi.json) from the msgspec types
	$(PY) -m stichtag.api.published schemas

docs: $(STAMP) ## build docs/ as a site into site/ (mkdocs-material; every link and anchor checked)
	$(PY) -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: setup ## ingest benchmark on the shared law corpus (prints a table)
	$(PY) bench/bench_ingest.py

clean: ## remove the virtual environment and local data
	rm -rf $(VENV) .data site

.PHONY: crashloop
crashloop: setup ## crash loop: >= 50 server + 3 postmaster SIGKILLs under load (prints a table)
	$(PY) bench/crash_loop.py --server-kills $${KILLS:-50} --postmaster-kills $${PG_KILLS:-3} --seed $${SEED:-9}

.PHONY: two-node
two-node: setup ## two server processes on one database: same as-of answers, one log (prints a table)
	$(PY) -m pytest -q -s tests/integration/test_two_nodes.py

.PHONY: replica
replica: setup ## primary + streaming standby on loopback, a node reading from it: exact as-of reads (long variant)
	STICHTAG_REPLICA_LONG=1 $(PY) -m pytest -q -s tests/integration/test_replica.py

.PHONY: load
load: setup ## load test: mixed traffic over two tenants, memory, fairness under a flood (LOAD_ARGS='--minutes 3')
	$(PY) -m pip install --quiet -e '.[load]'
	$(PY) bench/bench_load.py $(LOAD_ARGS)

.PHONY: fuzz
fuzz: setup ## schemathesis over every operation, 200 examples each; table of failures per check
	STICHTAG_FUZZ_EXAMPLES=$${STICHTAG_FUZZ_EXAMPLES:-200} $(PY) -m pytest -q -s tests/integration/test_fuzz_api.py

.PHONY: hostile
hostile: setup ## hostile documents (100 MB, million lines, deep Markdown, NUL, bidi, injection); table
	STICHTAG_HOSTILE_LONG=1 $(PY) -m pytest -q -s tests/integration/test_hostile_documents.py

# The container image is built with Debian's podman (rootful) from a base that is itself
# built from Debian packages (mmdebstrap), so no container registry is needed; the flags
# this host needs are explained in ops/image/podman.sh and ops/image/containers.conf.
# runc, not Debian's default crun: crun refuses cgroup v1/v2 hybrid hosts.
IMAGE ?= localhost/stichtag:latest
image-builder: ## Debian's podman, runc and mmdebstrap for `make image` (root; skipped if present)
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v mmdebstrap >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc containernetworking-plugins mmdebstrap; } || \
		{ echo "error: could not install podman, runc and mmdebstrap from Debian (needs root and apt)" >&2; exit 1; }

image: image-builder $(STAMP) ## build the container image localhost/stichtag:latest (base from Debian packages), smoke-test it
	IMAGE=$(IMAGE) nice -n 15 ops/image/build.sh
	STICHTAG_IMAGE_TEST=1 STICHTAG_IMAGE=$(IMAGE) $(PY) -m pytest -q -s -p no:cacheprovider tests/integration/test_image.py
