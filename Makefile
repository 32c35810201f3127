# Every target sets up .venv as needed; a fresh machine needs only python3 and pip
# (and node/npm for the Cosmos DB emulator the storage tests run against).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck pytest serve bench emulator agui-client clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

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
	$(BIN)/python -m checkflow serve samples.approval:workflow --host $(HOST) --port $(PORT)

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
