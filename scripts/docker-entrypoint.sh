#!/usr/bin/env bash
# Dockerfile.postgres entrypoint: initialise the cluster once, run codesift's
# migrations (the same runner as `codesift migrate`), then serve in the foreground.
set -euo pipefail
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  initdb -D "$PGDATA" -U postgres --pwfile=<(echo "$POSTGRES_PASSWORD") -A scram-sha-256 -E UTF8 --no-locale
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w start -o "-c listen_addresses=''"
  createdb -h /var/run/postgresql codesift
  CODESIFT_DSN="postgresql://postgres:$POSTGRES_PASSWORD@/codesift?host=/var/run/postgresql" \
    python3 -c 'from codesift.cli import main; main()' migrate
  pg_ctl -D "$PGDATA" -w stop
fi
exec postgres -D "$PGDATA"
