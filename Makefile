# The two commands a user needs: `make demo` and `make test`. See README.md.
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo stop test test-fast bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	PORT=$(PORT) bash scripts/demo.sh

stop:
	bash scripts/stop.sh

test: $(STAMP)
	$(PY) -m pytest

test-fast: $(STAMP)
	$(PY) -m pytest -m "not live"

bench: $(STAMP)
	$(PY) bench/bench_platform.py

clean: stop
	rm -rf var
