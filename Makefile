# Two commands matter: `make run` (local shop on SQLite + a private Redis) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint format install clean chaos bench

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

# The local defaults (DEBUG, demo webhook secrets, metrics directory) live in .env.local, which
# settings reads for every manage.py process here; anything already in the environment wins.
# Only the metrics directory is needed here too: emptied at each start (settings re-creates it).
METRICS_DIR = $(or $(PROMETHEUS_MULTIPROC_DIR),$(shell sed -n 's/^PROMETHEUS_MULTIPROC_DIR=//p' .env.local))
# demo_setup prints the admin login and writes it to var/admin-login.txt (owner-only); the
# Procfile's `login` prints it again once web and worker have started.
run: $(STAMP)
	mkdir -p var/static
	rm -rf "$(METRICS_DIR)"
	$(BIN)/python manage.py ensure_redis
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/honcho start -f Procfile

# With nothing set, tests use SQLite and a throwaway redis-server of their own (tests/support/private_redis.py),
# never the Redis of `make run`; DATABASE_URL points them at PostgreSQL, REDIS_URL at a Redis DB
# (started by ensure_redis if nothing answers there).
test: export SECRET_KEY ?= tests-only-not-secret
test: $(STAMP)
	mkdir -p var/static
	$(if $(REDIS_URL),$(BIN)/python manage.py ensure_redis)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m tests.support.shopify_schema
	$(BIN)/python -m tests.support.private_redis $(BIN)/pytest $(ARGS)

# A replayable shop day with faults, checked against the truth (docs/ARCHITECTURE.md). ARGS="--seed 7 ..."
chaos: export SECRET_KEY ?= chaos-only-not-secret
chaos: $(STAMP)
	$(BIN)/python -m chaos $(ARGS)

# Benchmarks (not tests); results go to docs/PERFORMANCE.md.
bench: export SECRET_KEY ?= bench-only-not-secret
bench: $(STAMP)
	$(BIN)/python -m bench $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) var
