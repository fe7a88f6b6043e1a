#!/usr/bin/env bash
# `make image-test`: build the images for real and run them together, with podman.
#
#   1. the Debian base (scripts/image-base.sh), then Dockerfile.postgres and Dockerfile.app
#   2. compose.yaml's postgres (migrated on start); a token and an index of a small git
#      repository made here, both through the app container (the worker service's loader)
#   3. the worker and the MCP HTTP server; postgres restarted, then the worker, while the
#      worker embeds; the queue must drain to zero with every count as it was
#   4. a question over HTTP with the token (the MCP SDK client of .venv/), and without it
#
# Everything it writes (podman's storage, the repository, the transcript) lives in
# IMAGE_TEST_DIR (default /tmp/codesift-image-test); the transcript is transcript.txt
# there (or IMAGE_TEST_LOG). IMAGE_TEST_KEEP=1 leaves the containers running.
# Needs root on a machine without podman (it installs podman, runc and mmdebstrap with
# apt-get), network access to Debian's archive and PyPI, and `make install` (.venv/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${IMAGE_TEST_DIR:-/tmp/codesift-image-test}
mkdir -p "$work"
log=${IMAGE_TEST_LOG:-$work/transcript.txt}
exec > >(tee "$log") 2>&1

project=codesift-image-test
compose_version=1.6.0  # podman-compose, from PyPI
files=${IMAGE_TEST_FILES:-120}  # files of the generated repository (30 functions each)
say() { printf '\n== %s  [%s]\n' "$*" "$(date -u +%H:%M:%S)"; }
die() { printf 'image-test: FAILED: %s\n' "$*" >&2; exit 1; }
seconds_since() { echo $(($(date +%s) - $1)); }

# --- tools -------------------------------------------------------------------------
missing=()
for tool in podman runc mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "install ${missing[*]} (apt-get install podman runc mmdebstrap)"
  say "installing ${missing[*]} from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    podman runc crun conmon netavark aardvark-dns mmdebstrap uidmap iptables >/dev/null
fi
if [ ! -x "$work/venv/bin/podman-compose" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q --index-url https://pypi.org/simple "podman-compose==$compose_version"
fi
compose() { "$work/venv/bin/podman-compose" -p "$project" -f "$root/compose.yaml" "$@"; }
[ -x .venv/bin/python ] || die "run make install first (.venv/ holds the MCP client)"

# Podman's storage stays in $work. The engine's settings suit a machine without systemd
# (cgroupfs, events in a file) and without CAP_SYS_RESOURCE (containers get the limits
# this shell has instead of podman's higher defaults, which they could not raise to); on
# cgroup v1 or hybrid hierarchies runc, since crun refuses them.
mkdir -p "$work/storage" "$work/run"
cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
[ "$nofile" = unlimited ] && nofile=1048576
runtime=crun
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || runtime=runc
cat >"$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "$runtime"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_STORAGE_CONF=$work/storage.conf CONTAINERS_CONF=$work/containers.conf
say "podman $(podman version --format '{{.Client.Version}}'), runtime $runtime, storage $work/storage"

# --- build ---------------------------------------------------------------------------
secret=()
ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$ca" ] && secret=(--secret "id=pip_cert,src=$ca")
# What an earlier run left (its containers, and its volume with other passwords).
cleanup() {
  local ids
  ids=$(podman ps -a -q --filter "label=com.docker.compose.project=$project")
  # shellcheck disable=SC2086  # one argument per container id
  [ -z "$ids" ] || podman rm -f -t 5 --depend $ids >/dev/null
  podman volume rm -f "${project}_pgdata" >/dev/null 2>&1 || true
}
cleanup

say "base image (mmdebstrap trixie)"
start=$(date +%s)
scripts/image-base.sh
echo "base: $(seconds_since "$start") s"
for image in postgres app; do
  say "build Dockerfile.$image"
  start=$(date +%s)
  podman build -q "${secret[@]}" -f "Dockerfile.$image" -t "localhost/codesift-$image:latest" .
  echo "build $image: $(seconds_since "$start") s"
done
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep codesift

# --- start, token, index -------------------------------------------------------------
export CODESIFT_POSTGRES_PASSWORD=pg-$RANDOM$RANDOM CODESIFT_APP_PASSWORD=app-$RANDOM$RANDOM
export CODESIFT_LOADER_PASSWORD=loader-$RANDOM$RANDOM
CODESIFT_MCP_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export CODESIFT_MCP_PORT
container() { podman ps -a -q --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=$1"; }
psql_() {
  podman exec -e PGPASSWORD="$CODESIFT_POSTGRES_PASSWORD" "$(container postgres)" \
    psql -h /var/run/postgresql -U postgres -d codesift -Atq -v ON_ERROR_STOP=1 -c "$1"
}
wait_for_postgres() {
  for _ in $(seq 120); do
    podman exec "$(container postgres)" pg_isready -q -h 127.0.0.1 -d codesift 2>/dev/null && return 0
    sleep 1
  done
  podman logs "$(container postgres)" | tail -20
  die "postgres did not accept TCP connections within 120 s"
}

say "compose up postgres"
compose up -d postgres >/dev/null
start=$(date +%s)
wait_for_postgres
echo "postgres initialised, migrated and serving in $(seconds_since "$start") s"
podman logs "$(container postgres)" 2>&1 | grep -E '^codesift-postgres|applied|migrat' | head -20

say "a git repository of $files files"
repo=$work/repo
rm -rf "$repo"
mkdir -p "$repo/src"
cat >"$repo/src/settings.py" <<'PY'
"""Reading the service's settings."""
import tomllib


def parse_config(path):
    """Read the TOML configuration file at `path` and return its [server] table."""
    with open(path, "rb") as f:
        return tomllib.load(f)["server"]
PY
python3 - "$repo/src" "$files" <<'PY'
import sys
folder, files = sys.argv[1], int(sys.argv[2])
for f in range(files):
    with open(f"{folder}/module_{f:03}.py", "w") as out:
        out.write(f'"""Generated module {f}."""\n\n')
        for g in range(30):
            out.write(
                f"def compute_{f}_{g}(value):\n"
                f'    """Scale value by {f * 31 + g} and add the offset of module {f}."""\n'
                f"    return value * {f * 31 + g} + {f}\n\n\n"
            )
PY
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=image-test -c user.email=image-test@localhost commit -q -m "generated"
chmod -R a+rX "$repo"

say "index and token through the app container"
start=$(date +%s)
compose run -T --rm --no-deps -v "$repo:/src:ro" worker index /src --name demo --tenant demo ||
  die "index through the app container failed"
echo "index: $(seconds_since "$start") s"
token=$(compose run -T --rm --no-deps worker token create --tenant demo --label image-test | tail -n1) ||
  die "token create through the app container failed"
case "$token" in csk_*) echo "token created: ${token:0:8}...";; *) die "token create printed: $token";; esac

model_sql="(select value from codesift.settings where key = 'embedding_model')"
counts() {
  psql_ "select (select count(*) from codesift.code_symbols) || ' ' ||
    (select count(*) from codesift.code_symbols where embedding_model = $model_sql) || ' ' ||
    (select count(*) from codesift.blobs) || ' ' ||
    (select count(*) from codesift.blobs where embedding_model = $model_sql)"
}
read -r symbols0 _ blobs0 _ <<<"$(counts)"
echo "indexed: $symbols0 symbols, $blobs0 files, nothing embedded yet"
[ "$symbols0" -gt 0 ] || die "no symbols indexed"

# --- embed through restarts ------------------------------------------------------------
embedded() { read -r s es b eb <<<"$(counts)"; echo $((es + eb)); }
wait_for_more_than() {  # $1 embedded rows, while the backlog is not empty yet
  for _ in $(seq 600); do
    local now
    now=$(embedded 2>/dev/null || echo 0)
    if [ "$now" -gt "$1" ]; then
      [ "$now" -lt $((symbols0 + blobs0)) ] || die "the backlog drained before the restart: raise IMAGE_TEST_FILES"
      echo "$now"
      return 0
    fi
    sleep 0.5
  done
  die "embedding made no progress"
}
say "compose up worker and mcp"
compose up -d worker mcp >/dev/null
done1=$(wait_for_more_than 0)
echo "embedding: $done1 of $((symbols0 + blobs0)) rows"

say "restart postgres mid-embedding"
compose restart postgres >/dev/null  # stop_signal SIGINT: fast shutdown
wait_for_postgres
done2=$(embedded)
echo "postgres back; embedded so far: $done2"
done3=$(wait_for_more_than "$done2")
echo "the worker goes on: $done3"

say "restart the worker mid-embedding"
compose restart worker >/dev/null  # SIGTERM; stop_grace_period covers the batch in flight
done4=$(embedded)
echo "worker back; embedded so far: $done4"

say "wait for the queue to drain"
start=$(date +%s)
while :; do
  read -r s es b eb <<<"$(counts)"
  [ "$es" -eq "$s" ] && [ "$eb" -eq "$b" ] && break
  [ "$(seconds_since "$start")" -lt 900 ] || die "backlog not drained after 900 s ($es/$s symbols, $eb/$b files)"
  sleep 2
done
echo "drained in $(seconds_since "$start") s after the worker's restart"
echo "symbols: $s indexed before, $s now, $es embedded; files: $blobs0 before, $b now, $eb embedded"
if [ "$s" -ne "$symbols0" ] || [ "$b" -ne "$blobs0" ]; then
  die "counts changed: $symbols0 -> $s symbols, $blobs0 -> $b files"
fi
compose run -T --rm --no-deps worker status --tenant demo
say "worker log"
podman logs "$(container worker)" 2>&1 | tail -20

# --- HTTP ---------------------------------------------------------------------------------
say "MCP over HTTP on 127.0.0.1:$CODESIFT_MCP_PORT"
url=http://127.0.0.1:$CODESIFT_MCP_PORT/mcp
for _ in $(seq 60); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url" || true)
  [ "$code" = 401 ] && break
  sleep 1
done
echo "no token: HTTP $code"
[ "$code" = 401 ] || die "expected 401 without a token, got $code"
CODESIFT_TOKEN=$token .venv/bin/python - "$url" <<'PY'
import asyncio, os, sys

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    headers = {"Authorization": f"Bearer {os.environ['CODESIFT_TOKEN']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        question = "read the TOML configuration file"
        result = await session.call_tool("search_code", {"question": question, "token_budget": 400})
        text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        print(f"search_code {question!r}:\n{text}")
        if result.is_error or "demo:src/settings.py" not in text:
            sys.exit("image-test: FAILED: the answer does not cite demo:src/settings.py")


asyncio.run(main(sys.argv[1]))
PY

say "app containers: user and root filesystem"
for service in mcp worker; do
  podman inspect "$(container "$service")" \
    --format "$service: user {{.Config.User}}, read-only root {{.HostConfig.ReadonlyRootfs}}"
done
if podman exec "$(container mcp)" sh -c 'touch /opt/codesift/x' 2>/dev/null; then
  die "the app container could write to its root filesystem"
fi
echo "mcp: writing /opt/codesift/x refused"

[ -n "${IMAGE_TEST_KEEP:-}" ] || cleanup
say "image-test passed"
