"""When to call which tool of `codesift mcp`: the AGENTS.md block that `codesift setup
--agents-md` writes has one item per tool, in the server's order (mcp_tools.TOOLS, whose
`Tool.agents` reads this). A module of its own, so that setup does not import the MCP SDK.
"""

WHEN_TO_CALL: dict[str, str] = {
    "search_code": (
        'a question about the code ("where are retries configured?") returns the '
        "relevant code with `repo:path:start-end` citations. Use it before grep or opening "
        "many files."
    ),
    "find_symbol": "the definition of a function, class or method you can name (exact).",
    "related_files": (
        "what a file imports, what imports it, its tests and what changes with it: "
        "call it before changing a file (a citation works as its path)."
    ),
    "outline": (
        "a file's definitions in order, nested, with lines and signatures: read it "
        "before opening a whole file, then read only the lines you need."
    ),
    "repo_map": (
        "the most central files of a repository or folder with their outlines: "
        "call it first in code you do not know yet."
    ),
    "find_references": (
        "every use of a definition (a name, or a citation of it): call it before "
        "renaming or changing one, instead of grep."
    ),
    "callers": "the definitions that call a function or method, with the lines of the calls.",
    "callees": "what a function or method calls, each name with where it is defined.",
    "impact": (
        "what depends on a definition or a file (callers, importers, co-changes) and "
        "the tests that reach it: call it before changing one, to know what to re-check."
    ),
    "diff_context": (
        "a change's definitions, their callers and the tests that reach them, packed "
        "with citations (two indexed refs, or a git diff): review a change or fix what it broke."
    ),
    "explain_search": "why search_code ranked what it did, when it missed something.",
    "list_repositories": "the indexed repositories and whether their index is stale.",
    "sync_index": "re-index after you edited files, when results look stale.",
}
