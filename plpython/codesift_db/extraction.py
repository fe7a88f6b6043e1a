"""The name released migrations gave the write side: a database migrated before ingest/
existed runs extraction triggers and resolve_edges whose bodies import this module, and a
loader may write while the server's Python is newer than its functions, until `codesift
migrate` re-creates them. The code is ingest/extraction.py."""

from .ingest.extraction import on_blobs_inserted, resolve_repository_edges

__all__ = ["on_blobs_inserted", "resolve_repository_edges"]
