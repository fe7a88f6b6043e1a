-- Ingestion: what extraction needs from a blob, and what a worktree index is.

-- The path a blob was first pushed at: language-specific rules (markdown,
-- Python packages) and detection when no language is given need a file name.
alter table codesift.blobs add column path_hint text;

-- Whether the indexed tree includes uncommitted worktree changes.
alter table codesift.repositories add column indexed_worktree boolean not null default false;
