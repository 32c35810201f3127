# Every target sets up .venv as needed; a fresh machine needs only python3 and pip
# (and node/npm for the Cosmos DB emulator the storage tests run against; Chromium for the
# inspector's browser tests, `make browser`).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Every development dependency pinned, transitive ones too (its header says how it is made).
LOCK := requirements-dev.lock

.PHONY: test lint typecheck pytest dist lock serve bench emulator agui-client browser clean

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c $(LOCK) pip
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# Resolve '.[dev]' afresh (the newest releases pyproject.toml and constraints.txt allow) in a
# throwaway venv and write its pip freeze below the lock's header (the lines before the
# first blank one). Review the diff and run `make test` before committing it.
lock:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet --upgrade pip; \
	"$$tmp/venv/bin/python" -m pip install --quiet -c constraints.txt -e '.[dev]'; \
	sed -n '1,/^$$/p' $(LOCK) > "$$tmp/lock"; \
	"$$tmp/venv/bin/python" -m pip freeze --all --exclude-editable >> "$$tmp/lock"; \
	mv "$$tmp/lock" $(LOCK); \
	echo "$(LOCK): $$(grep -c '==' $(LOCK)) pins"

# The distribution: sdist, then the wheel built from it, into a throwaway folder with the
# locked setuptools (no download), each checked by twine (metadata, README rendering).
dist: $(STAMP)
	@set -e; out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	$(BIN)/python -m build --no-isolation --outdir "$$out" . >"$$out/build.log" 2>&1 || \
		{ cat "$$out/build.log"; exit 1; }; \
	$(BIN)/python -m twine --no-color check --strict "$$out"/*.tar.gz "$$out"/*.whl

emulator:
	@if [ ! -f tools/cosmos-emulator/package.json ]; then \
		echo "no emulator launcher in this tree"; \
	elif command -v npm >/dev/null 2>&1; then \
		cd tools/cosmos-emulator && npm ci --silent --no-audit --no-fund; \
	else echo "npm not found: Cosmos DB tests will be skipped"; fi

agui-client:
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/e2e/agui_client && npm ci --silent --no-audit --no-fund; \
	else echo "npm not found: the AG-UI client tests will be skipped"; fi

# The inspector's browser tests (tests/inspector) drive the distribution's Chromium through
# Playwright, never a browser Playwright downloads: install the `chromium` package when it is
# missing (Debian/Ubuntu; as root, or through sudo). Not part of `make test`, which installs
# nothing system-wide; without it those tests are skipped (CHECKFLOW_REQUIRE_BROWSER=1: fail).
browser:
	@if command -v chromium >/dev/null 2>&1 || [ -x "$${CHECKFLOW_CHROMIUM:-/usr/bin/chromium}" ]; then \
		:; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "apt-get not found: install Chromium (or set CHECKFLOW_CHROMIUM) for the inspector's browser tests"; \
	else \
		echo "installing the chromium package for the inspector's browser tests"; \
		sudo=; [ "$$(id -u)" -eq 0 ] || { command -v sudo >/dev/null 2>&1 && sudo="sudo -n"; }; \
		{ $$sudo apt-get update -qq && \
		  $$sudo apt-get install -y -qq --no-install-recommends chromium; } >/dev/null 2>&1 || \
		echo "could not install the chromium package: the inspector's browser tests cannot run"; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check checkflow tests bench samples
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: $(STAMP) emulator agui-client lint pytest

HOST ?= 127.0.0.1
PORT ?= 8000

serve: $(STAMP)
	$(BIN)/python -m checkflow serve samples.approval:workflow --inspector --host $(HOST) --port $(PORT)

# Every benchmark. bench/engine.py also times its peer frameworks when the separate
# .venv-bench exists (see bench/requirements-peers.txt) and skips them with a note otherwise;
# bench/cosmos.py starts its own emulator (node + `make emulator`).
bench: $(STAMP) emulator
	$(BIN)/python bench/codec_and_storage.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/hosting.py
	$(BIN)/python bench/cosmos.py
	$(BIN)/python bench/instructions.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
