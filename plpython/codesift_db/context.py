"""The retrieval pipeline's former single module, kept as a facade: the pipeline is
plpython/codesift_db/pipeline/ (one module per stage). The SQL shims import
codesift_db.pipeline.rows; this module keeps the names that lookup.py, and a server whose
plpython/ is updated before `codesift migrate` re-runs the shims, still import."""

from .file_kinds import CHANGELOG_PATH, TEST_PATH
from .pipeline.fusion import RRF_K, fuse, rrf
from .pipeline.graph import expand_graph
from .pipeline.hydrate import hydrate
from .pipeline.legs import FILE_DEPTH, SYMBOL_DEPTH
from .pipeline.params import Params, validate
from .pipeline.query import embed_query
from .pipeline.recency import apply_recency, path_prior
from .pipeline.rows import explain_rows, pack_rows, search_rows, why
from .pipeline.run import hybrid, run
from .pipeline.scope import resolve_scope
from .pipeline.standins import split_big_files

__all__ = [
    "CHANGELOG_PATH",
    "FILE_DEPTH",
    "RRF_K",
    "SYMBOL_DEPTH",
    "TEST_PATH",
    "Params",
    "apply_recency",
    "embed_query",
    "expand_graph",
    "explain_rows",
    "fuse",
    "hybrid",
    "hydrate",
    "pack_rows",
    "path_prior",
    "resolve_scope",
    "rrf",
    "run",
    "search_rows",
    "split_big_files",
    "validate",
    "why",
]
