"""The app image's requirements (requirements/app.txt, locked into app.lock) stay in step
with what the loader is developed and tested with (dev.txt) and with the server's lock: a
package added to dev.txt for the loader, or a pin moved there, fails here until app.txt
and app.lock follow (requirements/lock.sh)."""

import re
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements"
# dev.txt's test and lint tools, and what only the tests and benchmarks import: not in
# the app image
DEV_ONLY = {
    "pytest",
    "pytest-postgresql",
    "pytest-xdist",
    "execnet",
    "sqlfluff",
    "ruff",
    "mypy",
    "pgvector",
    "jedi",
    "parso",
}
PIN = re.compile(r"^([A-Za-z0-9._-]+)(\[[^\]]*\])?==([^\s\\;]+)")


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def pins(file: str) -> dict[str, str]:
    """name -> version of the file's own `name==version` lines (not its -r includes)."""
    found = {}
    for line in (REQUIREMENTS / file).read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            found[_name(match.group(1))] = match.group(3)
    return found


def test_app_pins_are_dev_pins():
    dev, app = pins("dev.txt"), pins("app.txt")
    assert app, "app.txt pins nothing"
    moved = {
        name: (version, dev.get(name)) for name, version in app.items() if dev.get(name) != version
    }
    assert not moved, f"app.txt pins differ from dev.txt (app, dev): {moved}"


def test_every_runtime_package_of_dev_is_in_app():
    dev, app = pins("dev.txt"), pins("app.txt")
    missing = sorted(set(dev) - DEV_ONLY - set(app))
    assert not missing, f"in dev.txt but not in app.txt (add, then requirements/lock.sh): {missing}"


def test_app_lock_holds_app_txt_server_txt_and_the_model():
    lock = pins("app.lock")
    wanted = {**pins("server.txt"), **pins("model.txt"), **pins("app.txt")}
    stale = {
        name: (version, lock.get(name))
        for name, version in wanted.items()
        if lock.get(name) != version
    }
    assert not stale, f"app.lock is stale (wanted, locked): run requirements/lock.sh: {stale}"


def test_app_lock_agrees_with_server_lock():
    lock, server = pins("app.lock"), pins("server.lock")
    differ = {n: (v, lock[n]) for n, v in server.items() if n in lock and lock[n] != v}
    assert not differ, f"app.lock and server.lock pin differently (server, app): {differ}"


def test_every_app_lock_pin_has_hashes():
    text = (REQUIREMENTS / "app.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n\n", 1)[-1])
    unhashed = [e.split()[0] for e in entries if PIN.match(e) and "--hash=sha256:" not in e]
    assert not unhashed, f"pins without hashes in app.lock: {unhashed}"
