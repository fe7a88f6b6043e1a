"""Issue 16's pure functions: reading a long question (question.py), matching mentioned
paths (mentions.py), the fusion alternatives, the feature settings, the file-kind prior and
the file evidence (recency.py)."""

import time

import pytest
from codesift_db import file_kinds
from codesift_db.pipeline import features, fusion, mentions, question, recency, subject_scope

REPORT = """Session.resolve_redirects copies the original request for every redirect

When a 303 See Other follows a 307, the method changes back. `Session.resolve_redirects`
starts each iteration from the original request, and `prepare_method` is never re-run.

```python
import requests
s = requests.Session()
r = s.get("http://example.org/redirect")
```

Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/requests/sessions.py", line 120, in resolve_redirects
    resp = self.send(prepared)
  File "/usr/lib/python3/site-packages/requests/adapters.py", line 330, in send
    raise ConnectionError(e)
requests.exceptions.ConnectionError: [Errno 111] Connection refused

### Environment
- [x] I searched the existing issues
- requests: 2.3.0
- Python: 3.8.1
"""


class FakePlpy:
    """Raises like plpy.error (the only plpy call features.parse makes)."""

    class Error(Exception):
        pass

    def error(self, message, hint=None, sqlstate=None):
        raise self.Error(message)


def test_a_short_question_is_read_as_written():
    reading = question.read("where are redirects followed?")
    assert not reading.long and not reading.signal and not reading.mentions
    assert reading.digest == ""
    terms, weights = question.weighted_terms(reading)
    assert weights is None and "redirects" in terms


def test_a_short_question_still_names_code():
    reading = question.read("Fix TypeError in ``sphinx.ext.coverage`` logging via `Config.read`")
    assert not reading.long and not reading.signal and reading.digest == ""
    assert reading.mentions[:2] == ["sphinx/ext/coverage", "sphinx/ext"]
    assert "Config.read" in reading.names
    assert question.read("improve some latex.py code").mentions == ["latex.py"]
    # a short question's CamelCase and snake_case words are names too, not its prose
    bare = question.read("how does ShouldBindBodyWith cache the body in time_format")
    assert not bare.mentions and bare.names == ["ShouldBindBodyWith", "time_format"]
    assert question.read("where are redirects followed?").names == []
    # a frame in one line names a file, not its function alone
    frame = question.read('File "src/app/views.py", line 3, in render')
    assert frame.mentions == ["src/app/views.py"] and "render" not in frame.names
    terms, weights = question.weighted_terms(reading)
    assert weights is None


def test_a_short_question_looks_up_a_bounded_number_of_names():
    text = " ".join(f"`pkg{i}.mod{i}.Cls{i}` snake_{i} in dir{i}/f{i}.py" for i in range(60))
    text = text[: question.LONG_QUERY_CHARS - 1]
    reading = question.read(text)
    assert not reading.long and "\n" not in text
    assert 0 < len(reading.names) <= question.MAX_NAMES
    assert 0 < len(reading.mentions) <= question.MAX_MENTIONS


def test_a_short_issue_of_title_and_body_is_read_as_a_report():
    issue = (
        "Display the fixture scope with `--fixtures`\n"
        "Today the only way to learn a fixture's scope is the docs or the source."
    )
    assert len(issue) < question.LONG_QUERY_CHARS
    reading = question.read(issue)
    assert reading.long and "fixtures" in reading.signal
    assert reading.digest.startswith("Display the fixture scope")
    assert not reading.wants_docs  # its title asks for code; its body only names the docs
    assert question.read("Typo in the docs\nThe tutorial says `sesion`.").wants_docs
    _, weights = question.weighted_terms(reading)
    assert weights is not None
    # one line stays a short question, a trailing line break or blank lines around it too
    for one_line in ("where are redirects followed?\n", "\n  where are redirects followed?  \n\n"):
        assert not question.read(one_line).long


def test_a_long_report_yields_identifiers_frames_errors_and_paths():
    reading = question.read(REPORT)
    assert reading.long
    for name in ("resolve_redirects", "prepare_method", "ConnectionError", "send"):
        assert name in reading.signal
    assert any(m.endswith("requests/sessions.py") for m in reading.mentions)
    assert any(m.endswith("requests/adapters.py") for m in reading.mentions)
    # the title and the first paragraph lead the digest; the boilerplate is not in it
    assert reading.digest.startswith("Session.resolve_redirects copies")
    assert "303 See Other" in reading.digest
    assert "searched the existing issues" not in reading.digest


def test_a_long_report_names_definitions_by_frames_backticks_and_dots():
    reading = question.read(REPORT)
    for name in ("resolve_redirects", "send", "Session.resolve_redirects", "prepare_method"):
        assert name in reading.names
    # prose words, receivers and version numbers name nothing
    assert "iteration" not in reading.names and not any(
        n.startswith("self.") for n in reading.names
    )
    assert "3.8" not in reading.names
    # what only a frame names: looked up in the frame's file (feature frames), not by name
    assert reading.frame_only == ["resolve_redirects", "send"]


IPYTHON_REPORT = """pairplot fails on a frame with two header rows

Calling `pairplot` on it raises:

```
[c:\\me\\plots\\grid.py](file:///C:/me/plots/grid.py) in pairplot(data, hue)
-> 2144         grid.map_diag(histplot, **diag_kws)

[c:\\me\\plots\\grid.py](file:///C:/me/plots/grid.py) in map_diag(self, func)
-> 1490             vector = self.data[var]

/opt/conda/lib/python3.10/site-packages/pandas/core/frame.py in __getitem__(self, key)
KeyError: "['1'] not in index"
```
"""


def test_traceback_frames_are_read_innermost_first():
    reading = question.read(REPORT)
    assert [f for _, f in reading.frames] == ["send", "resolve_redirects"]
    assert reading.frames[0][0].endswith("requests/adapters.py")
    # IPython's frames, also where the file is a markdown link, and a frame of a library
    ipython = question.read(IPYTHON_REPORT)
    assert [f for _, f in ipython.frames] == ["__getitem__", "map_diag", "pairplot"]
    assert mentions.matches(ipython.frames[1][0], "src/plots/grid.py")
    assert not question.read("where are redirects followed?").frames


IPYTHON8_REPORT = """Color mapping fails with boolean data
```python-traceback
TypeError                                 Traceback (most recent call last)
File ~/code/pkg/pkg/core/plot.py:841, in Plot._plot(self, pyplot)
--> 841 plotter._setup_scales(self, common, layers)

File ~/code/pkg/pkg/core/plot.py:1252, in Plotter._setup_scales(self, p, common)
-> 1252     self._scales[var] = scale._setup(var_df[var], prop)

File C:\\code\\pkg\\pkg\\core\\scales.py:351, in ContinuousBase._setup(self, data, prop)
--> 351 b = forward(vmax) - forward(vmin)

TypeError: numpy boolean subtract, the `-` operator, is not supported
```
"""


def test_ipython_8_frames_are_read_innermost_first():
    reading = question.read(IPYTHON8_REPORT)
    assert [f for _, f in reading.frames] == ["_setup", "_setup_scales", "_plot"]
    assert reading.frames[0][0] == "C:\\code\\pkg\\pkg\\core\\scales.py"
    assert {"ContinuousBase._setup", "Plotter._setup_scales"} <= set(reading.names)


def test_a_python_tracebacks_files_are_mentioned_innermost_first():
    files = [m for m in question.read(IPYTHON8_REPORT).mentions if m.endswith(".py")]
    assert files == ["C:\\code\\pkg\\pkg\\core\\scales.py", "~/code/pkg/pkg/core/plot.py"]
    files = [m for m in question.read(REPORT).mentions if m.endswith(".py")]
    assert [f.rsplit("/", 1)[-1] for f in files] == ["adapters.py", "sessions.py"]
    # a path in the prose before the traceback keeps its place in the text
    prose = "Seen in `lib/retry.py` first.\n\n" + REPORT
    files = [m for m in question.read(prose).mentions if m.endswith(".py")]
    assert [f.rsplit("/", 1)[-1] for f in files] == ["retry.py", "adapters.py", "sessions.py"]


NODE_REPORT = """Mounting a router twice crashes

```
TypeError: Cannot read properties of undefined (reading 'handle')
    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)
    at next (/app/node_modules/express/lib/router/route.js:144:13)
    at Object.<anonymous> (/app/server.js:12:3)
    at async Promise.all (index 0)
    at new Router (file:///app/src/router.ts:7:11)
```
"""
JVM_REPORT = """Rotating keys throws
```
java.lang.NullPointerException: vault is null
	at com.acme.keys.Vault$Inner.rotate(Vault.java:42)
	at com.acme.keys.Vault.lambda$run$0(Vault.java:30)
	at com.acme.keys.Vault.<init>(Vault.java:12)
	at com.acme.Main.main(Main.kt:5)
```"""
GO_REPORT = """panic on a nil context
```
goroutine 1 [running]:
github.com/gin-gonic/gin.(*Context).Next(...)
	/go/pkg/mod/github.com/gin-gonic/gin@v1.9.1/context.go:174
main.handler(0xc0000a6000)
	/home/u/app/main.go:42 +0x1d
```"""
RUBY_REPORT = """Rotate fails
/app/lib/vault.rb:10:in `rotate'
/app/lib/vault.rb:4:in 'Vault#run'
/app/lib/main.rb:2:in `block in <main>'"""
RUST_REPORT = """Parser panics on an empty header
stack backtrace:
   0: rust_begin_unwind
             at /rustc/90b35a6239c3d8bd/library/std/src/panicking.rs:645:5
   4: acme::http::Parser::parse_header::h0123456789abcdef
             at ./src/http/parser.rs:120:9
   5: acme::http::Parser::parse::{{closure}}
             at ./src/http/parser.rs:80:13
   6: acme::main
             at ./src/main.rs:4:37"""
C_REPORT = """Segfault in the header parser
#0  0x00007ffff7a42428 in __GI_raise (sig=6) at ../sysdeps/unix/sysv/linux/raise.c:54
#1  0x000055555555513d in http::Parser::parse_header (this=0x0) at src/parser.cc:42
#2  main (argc=1, argv=0x7ffe) at src/main.c:10
==1==ERROR: AddressSanitizer: heap-buffer-overflow
    #0 0x4f6a2d in read_line /src/lib/reader.c:42:13"""
PHP_REPORT = """Rotate throws
#0 /app/src/Keys/Vault.php(42): App\\Keys\\Vault->rotate('x')
#1 /app/src/Kernel.php(10): App\\Kernel::boot()
#2 /app/public/index.php(5): run()
#3 {main}"""
CSHARP_REPORT = """Rotate crashes
   at Acme.Keys.Vault.Rotate(Int32 n) in C:\\src\\Keys\\Vault.cs:line 42
   at Acme.Program.Main(String[] args) in /src/Program.cs:line 7"""


@pytest.mark.parametrize(
    "report, frames",
    [
        (
            NODE_REPORT,
            [
                ("/app/node_modules/express/lib/router/layer.js", "handle"),
                ("/app/node_modules/express/lib/router/route.js", "next"),
                ("/app/src/router.ts", "Router"),
            ],
        ),
        # the package is the file's folder; lambdas and constructors name no definition
        (JVM_REPORT, [("com/acme/keys/Vault.java", "rotate"), ("com/acme/Main.kt", "main")]),
        (
            GO_REPORT,
            [
                ("/go/pkg/mod/github.com/gin-gonic/gin@v1.9.1/context.go", "Next"),
                ("/home/u/app/main.go", "handler"),
            ],
        ),
        (RUBY_REPORT, [("/app/lib/vault.rb", "rotate"), ("/app/lib/vault.rb", "run")]),
        (CSHARP_REPORT, [("C:\\src\\Keys\\Vault.cs", "Rotate"), ("/src/Program.cs", "Main")]),
        (
            RUST_REPORT,
            [
                ("/rustc/90b35a6239c3d8bd/library/std/src/panicking.rs", "rust_begin_unwind"),
                ("./src/http/parser.rs", "parse_header"),
                ("./src/main.rs", "main"),
            ],
        ),
        (
            C_REPORT,
            [
                ("../sysdeps/unix/sysv/linux/raise.c", "__GI_raise"),
                ("src/parser.cc", "parse_header"),
                ("src/main.c", "main"),
                ("/src/lib/reader.c", "read_line"),
            ],
        ),
        (
            PHP_REPORT,
            [
                ("/app/src/Keys/Vault.php", "rotate"),
                ("/app/src/Kernel.php", "boot"),
                ("/app/public/index.php", "run"),
            ],
        ),
    ],
)
def test_other_languages_stack_frames_are_read_innermost_first(report, frames):
    reading = question.read(report)
    assert reading.frames == frames
    assert [f for _, f in frames] == reading.frame_only
    assert all(path in reading.mentions for path, _ in frames)  # each frame's file too


def test_frames_of_a_python_traceback_come_before_another_languages():
    reading = question.read(REPORT + "\n" + GO_REPORT)
    assert [f for _, f in reading.frames] == ["send", "resolve_redirects", "Next", "handler"]


def test_a_hostile_stack_trace_costs_no_more_than_its_bounded_text():
    line = "\tat " + "a." * 5000 + "b(" + "x" * 5000 + ".java:1)\n"
    reading = question.read("Crash\n" + line * 50)
    assert len(reading.frames) <= question.MAX_FRAMES


@pytest.mark.parametrize(
    "line",
    [
        "  1: " + "a::" * 3000 + "\n      at " + "x/" * 3000 + "y.rs:1:1\n",
        "#1  0x1 in " + "a::" * 3000 + " (" + "x" * 3000 + ") at " + "y/" * 3000 + "z.c:1\n",
        "    #1 0x1 in " + "f" * 3000 + " " + "y/" * 3000 + ".c:1:1\n",
        "#1 " + "y/" * 3000 + "x.php(1): " + "A\\" * 3000 + "->f()\n",
    ],
    ids=["rust", "gdb", "asan", "php"],
)
def test_hostile_native_and_php_frames_stay_bounded(line):
    reading = question.read("Crash\n" + line * 20)
    assert len(reading.frames) <= question.MAX_FRAMES


def test_a_name_fitting_many_definitions_names_none():
    def row(i, path, qualified):
        return {
            "symbol_id": i,
            "repository_id": 1,
            "path": path,
            "name": qualified.split(".")[-1].lower(),
            "qualified_name": qualified.lower(),
        }

    rows = [
        row(1, "a.py", "Session.send"),
        row(2, "b.py", "Adapter.send"),
        row(3, "c.py", "send"),
        row(4, "d.py", "Pool.send"),
        row(5, "a.py", "Session.request"),
    ]
    assert [r["symbol_id"] for r in mentions._definitions("Session.send", rows)] == [1]
    assert [r["symbol_id"] for r in mentions._definitions("request", rows)] == [5]
    assert len(mentions._definitions("send", rows)) == 4 > mentions.AMBIGUOUS


def test_signal_terms_come_first_and_weigh_more_than_prose():
    reading = question.read(REPORT)
    terms, weights = question.weighted_terms(reading)
    assert weights is not None and len(weights) == len(terms)
    weight = dict(zip(terms, weights, strict=True))
    assert weight["resolveredirects"] == question.SIGNAL_WEIGHT
    assert weight["iteration"] == question.PROSE_WEIGHT
    assert terms.index("resolveredirects") < terms.index("iteration")
    # the template's checklist and version lines are not terms
    assert "searched" not in terms


VERSION_REPORT = """Proxy authentication fails with a 407 since Python 3.8.12

Sending through an authenticating proxy gets a 407; `prepend_scheme_if_needed` drops the
credentials of the proxy URL.

```json
{
  "implementation": {"name": "CPython", "version": "3.8.12"},
  "pyOpenSSL": {"openssl_version": "", "version": null},
  "system_ssl": {"version": "101010cf"},
  "using_pyopenssl": false
}
```

```python
config = {"proxies": build_proxy_map(url)}
```
"""


def test_a_fenced_json_block_is_data_not_signal():
    reading = question.read(VERSION_REPORT)
    assert "prepend_scheme_if_needed" in reading.signal
    # a code block holding a dict literal is code: its names stay
    assert "build_proxy_map" in reading.signal
    for key in ("openssl_version", "system_ssl", "using_pyopenssl", "pyOpenSSL", "CPython"):
        assert key not in reading.signal and key not in reading.digest
    terms, _ = question.weighted_terms(reading)
    assert not {"openssl", "opensslversion", "systemssl", "usingpyopenssl"} & set(terms)


@pytest.mark.parametrize(
    "block",
    [
        '{"system_ssl": {"version": "1"}',  # cut short: not JSON, read as text
        "[" * 9_000 + "system_ssl" + "]" * 9_000,  # nested past the parser's depth
        "{system_ssl: 1}",  # JavaScript, not JSON
    ],
)
def test_a_block_that_is_not_json_is_read_as_text(block):
    text = "A report long enough to be read for its signal. " * 10 + f"\n\n```\n{block}\n```\n"
    assert "system_ssl" in question.read(text).signal


def test_a_hostile_question_is_bounded():
    frames = "".join(f'  File "/x/pkg{i}/mod{i}.py", line {i}, in func_{i}\n' for i in range(4000))
    text = "Crash\n\n" + " ".join(f"`ident_{i}`" for i in range(5000)) + "\n" + frames
    text = (text * 3)[:200_000]
    start = time.monotonic()
    reading = question.read(text)
    terms, weights = question.weighted_terms(reading)
    assert time.monotonic() - start < 5  # generous: the point is no blow-up, not speed
    assert len(reading.mentions) <= question.MAX_MENTIONS
    assert len(reading.frames) <= question.MAX_FRAMES
    # frames beyond the innermost MAX_FRAMES are not looked up in their files: their
    # functions stay names
    deep = question.read("Crash\n\n" + "".join(frames.splitlines(True)[: question.MAX_FRAMES + 6]))
    assert len(deep.frames) == question.MAX_FRAMES and deep.frames[0][1] != "func_0"
    assert "func_0" in deep.names and "func_0" not in deep.frame_only
    assert set(deep.frame_only) == {f for _, f in deep.frames}
    assert len(reading.digest) <= question.DIGEST_CHARS
    assert len(terms) <= 64 and weights is not None and len(weights) == len(terms)


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("fix(context): Copy() copies Errors too (#4695)", ["context"]),
        ("chore(render)!: do not export tomlContentType", ["render"]),
        ("feat(router, binding/form): parse times", ["router", "binding", "form"]),
        ("  perf(recover): fewer allocations", ["recover"]),
        ('Revert "fix(context): copy errors"', ["context"]),  # git's message for a revert
        # git's, Go's and the kernel's convention: the components before the colon
        ("ignore,globset: increase pool capacity", ["ignore", "globset"]),
        ("net/http, mime: parse the header", ["net", "http", "mime"]),
        ("docs(build): note the target", ["build"]),
        # not components: a log line's level, a label, a conventional type, a capital
        ("error: cannot find module", []),
        ("warning: deprecated call", []),
        ("docs: note the target", []),
        ("Router: strict slashes", []),
        # not a header: elsewhere in the text, an unknown type, no colon, too short a scope
        ("we fix(context): nothing here", []),
        ("wip(context): halfway", []),
        ("fix(context) copies errors", []),
        ("fix(ui): spacing", []),
        # a path in the scope is read word by word, each a module name at most
        ("fix(../../etc/passwd): x", ["etc", "passwd"]),
    ],
)
def test_a_commit_headers_scope_is_a_module_mention(text, mentions):
    assert question.short_reading(text).mentions == mentions
    body = text + "\n\n" + "The second paragraph explains the change at length. " * 10
    assert question.read(body).mentions[: len(mentions)] == mentions


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        # a bare name in backticks may be a module's as well as a definition's
        ("Add type annotations in `formatting`", ["formatting"]),
        ("`parser` and `Context` disagree", ["parser", "Context"]),
        # a call names a definition, a dotted name its modules (as before)
        ("`make_parser()` breaks", []),
        ("`click.parser` breaks", ["click/parser"]),
    ],
)
def test_a_name_in_backticks_is_also_a_module_mention(text, mentions):
    assert question.read(text).mentions == mentions
    assert question.read(text + "\n\n" + "More words. " * 40).mentions == mentions


@pytest.mark.parametrize(
    ("text", "terms", "dropped"),
    [
        # the type says what kind of change: not searched; the scope is
        ("fix(context): copy errors (#4695)", ["context", "copy", "errors", "error"], "fix 4695"),
        ("feat!: drop node 18", ["drop", "node", "18"], "feat"),
        ('Revert "fix(router): cover params" (#12)', ["router", "cover", "params", "param"], "fix"),
        # a type that says where the change is (tests, docs, the build) is a word like others
        ("test(router): cover params", ["test", "router", "cover", "params", "param"], ""),
        ("docs: explain the cache", ["docs", "cache", "doc"], ""),
        # issue numbers a message closes or cites are not searched; fix is a word elsewhere
        ("how do we fix the cache? closes #12, fixes #13", ["fix", "cache"], "12 13 fixes"),
    ],
)
def test_a_commit_messages_marks_are_not_searched(text, terms, dropped):
    assert question.weighted_terms(question.read(text)) == (terms, None)
    body = text + "\n\n" + "More words. " * 40
    long_terms, _ = question.weighted_terms(question.read(body))
    assert set(terms) <= set(long_terms)
    assert not set(dropped.split()) & set(long_terms)


@pytest.mark.parametrize(
    ("mention", "path", "fits"),
    [
        ("/usr/lib/python3/site-packages/requests/sessions.py", "requests/sessions.py", True),
        ("sessions.py", "requests/sessions.py", True),
        ("requests/sessions", "requests/sessions.py", True),  # a module name
        ("flask/config", "src/flask/config.py", True),
        ("flask/Config", "src/flask/config.py", True),
        ("/x/other/sessions.py", "requests/sessions.py", False),
        ("requests/sessions.py", "requests/sessions_old.py", False),
        ("app/config", "src/flask/config.py", False),
        # an installed package's frame and the repository's src/ layout share their last parts
        ("/usr/lib/python3.8/site-packages/_pytest/python.py", "src/_pytest/python.py", True),
        ("/usr/lib/python3.8/json/decoder.py", "src/pkg/decoder.py", False),
        ("/usr/lib/python3.8/pkg/decoder.py", "src/pkg/decoder_v2.py", False),
        # a bare module name names a file of that stem, but not the one named like its folder:
        # `render` there is the package render/, not render/render.go
        ("context", "context.go", True),
        ("sessions", "requests/sessions.py", True),
        ("render", "render/render.go", False),
        ("render/render", "render/render.go", True),
    ],
)
def test_mentions_match_at_path_boundaries(mention, path, fits):
    assert mentions.matches(mention, path) is fits


@pytest.mark.parametrize(
    ("text", "path", "fits"),
    [
        # a path outside the repository is read whole, not reduced to its file name
        ("C:\\Python38\\lib\\pathlib.py:1266: FileNotFoundError", "src/_pytest/pathlib.py", False),
        ("warning at /usr/lib/python3.8/pathlib.py:12", "src/_pytest/pathlib.py", False),
        ("C:\\Py\\site-packages\\requests\\sessions.py:12: W", "requests/sessions.py", True),
        ("see src\\flask\\cli.py for the loader", "src/flask/cli.py", True),
        ("foo/cli.py:12: in main", "src/flask/cli.py", False),
        ("cli.py:12: in main", "src/flask/cli.py", True),
        # a file name with dots before its extension is one mention, read whole
        ("the test web/keys.test.js fails", "web/keys.test.js", True),
        ("see app.spec.ts, line 3", "src/app.spec.ts", True),
        ("see app.spec.ts, line 3", "src/spec.ts", False),
    ],
)
def test_a_paths_mention_is_read_whole(text, path, fits):
    paths = [m.group(1) for m in question._PATH.finditer(text)]
    assert len(paths) == 1
    assert mentions.matches(paths[0], path) is fits


def _legs(lex_files, dense_files):
    return {
        "lex_sym": [],
        "dense_sym": [],
        "lex_file": [
            {"repository_id": 1, "path": p, "score": 10.0 - i} for i, p in enumerate(lex_files)
        ],
        "dense_file": [
            {"repository_id": 1, "path": p, "distance": 0.1 * (i + 1)}
            for i, p in enumerate(dense_files)
        ],
    }


def _order(items):
    return [k[2] for k, _ in sorted(items.items(), key=lambda kv: -kv[1]["rrf"])]


def test_guard_keeps_one_legs_clear_hit_above_moderate_agreement():
    # `clear` is the lexical leg's first and the dense leg never saw it; six files both legs
    # rank moderately (8th-13th) beat it under RRF k = 60, not under the guard
    moderate = [f"m{i}.py" for i in range(6)]
    lex = ["clear.py"] + [f"l{i}.py" for i in range(7)] + moderate
    dense = [f"d{i}.py" for i in range(7)] + moderate
    rrf = _order(fusion.fuse(_legs(lex, dense), 1.0, 1.0, "rrf"))
    guard = _order(fusion.fuse(_legs(lex, dense), 1.0, 1.0, "guard"))
    assert rrf.index("clear.py") > 3
    assert guard.index("clear.py") == 0
    small_k = _order(fusion.fuse(_legs(lex, dense), 1.0, 1.0, "rrf_k"))
    assert small_k.index("clear.py") < rrf.index("clear.py")


def test_file_consensus_lifts_a_file_both_legs_find_over_one_leg_finds():
    # a.py: the lexical leg's first symbol and the dense leg's second; b.py: the dense leg's
    # first. Over rows, a.py's and b.py's best tie; over files, both legs find a.py
    legs = {
        "lex_sym": [{"symbol_id": 1, "score": 9.0}],
        "dense_sym": [{"symbol_id": 2, "distance": 0.1}, {"symbol_id": 3, "distance": 0.2}],
        "lex_file": [],
        "dense_file": [],
    }
    items = fusion.fuse(legs, 1.0, 1.0)
    paths = {1: "a.py", 2: "b.py", 3: "a.py"}
    for key, item in items.items():
        item.update({"repository_id": 1, "path": paths[key[1]], "start_line": key[1]})
    assert items[("s", 1)]["rrf"] == items[("s", 2)]["rrf"]
    fusion.file_consensus(items, 1.0, 1.0)
    assert items[("s", 1)]["rrf"] > items[("s", 3)]["rrf"] > items[("s", 2)]["rrf"]
    assert items[("s", 1)]["file_rrf"] == pytest.approx(1 / 61 + 1 / 62)
    assert items[("s", 2)]["file_rrf"] == pytest.approx(1 / 61)
    # a leg switched off counts for nothing
    again = fusion.fuse(legs, 1.0, 0.0)
    for key, item in again.items():
        item.update({"repository_id": 1, "path": paths[key[1]], "start_line": key[1]})
    fusion.file_consensus(again, 1.0, 0.0)
    assert again[("s", 2)]["file_rrf"] == 0


def test_convex_fusion_is_a_mean_of_normalised_scores():
    items = fusion.fuse(_legs(["a.py", "b.py", "c.py"], ["c.py", "a.py"]), 1.0, 1.0, "convex")
    assert items[("f", 1, "a.py")]["rrf"] == pytest.approx((1.0 + 0.0) / 2)
    assert items[("f", 1, "c.py")]["rrf"] == pytest.approx((0.0 + 1.0) / 2)
    assert items[("f", 1, "b.py")]["rrf"] == pytest.approx(0.5 / 2)


def test_mentioned_files_are_a_leg_of_their_own():
    legs = _legs(["a.py"], [])
    legs["mention"] = [{"repository_id": 1, "path": "named.py"}]
    items = fusion.fuse(legs, 1.0, 1.0, "guard")
    named = items[("f", 1, "named.py")]
    assert named["mention_rank"] == 1 and named["lexical_rank"] is None
    assert named["rrf"] == pytest.approx(1 / 61)


def _file_rows(*paths):
    return [{"repository_id": 1, "path": p} for p in paths]


def test_a_traceback_failed_in_its_innermost_frame_in_the_repositorys_code():
    files = _file_rows("pkg/manager.py", "pkg/argument.py", "tests/test_argument.py")
    frames = [  # innermost first
        ("/usr/lib/python3.10/re.py", "compile"),  # not the repository's
        ("/venv/site-packages/pkg/argument.py", "transform"),
        ("/venv/site-packages/pkg/manager.py", "parse"),
    ]
    assert mentions.failing_file(files, frames) == _file_rows("pkg/argument.py")
    # a test the traceback ran through is not where it failed
    in_test = [("tests/test_argument.py", "test_parse"), *frames[1:]]
    assert mentions.failing_file(files, in_test) == _file_rows("pkg/argument.py")
    assert mentions.failing_file(files, frames[:1]) == []
    # a frame whose path fits two code files names neither: no file, not the next frame's
    two = _file_rows("a/util.py", "b/util.py", "pkg/manager.py")
    assert mentions.failing_file(two, [("util.py", "f"), frames[2]]) == []


def test_the_definition_a_traceback_failed_in_is_the_first_named_in_its_file():
    symbols = [  # the mention leg's: the frames' definitions first, innermost first
        {"symbol_id": 4, "repository_id": 1, "path": "pkg/manager.py"},
        {"symbol_id": 7, "repository_id": 1, "path": "pkg/argument.py"},
        {"symbol_id": 8, "repository_id": 1, "path": "pkg/argument.py"},
    ]
    assert mentions.failing_definition(symbols, _file_rows("pkg/argument.py")) == [symbols[1]]
    assert mentions.failing_definition(symbols, _file_rows("pkg/other.py")) == []
    assert mentions.failing_definition(symbols, []) == []


def test_the_file_a_traceback_failed_in_counts_as_a_light_leg_of_its_own():
    legs = _legs(["caller.py", "failed.py"], ["caller.py", "failed.py"])
    legs["mention"] = _file_rows("caller.py", "failed.py")
    before = fusion.fuse(legs, 1.0, 1.0)
    legs["failing"] = _file_rows("failed.py")
    items = fusion.fuse(legs, 1.0, 1.0)
    assert _order(before) == ["caller.py", "failed.py"]
    assert _order(items) == ["failed.py", "caller.py"]  # a close call settled
    failed = items[("f", 1, "failed.py")]
    assert failed["failing_rank"] == 1
    assert failed["rrf"] == pytest.approx(3 / 62 + fusion.FAILING_WEIGHT / 61)
    legs["failing_sym"] = [{"symbol_id": 9, "repository_id": 1, "path": "failed.py"}]
    assert fusion.fuse(legs, 1.0, 1.0)[("s", 9)]["failing_rank"] == 1
    del legs["failing_sym"]
    # light: it does not outweigh a leg that found the other file and missed this one
    legs["dense_file"] = legs["dense_file"][:1]
    assert _order(fusion.fuse(legs, 1.0, 1.0)) == ["caller.py", "failed.py"]
    # and no part of the file consensus: its definitions gain nothing from it
    for failing in (_file_rows("failed.py"), []):
        legs["failing"] = failing
        items = fusion.fuse(legs, 1.0, 1.0)
        for key, item in items.items():
            item.update({"repository_id": 1, "path": key[2]})
        fusion.file_consensus(items, 1.0, 1.0)
        assert items[("f", 1, "failed.py")]["file_rrf"] == pytest.approx(2 / 62)


def test_named_definitions_are_symbol_rows_of_the_mention_leg():
    legs = _legs(["a.py"], [])
    legs["mention_sym"] = [{"symbol_id": 7, "repository_id": 1, "path": "named.py"}]
    items = fusion.fuse(legs, 1.0, 1.0)
    named = items[("s", 7)]
    assert named["mention_rank"] == 1 and named["rrf"] == pytest.approx(1 / 61)


def test_feature_settings():
    plpy = FakePlpy()
    default = features.parse(plpy, None, None)
    assert all(default.on(f) != (f in features.DEFAULT_OFF) for f in features.FEATURES)
    assert all(features.parse(plpy, "none", None).on(f) for f in features.FEATURES)
    assert default.fusion == features.DEFAULT_FUSION
    assert features.parse(plpy, "all", "") == features.BASELINE
    kinds_off = features.parse(plpy, " kinds ,evidence", "convex")
    assert not kinds_off.on("kinds") and not kinds_off.on("evidence") and kinds_off.on("pack")
    assert kinds_off.fusion == "convex"
    # fusion off means today's RRF whatever codesift.fusion says
    assert features.parse(plpy, "fusion", "convex").fusion == "rrf"
    with pytest.raises(FakePlpy.Error, match="unknown features"):
        features.parse(plpy, "kinds,nonsense", None)
    with pytest.raises(FakePlpy.Error, match="codesift.fusion"):
        features.parse(plpy, None, "x" * 10_000)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("requests/sessions.py", "code"),
        ("docs/user/advanced.rst", "doc"),
        ("README.md", "doc"),
        ("doc/tutorial/grids.ipynb", "doc"),
        (".github/ISSUE_TEMPLATE/bug-report.md", "template"),
        ("setup.cfg", "config"),
        ("pyproject.toml", "config"),
        (".coveragerc", "config"),
        ("Makefile", "config"),
        ("pylintrc", "config"),
        ("src/resources.rc.go", "code"),
        ("tests/test_requests.py", "test"),
        ("web/keys.test.js", "test"),
        ("types/index.test-d.ts", "test"),  # a type test (tsd)
        ("src/latest-d.ts", "code"),
        ("CHANGELOG.md", "changelog"),
        ("examples/content-negotiation/index.js", "example"),
        ("src/Samples/Demo.cs", "example"),
        ("playground/assets/index.html", "example"),  # a monorepo's demo apps
        ("packages/sfc-playground/src/App.vue", "code"),
        ("doc/en/example/conftest.py", "doc"),
        ("tests/examples/test_app.py", "test"),
        ("sphinx/locale/de/LC_MESSAGES/sphinx.po", "translation"),
        ("sphinx/locale/de/LC_MESSAGES/sphinx.js", "translation"),
        ("po/messages.pot", "translation"),
        ("src/i18n/messages.fr.xlf", "translation"),
        ("django/conf/locale/de/formats.py", "code"),
        ("tests/view_tests/locale/ru/LC_MESSAGES/djangojs.po", "test"),
        ("conftest.py", "test"),
        ("src/pkg/conftest.py", "test"),
        ("asv_bench/benchmarks/dataset_io.py", "bench"),
        ("bench/skip.py", "bench"),
        ("benches/parse.rs", "bench"),
        ("src/benchmark.py", "code"),
        ("go.mod", "config"),
        ("cmd/go.sum", "config"),
        ("LICENSE", "doc"),
        ("vendor/pkg/LICENSE-MIT", "doc"),
        ("COPYING.txt", "doc"),
        ("src/license.py", "code"),
        ("internal/notice.go", "code"),
        ("authors.py", "code"),
        ("src/license-checker.js", "code"),
        ("LICENSE-APACHE", "doc"),
    ],
)
def test_file_kinds(path, kind):
    assert file_kinds.file_kind(path) == kind


def test_the_kind_prior_applies_only_when_asked():
    assert recency.path_prior("docs/api.rst") == 1.0
    assert recency.path_prior("docs/api.rst", kinds=True) == recency.DOC_PRIOR
    assert recency.path_prior("lib/api.py", kinds=True) == 1.0
    assert recency.path_prior("examples/app/index.js") == 1.0
    assert recency.path_prior("examples/app/index.js", kinds=True) == recency.DOC_PRIOR
    assert recency.path_prior("tests/test_api.py", kinds=True) == recency.TEST_PRIOR
    # a bug report asks which code to change: whatever is not code weighs the same, lower
    assert recency.path_prior("locale/de/LC_MESSAGES/app.po", kinds=True) == recency.DOC_PRIOR
    assert recency.path_prior("benchmarks/bench_io.py") == recency.TEST_PRIOR
    assert recency.path_prior("benchmarks/bench_io.py", True, bug_report=True) == (
        recency.BUG_REPORT_PRIOR
    )
    for path in ("tests/test_api.py", "CHANGELOG.md", "docs/api.rst", "setup.cfg", "app.pot"):
        assert recency.path_prior(path, True, bug_report=True) == recency.BUG_REPORT_PRIOR
    # a question about tests does not weigh tests and benchmarks down; changelogs still
    assert recency.path_prior("tests/test_api.py", True, tests=False) == 1.0
    assert recency.path_prior("benchmarks/bench_io.py", tests=False) == 1.0
    assert recency.path_prior("CHANGELOG.md", tests=False) == recency.CHANGELOG_PRIOR
    assert recency.path_prior("tests/test_api.py", True, True, tests=False) == (
        recency.BUG_REPORT_PRIOR
    )


@pytest.mark.parametrize(
    ("text", "wants"),
    [
        ("where is the retry tested", True),
        ("test(router): cover params", True),
        ("which fixture opens the database", True),
        ("where is the retry backoff computed", False),
        ("the latest contest results", False),
        # a report naming a failing test still asks which code to change
        ("Retry backoff is wrong\n\n" + "tests/test_retry.py::test_x FAILED " * 20, False),
        ("Backoff tests fail on Windows\n\nThe delay grows. " * 20, False),
    ],
)
def test_a_question_about_tests_is_read_as_one(text, wants):
    assert question.read(text).wants_tests is wants
    assert recency.BUG_REPORT_PRIOR <= min(recency.NON_CODE_PRIOR.values())
    assert recency.path_prior("tests/test_api.py", bug_report=True) == recency.TEST_PRIOR
    assert recency.path_prior("lib/api.py", True, bug_report=True) == 1.0


def _hit(path, rrf, start, end):
    return {"repository_id": 1, "path": path, "rrf": rrf, "start_line": start, "end_line": end}


def test_file_support_favours_a_file_with_several_hits():
    items = {
        ("s", 1): _hit("many.py", 0.02, 1, 10),
        ("s", 2): _hit("many.py", 0.02, 11, 20),
        ("s", 3): _hit("many.py", 0.02, 21, 30),
        ("s", 4): _hit("lucky.py", 0.021, 1, 10),
        ("f", 1, "many.py"): _hit("many.py", 0.02, 1, 30),
    }
    support = recency.file_support(items)
    assert support[("s", 4)] == 0.0
    evidence = recency.EVIDENCE_DAMP * 0.02 * recency.EVIDENCE_TOP
    # every candidate of the file gains the same: the order inside it stays
    assert all(support[k] == pytest.approx(evidence) for k in items if k != ("s", 4))
    assert 0.02 + evidence > 0.021


def test_file_support_counts_a_class_and_its_method_once():
    items = {
        ("s", 1): _hit("a.py", 0.03, 10, 20),  # the method
        ("s", 2): _hit("a.py", 0.02, 1, 40),  # its class
    }
    assert recency.file_support(items)[("s", 1)] == 0.0


def _folders(text: str) -> tuple[str, ...]:
    """The folders a question's header names, as the pipeline reads them."""
    return subject_scope.folders(question.read(text).scopes)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("fix(runtime-core): restore SSR setup state", ("runtime-core",)),
        ("feat(compiler-sfc, shared)!: hoist static props", ("compiler-sfc", "shared")),
        ("net/http, mime: sniff the content type", ("net/http", "mime")),
        ("ignore,globset: increase pool capacity", ("ignore", "globset")),
        ('Revert "fix(router): keep the trailing slash"', ("router",)),
        ("binding: accept empty form values\n\nmore text", ("binding",)),
        ("TypeError: 'NoneType' object is not iterable", ()),  # an error, not a folder
        ("note: this is a label", ()),
        ("where are redirects followed?", ()),
        ("fix: no scope at all", ()),
        ("fix(../../etc): climb", ()),  # a scope is matched against paths, never opened
    ],
)
def test_a_commit_header_names_the_folders_it_is_about(text, named):
    assert _folders(text) == named


def test_a_header_names_a_bounded_number_of_folders():
    many = "fix(" + ", ".join(f"p{i}" for i in range(40)) + "): everything"
    assert len(_folders(many)) <= subject_scope.MAX_SCOPES
    assert _folders("fix(" + "a" * 100_000 + "): long") == ()
    assert _folders("x" * 1_000_000) == ()


@pytest.mark.parametrize(
    ("path", "named", "weighed"),
    [
        ("packages/runtime-core/src/component.ts", ("runtime-core",), True),
        ("src/net/http/server.go", ("net/http",), True),
        ("binding/form.go", ("binding",), True),
        ("binding.go", ("binding",), False),  # a file of that name is not under the folder
        ("packages/runtime-core-extra/src/a.ts", ("runtime-core",), False),
        ("packages/runtime-core/__tests__/component.spec.ts", ("runtime-core",), False),
        ("playground/hmr/main.ts", ("hmr",), False),  # an example, not the code
        ("packages/vite/src/node/cli.ts", ("cli",), False),
        ("packages/runtime-core/src/component.ts", (), False),
    ],
)
def test_code_under_a_named_folder_weighs_more(path, named, weighed):
    prior = subject_scope.scope_prior(path, named)
    assert prior == (subject_scope.SCOPE_PRIOR if weighed else 1.0)
