# One-line targets calling scripts. `make test` and `make demo` install and
# start everything they need by themselves.
.PHONY: help install db db-stop citus citus-stop replica replica-stop migrate test lint demo bench expected image-test clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

install:  ## install PostgreSQL + pgvector + plpython3u, .venv/ and .server-python/ (idempotent)
	@scripts/install.sh

db: install  ## create/start the embedded database and migrate it; prints export CODESIFT_DSN=...
	@scripts/db.sh start

db-stop:  ## stop the embedded database
	@scripts/db.sh stop

citus: install  ## start a local Citus cluster (coordinator + 2 workers; CITUS_SOURCE to build Citus); prints export CODESIFT_DSN=...
	@scripts/citus.sh start

citus-stop:  ## stop the local Citus cluster
	@scripts/citus.sh stop

replica: install  ## start a hot-standby replica of the embedded database; prints export CODESIFT_READ_DSN=...
	@scripts/replica.sh start

replica-stop:  ## stop the replica
	@scripts/replica.sh stop

migrate: install  ## apply pending migrations to CODESIFT_DSN (or the embedded database)
	@.venv/bin/codesift migrate

test: install  ## run every test against a real PostgreSQL (starts the embedded one unless CODESIFT_DSN is set)
	@scripts/test.sh

lint: install  ## sqlfluff over sql/, ruff over the Python
	@scripts/lint.sh

demo: install  ## index a sample repository and ask it a question
	@scripts/demo.sh

bench: install  ## run the benchmarks in bench/ (not part of the tests)
	@scripts/bench.sh

image-test: install  ## build the images with podman, run compose.yaml, index, restart mid-embedding, ask over HTTP (not part of make test)
	@scripts/image-test.sh

expected: install  ## rewrite tests/expected/surface.txt from a freshly migrated database
	@[ -n "$${CODESIFT_DSN:-}" ] || scripts/db.sh start >/dev/null; .venv/bin/python -m tests.surface
