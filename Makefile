# The two commands a user needs: `make demo` and `make test`. See README.md. `make dev` is for working on the code.
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Meta-World pins its own MuJoCo: it lives in a venv of its own (scripts/setup-metaworld.sh).
MW_STAMP := .venv-metaworld/.installed
# LIBERO (robosuite 1.4, MuJoCo 3.17) likewise (scripts/setup-libero.sh).
LIBERO_STAMP := .venv-libero/.installed
# LeRobot (SmolVLA) pins torch<2.11 and its own transformers: a venv of its own too (scripts/setup-lerobot.sh). 8.4 GB
# and ~5 minutes, so `make demo` does not build it (prebuilt/smolvla/libero needs operator-installed weights anyway).
LR_STAMP := .venv-lerobot/.installed

.PHONY: demo dev stop worker web test test-fast bench install clean docs demo-setup test-setup system-demo system-test

# The installs are independent (each venv pins its own stack; the Debian packages are the tests' services and
# Chromium): `make demo` and `make test` run them side by side (apt calls take turns on one lock), each one's output
# printed whole when it ends. On a fresh 2-core machine the LeRobot venv alone takes ~5 minutes.
SETUP_JOBS ?= 5
PARALLEL := $(MAKE) --no-print-directory --jobs=$(SETUP_JOBS) --output-sync=target

install: $(STAMP) $(MW_STAMP) $(LIBERO_STAMP) $(LR_STAMP) docs

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	# openpi's client (pyproject.toml says why it goes in without its dependencies)
	$(PY) -m pip install -q --no-deps openpi-client==0.1.2
	touch $(STAMP)

$(MW_STAMP): scripts/setup-metaworld.sh scripts/venv-lib.sh
	bash scripts/setup-metaworld.sh

$(LIBERO_STAMP): scripts/setup-libero.sh scripts/venv-lib.sh
	bash scripts/setup-libero.sh

$(LR_STAMP): scripts/setup-lerobot.sh scripts/venv-lib.sh
	bash scripts/setup-lerobot.sh

demo:
	$(PARALLEL) demo-setup
	PORT=$(PORT) bash scripts/demo.sh

demo-setup: $(STAMP) $(MW_STAMP) $(LIBERO_STAMP) docs system-demo

system-demo:
	bash scripts/setup-system.sh demo

# runserver with DEBUG on and autoreload (foreground) plus one worker; make demo serves with gunicorn instead.
dev: $(STAMP) docs
	PORT=$(PORT) bash scripts/dev.sh

stop:
	bash scripts/stop.sh

# Restart only the demo's worker (after a crash or a code change); the web server keeps running.
worker: $(STAMP)
	bash scripts/worker.sh

# Restart only the demo's web server (gunicorn); the worker keeps running.
web: $(STAMP)
	bash scripts/web.sh

test:
	$(PARALLEL) test-setup
	$(PY) -m pytest --durations=25

test-setup: $(STAMP) $(MW_STAMP) $(LIBERO_STAMP) $(LR_STAMP) docs system-test

system-test:
	bash scripts/setup-system.sh test

test-fast: $(STAMP) docs
	$(PY) -m pytest -m "not live"

bench: $(STAMP)
	$(PY) bench/bench_platform.py

# The manual (docs/ → site/, served under /docs). Strict: a broken link, a missing page or a page left out of the
# navigation fails the build, and so make demo and make test.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean: stop
	rm -rf var site
