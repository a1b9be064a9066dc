# Two entry points for a fresh machine with Python 3.11+ and make:
#   make demo   install what the demo needs, then run the workflow on the bundled corpus (SQLite)
#               and print the article
#   make test   install with dev extras, then lint, type-check and run the tests (4 at once)
#   make check  the fast loop: lint, type-check and the in-process tests needing no PostgreSQL
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OBJECTIVE ?= Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs

.PHONY: demo test check install lint typecheck pytest schemas clean

$(BIN)/python:
	@echo "creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)

# What the demo needs: handoff and the packages it runs on (make install adds the dev tools).
$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	@echo "installing handoff and the packages it runs on into $(VENV)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "installing handoff with the dev tools (tests, linters, the dev server) into $(VENV)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	@touch $@ $(VENV)/.runtime

install: $(VENV)/.installed

demo: $(VENV)/.runtime
	@echo "running the workflow on the bundled corpus (SQLite under .handoff/); the article follows"
	$(BIN)/handoff run "$(OBJECTIVE)" --show

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# A whole run fails when the graph has an edge none of its tests walked (tests/routes.py).
WHOLE_RUN := --routes-walked

# Four test processes at once: many tests wait on a subprocess, a server or a SIGKILL, so
# four keep two cores busy; --dist loadgroup keeps the tests sharing a server on one of them.
pytest: install
	$(BIN)/python -m pytest -n 4 --dist loadgroup $(WHOLE_RUN)

test: lint typecheck pytest

# The fast loop while adapting the template: no PostgreSQL, no server, no subprocess, no SIGKILL.
check: lint typecheck
	$(BIN)/python -m pytest -q -n auto -m "not postgres and not server and not slow and not e2e" $(WHOLE_RUN)

schemas: install
	$(BIN)/python -m contracts

clean:
	rm -rf $(VENV) .handoff .pytest_cache .mypy_cache .ruff_cache

.PHONY: bench
bench: install  # every benchmark at full size (minutes); one: $(BIN)/python -m bench.p1_overhead [--quick]
	$(BIN)/python -m bench
