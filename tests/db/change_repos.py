"""A small Python repository with two commits, indexed as two refs ('base', the default,
and 'head'), and another tenant's repository of the same name: what the impact and diff
context tests read (test_impact.py, test_diff_context.py, tests/mcp/test_mcp_impact.py)."""

import psycopg
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

BASE = {
    "pkg/__init__.py": "from pkg.transport import send_request\n",
    "pkg/transport.py": (
        "import json\n\n\n"
        "def encode(data):\n"
        "    return json.dumps(data)\n\n\n"
        "def send_request(method, url):\n"
        "    body = encode((method, url))\n"
        "    return body\n"
    ),
    "pkg/client.py": (
        "from pkg.transport import send_request\n\n\n"
        "class Client:\n"
        "    def get(self, url):\n"
        "        return send_request('GET', url)\n\n"
        "    def post(self, url):\n"
        "        return send_request('POST', url)\n\n\n"
        "def make_client():\n"
        "    return Client()\n"
    ),
    "pkg/api.py": (
        "from pkg.client import make_client\n\n\n"
        "def fetch(url):\n"
        "    return make_client().get(url)\n"
    ),
    "pkg/unrelated.py": "def alone():\n    return 1\n",
    "tests/test_client.py": (
        "from pkg.client import Client\n\n\ndef test_get():\n    assert Client().get('x')\n"
    ),
    "tests/test_api.py": (
        "from pkg.api import fetch\n\n\ndef test_fetch():\n    assert fetch('x')\n"
    ),
    "README.md": "# pkg\n\nA client.\n",
}

# the head commit: encode changes (a body line), send_request gains a line, a new function,
# Client.post is deleted, an import added at the top of client.py
HEAD = {
    "pkg/transport.py": (
        "import json\n\n\n"
        "def encode(data):\n"
        "    return json.dumps(data, sort_keys=True)\n\n\n"
        "def send_request(method, url):\n"
        "    body = encode((method, url))\n"
        "    assert body\n"
        "    return body\n\n\n"
        "def new_helper():\n"
        "    return encode(None)\n"
    ),
    "pkg/client.py": (
        "import os\n"
        "from pkg.transport import send_request\n\n\n"
        "class Client:\n"
        "    def get(self, url):\n"
        "        return send_request('GET', url)\n\n\n"
        "def make_client():\n"
        "    return Client()\n"
    ),
}

OTHER = {"pkg/transport.py": "def send_request():\n    return 'other tenant'\n"}


def index_change_repos(dsn, make_repo) -> dict:
    with psycopg.connect(dsn) as conn:
        root = make_repo(BASE, name="py")
        base = git(root, "rev-parse", "HEAD").strip()
        git(root, "tag", "base")
        write_files(root, HEAD)
        head = commit(root, "change")
        git(root, "tag", "head")
        index_repository(
            conn, root, name="py", tenant="t1", ref="base", embed=False, show_progress=False
        )
        index_repository(
            conn, root, name="py", tenant="t1", ref="head", embed=False, show_progress=False
        )
        other = make_repo(OTHER, name="other")
        git(other, "tag", "base")
        index_repository(
            conn, other, name="py", tenant="t2", ref="base", embed=False, show_progress=False
        )
        # a git diff of the change, as a pull request gives it
        diff = git(root, "diff", "base", "head")
    return {"base": base, "head": head, "diff": diff, "root": str(root)}
