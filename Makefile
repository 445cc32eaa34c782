# intentd: developer entry points. Every target installs what it needs first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NPM_STAMP := node_modules/.installed

.PHONY: help install ops-tools infra-up infra-down infra-status migrate demo modal-demo test unit lint typecheck check bench openapi asyncapi clean

help:
	@echo "make demo       run the daemon on local infrastructure, watch intents get funded, then"
	@echo "                sign in to the merchant console (the link it prints; Ctrl-C ends it)"
	@echo "make modal-demo a demo shop on http://127.0.0.1:8090 paying through the payment modal"
	@echo "make test       lint, typecheck and the whole test suite against real services"
	@echo "make infra-up   start PostgreSQL (if absent), the Kafka dev broker, Tansu, two anvil chains"
	@echo "make infra-down stop what infra-up started"
	@echo "make bench      run the benchmarks in bench/"
	@echo "make openapi    regenerate docs/openapi.json (the served OpenAPI document)"
	@echo "make asyncapi   regenerate docs/asyncapi.json (the Kafka topics' AsyncAPI 3 document)"
	@echo "make ops-tools  install promtool, prometheus, systemd-analyze, chromium (Debian) if missing"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# npm workspaces: clients/react (@intentd/react) and the React 18 and 19 its tests build against
NPM_WORKSPACES := clients/react/package.json tests/react/react18/package.json tests/react/react19/package.json
$(NPM_STAMP): package.json package-lock.json $(NPM_WORKSPACES)
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

install: $(STAMP) $(NPM_STAMP)

# promtool, prometheus and systemd-analyze (Debian packages) for the checks of deploy/;
# installs only what is missing (apt-get, as root or through sudo).
ops-tools:
	@bash .ci/install-ops-tools

infra-up: install
	$(PY) -m intentd_dev.devinfra up

infra-down: $(STAMP)
	$(PY) -m intentd_dev.devinfra down

infra-status: $(STAMP)
	$(PY) -m intentd_dev.devinfra status

migrate: infra-up
	$(VENV)/bin/intentd --config config/local.toml migrate

demo: infra-up
	$(PY) -m intentd_dev.demo --config config/local.toml --stay

# The payment modal's demo shop (docs/payment-modal.md): runs intentd and the shop.
modal-demo: infra-up
	$(PY) -m intentd_dev.modal_demo --config config/local.toml

# lint-imports checks the layer contracts of pyproject.toml ([tool.importlinter]) on
# the code in src/ (PYTHONPATH: also right from a git worktree sharing another's venv).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	PYTHONPATH=src $(VENV)/bin/lint-imports --no-logo

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP) $(NPM_STAMP) ops-tools
	$(VENV)/bin/pytest tests/unit -q

test: infra-up lint typecheck ops-tools
	$(VENV)/bin/pytest -q

bench: infra-up
	$(PY) -m bench

# docs/openapi.json: the served OpenAPI document (a test keeps them equal).
openapi: $(STAMP)
	PYTHONPATH=src $(PY) -m intentd.api.openapi.dump docs/openapi.json

# docs/asyncapi.json: the Kafka topics' messages, from intentd.contract (a test keeps them equal).
asyncapi: $(STAMP)
	PYTHONPATH=src $(PY) -m intentd.contract.asyncapi_dump docs/asyncapi.json

clean:
	rm -rf $(VENV) node_modules clients/react/dist .local .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
