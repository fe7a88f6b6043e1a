"""Import edges: extraction of import statements from source (import_extraction.py) and
their resolution to paths of a repository (import_resolution.py), re-exported here for the
callers that import both from one place.

    extract_imports(path, text, language, limits=None) -> [{module, names, relation, line}]
    resolve_import(source_path, module, language, paths, go_module=None, *, names=None)
    resolve_imports(path, imports, language, paths, go_module=None) -> [edge dict]
    go_module_path(go_mod_text) -> str | None
"""

from .import_extraction import LANGUAGES, MAX_PARSE_BYTES, extract_imports
from .import_resolution import go_module_path, resolve_import, resolve_imports

__all__ = [
    "LANGUAGES",
    "MAX_PARSE_BYTES",
    "extract_imports",
    "go_module_path",
    "resolve_import",
    "resolve_imports",
]
