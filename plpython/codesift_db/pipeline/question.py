"""Query understanding for long questions (a bug report, a log): what in the text names code.

A short question is searched as written; only what it names as code (a path, a dotted
name, a name in backticks, a CamelCase or snake_case word) is looked up as definitions and
files. A long one (LONG_QUERY_CHARS or more, or of several lines: an issue's title and body
pasted whole, however short) mixes prose, issue-template boilerplate (headings, checklists,
version dumps) and the few things that name code: identifiers (in backticks, in code blocks,
CamelCase, snake_case, dotted), file paths and module names, traceback frames, error class
names. `read` pulls those out:

* term weights for the lexical legs: signal terms weigh SIGNAL_WEIGHT, prose PROSE_WEIGHT,
  boilerplate lines nothing;
* the files the text mentions (paths, traceback files, dotted module names, a commit
  header's scope: `fix(render): ...`, `net/http: ...`) and the definitions it names
  (identifiers, `Class.method`), matched to live paths and symbols by pipeline/mentions.py
  and added as candidates;
* a traceback's frames (Python's, or a JavaScript, JVM, Go, Ruby, C#, Rust, C/C++ or PHP
  stack trace's) as (file, function) pairs, innermost first: each names one definition,
  where the function's name alone (`run`, `send`) may fit hundreds; and their files, in
  the same order, among the files the text mentions;
* a digest for the dense leg: the title, the first paragraph and the identifiers, so that the
  model's first 256 word pieces are the informative ones, not an accident of the layout.

Every pattern runs on at most SCAN_CHARS of text and every list is capped: a hostile
200,000-character question costs the same as a 20,000-character one."""

import bisect
import json
import re
from dataclasses import dataclass, field

from .. import identifiers

LONG_QUERY_CHARS = 400  # below this a one-line question is searched exactly as written
SCAN_CHARS = 20_000  # text read for signal; the rest of a huge paste adds nothing new
SIGNAL_WEIGHT = 1.0
PROSE_WEIGHT = 0.2
MAX_MENTIONS = 24  # paths and module names looked up
MAX_NAMES = 64  # identifiers looked up as definitions
MAX_FRAMES = 24  # traceback frames looked up, innermost first
MAX_DIGEST_IDENTIFIERS = 40
DIGEST_CHARS = 1_200  # ~256 word pieces of mixed prose and identifiers

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.S)
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
# boilerplate lines: markdown headings, checklists, "key: version" dumps, pip freeze lines
_BOILERPLATE = re.compile(
    r"^\s*(#{1,6}\s.*|[-*]\s*\[[ xX]\]\s.*|[-*]?\s*[\w .-]{1,40}\s*(==|:)\s*v?\d+(\.\d+)+\S*\s*)$",
    re.M,
)
# absolute and Windows paths are read whole: the bare file name of a path outside the
# repository (C:\Python38\lib\pathlib.py) would match the repository's file of that name;
# a file name may hold dots before its extension (keys.test.js, app.spec.ts)
_PATH = re.compile(
    r"(?<![\w/\\.:-])((?:[A-Za-z]:[/\\]|/)?(?:[\w.~-]+[/\\])*[\w-]+(?:\.[\w-]+)*\."
    r"(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rb|"
    r"rs|java|kt|c|h|cc|cpp|hpp|cs|php|swift|scala|sh))\b"
)
# Python frames: File "x.py", line 3, in f | IPython: x.py in f(...), also with the path as a
# markdown link ([C:\x.py](file:///C:/x.py) in f(...)) | pytest: x.py:3: in f | IPython 8
# (Jupyter since 2022): File ~/src/x.py:3, in C.f(self)
_FRAME = re.compile(
    r"File \"([^\"\n]{1,400})\", line \d+, in ([\w<>.]+)"
    r"|([\w./\\:~-]{1,400}\.py)\)? in ([A-Za-z_]\w*)\("
    r"|([\w./~-]{1,400}\.py):\d+: in ([A-Za-z_]\w*)"
    r"|File ([\w./\\:~-]{1,400}\.py):\d+, in ([\w<>.]+)"
)
# The other languages print the innermost call first. Each pattern yields (file, function):
# JavaScript/TypeScript (V8): at fn (file.js:3:7), at async C.m [as h] (file:///x.ts:3:7)
_JS_FRAME = re.compile(
    r"\bat (?:async |new )?([\w$.]{1,200})(?: \[as [\w$]{1,200}\])? \((?:file://)?"
    r"([^()\s]{1,400}?\.(?:js|mjs|cjs|ts|tsx|jsx|mts|cts)):\d+:\d+\)"
)
# Java, Kotlin, Scala: at com.acme.Vault$Inner.rotate(Vault.java:42): the package is the path
_JVM_FRAME = re.compile(
    r"\bat ((?:[\w$]{1,200}\.){0,40})[\w$]{1,200}\.([\w$<>]{1,200})"
    r"\(([\w$]{1,200}\.(?:java|kt|scala|groovy)):\d+\)"
)
# Go (a panic's goroutine dump): pkg.(*Type).Method(...) then, indented, /path/file.go:42
_GO_FRAME = re.compile(
    r"^[\w./@-]{0,400}?\.(?:\(\*?\w{1,200}\)\.)?(\w{1,200})\([^\n]{0,2000}\)\n"
    r"[ \t]+(\S{1,400}?\.go):\d+",
    re.M,
)
# Ruby: /app/lib/vault.rb:10:in `rotate' (or 'Vault#rotate', 'block in rotate')
_RUBY_FRAME = re.compile(r"(?<![\w./~-])([\w./~-]{1,400}\.rb):\d+:in [`']([^'`\n]{1,200})'")
# C#: at Acme.Vault.Rotate(Int32 n) in /src/Vault.cs:line 42
_CSHARP_FRAME = re.compile(
    r"\bat (?:[\w`]{1,200}\.){1,40}(\w{1,200})\([^\n]{0,2000}?\) in ([^\n]{1,400}?\.cs):line \d+"
)
# Rust (RUST_BACKTRACE=1): "  4: app::parser::parse_expr" then, indented, "at ./src/parser.rs:120:9"
_RUST_FRAME = re.compile(
    r"^[ \t]{0,20}\d{1,5}: ([^\s]{1,400})\n[ \t]{1,40}at ([^\s]{1,400}?\.rs):\d+", re.M
)
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")  # a legacy symbol's hash suffix
# C and C++: gdb's "#1  0x5555 in parse (buf=0x0) at src/parser.c:42" (the address left out
# for an inlined frame) and AddressSanitizer's "#1 0x4f6a2d in parse /src/parser.c:42:13"
_C_SOURCE = r"[^\s]{1,400}?\.(?:c|h|cc|cpp|cxx|hpp|hh|hxx|m|mm)"
_GDB_FRAME = re.compile(
    r"^#\d{1,5} +(?:0x[0-9a-f]{1,16} in )?([\w:~]{1,200}) \([^\n]{0,2000}?\) at "
    rf"({_C_SOURCE}):\d+",
    re.M,
)
_ASAN_FRAME = re.compile(
    rf"^[ \t]{{0,20}}#\d{{1,5}} 0x[0-9a-f]{{1,16}} in ([\w:~]{{1,200}}) ({_C_SOURCE}):\d+", re.M
)
# PHP: "#0 /app/src/Vault.php(42): App\Keys\Vault->rotate()" (or Class::method, or a function)
_PHP_FRAME = re.compile(
    r"^#\d{1,5} ([^\s(]{1,400}?\.php)\(\d+\): (?:[\w\\]{1,200}(?:->|::))?(\w{1,200})\(", re.M
)
# a conventional commit's header, `fix(render): ...`: its scope names a module or folder.
# Its type is kept as a word when it says where the change is (tests, docs, the build), not
# when it only says what kind of change (a rare word in code: a commit-lint script holds
# them all)
_COMMIT_HEADER = re.compile(
    r"\A\s*(?:(feat|fix|chore|refactor|perf|style|revert|deps|dx)|test|tests|docs|build|ci)"
    r"(?:\(([\w./, -]{1,80})\))?!?:(?=\s)"
)
# the other convention (git's own, Go's, the Linux kernel's): `net/http, mime: ...`, lowercase
# components before the colon; not a log line's level or a note's label
_COMPONENTS = re.compile(r"\A\s*([a-z][\w./-]{0,40}(?:, ?[a-z][\w./-]{0,40}){0,4}):(?=\s)")
_NOT_COMPONENTS = frozenset(
    "error warning warn info debug note todo fatal panic bug question help usage example see"
    " feat fix chore refactor perf style revert deps dx test tests docs build ci".split()
)
# git's message for a revert, `Revert "fix(render): ..."`: the reverted header follows
_REVERT = re.compile(r'\A\s*Revert\s+"')
# an issue or pull request a message closes or cites (`close #123`, `(#4695)`): a number
_ISSUE_REFERENCE = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#\d+|\(#\d+\)", re.I)
_FUNCTION = re.compile(r"[A-Za-z_$][\w$]*")
_ERROR = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit))\b")
_CAMEL = re.compile(r"\b([A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)\b")
_SNAKE = re.compile(r"\b([A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+|_[A-Za-z][A-Za-z0-9_]+)\b")
_DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_CALL = re.compile(r"\b([A-Za-z_]\w{2,})\(")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_RECEIVERS = frozenset(("self", "cls", "this", "super"))
_EXTENSIONS = frozenset(("py", "js", "ts", "go", "rb", "rs", "java", "txt", "md", "rst", "json"))
_DOC_WORDS = re.compile(
    r"\b(docs?|documentation|readme|changelog|tutorial|docstring|guide|typo)\b", re.I
)
_TEST_WORDS = re.compile(r"\b(tests?|tested|testing|specs?|fixtures?|conftest|benchmarks?)\b", re.I)


@dataclass
class Reading:
    """What a question names. A short question (one line, under LONG_QUERY_CHARS: is_long)
    has `long` False, no signal and no digest: only what it names as code (short_reading)."""

    long: bool = False
    signal: list[str] = field(default_factory=list)  # identifiers, in order of mention
    mentions: list[str] = field(default_factory=list)  # path-like strings (files, modules)
    scopes: list[str] = field(default_factory=list)  # the code a commit header names (`net/http`)
    names: list[str] = field(default_factory=list)  # what may name a definition (`A.b`, `f`)
    frames: list[tuple[str, str]] = field(default_factory=list)  # (file, function), innermost 1st
    frame_only: list[str] = field(default_factory=list)  # names only `frames` give
    digest: str = ""  # the dense leg's text
    # the text read (a long one without its boilerplate, a short one as written), without a
    # commit header's marks: the source of the (prose) terms
    clean: str = ""
    wants_docs: bool = False
    # a short question about tests: they are not weighted down (a report naming a failing
    # test still asks which code to change)
    wants_tests: bool = False


def _is_data(block: str) -> bool:
    """Whether a fenced block is a JSON object or array: data, not code."""
    if not block.lstrip().startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(block), (dict, list))
    except (ValueError, RecursionError):  # not JSON; nested past the parser's depth
        return False


def _strip_data(text: str) -> str:
    """The text without its fenced JSON blocks: a version report's keys (`openssl_version`)
    read as identifiers and would point at the code that prints the report."""
    return _FENCE.sub(lambda m: " " if _is_data(m.group(1)) else m.group(0), text)


def _strip_boilerplate(text: str) -> str:
    return _BOILERPLATE.sub("", _strip_data(_HTML_COMMENT.sub("", text)))


def _header(text: str) -> tuple[re.Match | None, str | None]:
    """A conventional commit header (or None) and the scope of the text's header: the
    conventional one's, or the components before the colon of the other convention."""
    header = _COMMIT_HEADER.match(text)
    components = None if header else _COMPONENTS.match(text)
    return header, header.group(2) if header else components.group(1) if components else None


def _commit_header(text: str) -> tuple[list[str], list[str], str]:
    """A commit header, read once: the parts of the code it names, each as written (a
    conventional header's scope, `fix(render, api): ...`, or the components before the
    colon, `net/http, mime: ...`; not a log line's level or a note's label), their words
    (the module names the mention leg looks up), and the text without the header's marks:
    the type when it only says what kind of change it is (the scope kept as words), a
    reverted header's `Revert "`, the issue numbers it closes or cites."""
    text = _REVERT.sub("", text, count=1)
    header, scope = _header(text)
    stripped = (part.strip("/") for part in re.split(r"[,\s]+", scope or ""))
    parts = [part for part in stripped if part and (header or part not in _NOT_COMPONENTS)]
    words = [word for word in re.split(r"[,/\s]+", scope or "") if len(word) > 2]
    words = [word for word in words if header or word not in _NOT_COMPONENTS]
    if header is not None:
        kind = "" if header.group(1) else header.group(0).split("(")[0].rstrip("!:")
        text = f"{kind} {header.group(2) or ''}{text[header.end() :]}"
    return parts, words, _ISSUE_REFERENCE.sub(" ", text)


def _module_paths(dotted: str) -> list[str]:
    """`requests.sessions` -> 'requests/sessions' and shorter prefixes: path stems the
    lookup suffix-matches, ignoring case."""
    parts = dotted.split(".")
    if len(parts) < 2 or parts[0] in _RECEIVERS or parts[-1].lower() in _EXTENSIONS:
        return []
    # `flask.Config.from_file`: the module is one of the chain's three longest prefixes
    # (only those are joined: a hostile chain of thousands of parts costs no more)
    return ["/".join(parts[:n]) for n in range(len(parts), max(1, len(parts) - 3), -1)]


def is_long(text: str) -> bool:
    """Whether a question is read as a report: LONG_QUERY_CHARS or more, or several lines (an
    issue's title and body: its title says what it asks, its body how it fails)."""
    return len(text) >= LONG_QUERY_CHARS or "\n" in text.strip()


def _innermost_first_frames(text: str) -> list[tuple[int, str, str]]:
    """The frames of a JavaScript, JVM, Go, Ruby, C#, Rust, C/C++ (gdb, AddressSanitizer)
    or PHP stack trace in text, as (position, file, function), in the order printed:
    innermost first."""
    found: list[tuple[int, str, str]] = []
    for m in _JS_FRAME.finditer(text):  # Layer.handle ran in handle
        found.append((m.start(), m.group(2), m.group(1).rsplit(".", 1)[-1]))
    for m in _JVM_FRAME.finditer(text):
        method = m.group(2)
        if "$" not in method and not method.startswith("<"):  # not lambda$run$0, <init>
            package = m.group(1).replace(".", "/")
            found.append((m.start(), package + m.group(3), method))
    for m in _GO_FRAME.finditer(text):
        found.append((m.start(), m.group(2), m.group(1)))
    for m in _RUBY_FRAME.finditer(text):
        found.append((m.start(), m.group(1), re.split(r"[#. ]", m.group(2))[-1]))
    for m in _CSHARP_FRAME.finditer(text):
        found.append((m.start(), m.group(2), m.group(1)))
    for m in _RUST_FRAME.finditer(text):  # app::Parser::parse::{{closure}} names no function
        found.append((m.start(), m.group(2), _RUST_HASH.sub("", m.group(1)).rsplit("::", 1)[-1]))
    for pattern in (_GDB_FRAME, _ASAN_FRAME):  # ns::Vault::rotate ran in rotate
        for m in pattern.finditer(text):
            found.append((m.start(), m.group(2), m.group(1).rsplit("::", 1)[-1]))
    for m in _PHP_FRAME.finditer(text):
        found.append((m.start(), m.group(1), m.group(2)))
    return sorted(found)


def read(text: str) -> Reading:
    """The question's signal (see the module docstring); a short question's, short_reading."""
    if not isinstance(text, str):
        return Reading()
    if not is_long(text):
        return short_reading(text)
    return _read_long(text)


def short_reading(text: str) -> Reading:
    """A short question is searched as written, its terms unweighted; what it names as code
    (a path, a dotted module or `Class.method`, a name in backticks, a CamelCase or
    snake_case word or a call) is still looked up."""
    named = _read_long(text)
    _, _, plain = _commit_header(text)
    # a short question's CamelCase and snake_case words are what it asks about
    words = [m.group(1) for p in (_CAMEL, _SNAKE, _CALL) for m in p.finditer(plain)]
    names = [n for n in named.names if n not in named.frame_only]
    return Reading(
        mentions=named.mentions,
        scopes=named.scopes,
        names=[n for n in dict.fromkeys(names + words) if 2 < len(n) <= 120][:MAX_NAMES],
        clean=plain,
        wants_docs=bool(_DOC_WORDS.search(text)),
        wants_tests=bool(_TEST_WORDS.search(text)),
    )


def _read_long(text: str) -> Reading:
    text = text[:SCAN_CHARS]
    clean = _strip_boilerplate(text)
    scopes, scope_words, clean = _commit_header(clean)
    signal: dict[str, None] = {}
    ran: dict[str, None] = {}  # the functions traceback frames ran in
    named: dict[str, None] = {}  # names in backticks, dotted names
    found: list[tuple[int, str]] = []  # (position, path): mentions in order of the text
    frames: dict[tuple[str, str], None] = {}

    def add(name: str) -> None:
        if 2 < len(name) <= 120:
            signal.setdefault(name, None)

    python_files: list[tuple[int, str]] = []  # a Python traceback's files, outermost first
    frame_spans: list[tuple[int, int]] = []  # where those frames are in the text
    for m in _FRAME.finditer(clean):
        path = m.group(1) or m.group(3) or m.group(5) or m.group(7)
        func = m.group(2) or m.group(4) or m.group(6) or m.group(8)
        if path and not path.startswith("<"):
            python_files.append((m.start(), path))
            frame_spans.append(m.span())
        if func and not func.startswith("<"):
            add(func)
            ran.setdefault(func, None)
            if path and not path.startswith("<"):
                frames.setdefault((path, func.rsplit(".", 1)[-1]), None)
    # mentioned innermost first, as the frames are: each file takes the place in the text of
    # the frame printed as far from the end as it is from the start
    found.extend(
        (at, path) for (at, _), (_, path) in zip(python_files, reversed(python_files), strict=True)
    )
    innermost_first: dict[tuple[str, str], None] = {}  # frames of the other languages
    for at, path, func in _innermost_first_frames(clean):
        found.append((at, path))
        if _FUNCTION.fullmatch(func):  # not <main>
            add(func)
            ran.setdefault(func, None)
            innermost_first.setdefault((path, func), None)
    for m in _PATH.finditer(clean):
        inside = bisect.bisect_right(frame_spans, (m.start(1), len(clean))) - 1
        if inside < 0 or m.start(1) >= frame_spans[inside][1]:  # not a frame's own path
            found.append((m.start(1), m.group(1)))
    for m in _ERROR.finditer(clean):
        add(m.group(1))
    for m in _BACKTICK.finditer(clean):
        chunk = m.group(1)
        name = chunk.strip().rstrip("()")
        if _NAME.fullmatch(name):
            named.setdefault(name, None)
            if "." not in name and not chunk.rstrip().endswith(")"):
                found.append((m.start(), name))  # `formatting`: a module of that name, too
        for ident in identifiers._IDENT.findall(chunk):
            if not ident.isdigit():
                add(ident)
    for pattern in (_CAMEL, _SNAKE, _CALL):
        for m in pattern.finditer(clean):
            add(m.group(1))
    for m in _DOTTED.finditer(clean):
        for stem in _module_paths(m.group(1)):
            found.append((m.start(), stem))
        parts = m.group(1).split(".")
        if parts[0] not in _RECEIVERS and len(parts[-1]) > 1:
            named.setdefault(".".join(parts[-2:]), None)
    found.extend((-1, word) for word in scope_words)
    mentions = dict.fromkeys(path for _, path in sorted(found, key=lambda f: f[0]))
    definitions = [n for n in {**ran, **named} if 2 < len(n) <= 120][:MAX_NAMES]
    # a Python traceback prints the innermost call last; the fault is most often there
    innermost = [*reversed(frames), *innermost_first][:MAX_FRAMES]
    looked_up = {func for _, func in innermost}
    prose = _FENCE.sub(" ", clean).strip()
    title, _, rest = prose.partition("\n")
    first = next((p.strip() for p in re.split(r"\n\s*\n", rest) if p.strip()), "")
    names = list(signal)[:MAX_DIGEST_IDENTIFIERS]
    digest = "\n".join([title.strip(), first[:600], " ".join(names)]).strip()[:DIGEST_CHARS]
    return Reading(
        long=True,
        signal=list(signal),
        mentions=list(mentions)[:MAX_MENTIONS],
        scopes=scopes,
        names=definitions,
        # what only the frames looked up name: found in their files, not by name alone
        frame_only=[n for n in definitions if n in looked_up and n not in named],
        frames=innermost,
        digest=digest,
        clean=clean,
        wants_docs=bool(_DOC_WORDS.search(title)),
    )


def weighted_terms(reading: Reading) -> tuple[list[str], list[float] | None]:
    """The lexical legs' terms and their weights (None: all equal, a short question, whose
    terms are its text's as written).

    A long question's signal terms come first (the term list is capped, and a long report's
    prose would otherwise crowd out the names in its traceback) at SIGNAL_WEIGHT; the prose
    terms of the text without its boilerplate follow at PROSE_WEIGHT."""
    if not reading.long:
        return list(identifiers.query_terms(reading.clean) or []), None
    signal_terms = list(identifiers.query_terms(" ".join(reading.signal)) or [])
    prose_terms = identifiers.query_terms(reading.clean) or []
    terms = list(dict.fromkeys(signal_terms + list(prose_terms)))[: identifiers.MAX_QUERY_TERMS]
    chosen = set(signal_terms)
    return terms, [SIGNAL_WEIGHT if t in chosen else PROSE_WEIGHT for t in terms]
