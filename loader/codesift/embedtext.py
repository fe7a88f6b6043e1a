"""What text is embedded for a symbol and for a file.

The model reads at most 256 word pieces, so the head of the text decides the
vector: the location and the name come first (they carry the most meaning per
word piece), then the doc comment above the symbol, then the signature, then the
body, which is cut at a character cap well past 256 word pieces (the tokenizer
truncates the rest).
"""

BODY_CHARS = 1500
DOC_CHARS = 400


def symbol_text(
    path: str | None,
    kind: str,
    qualified_name: str,
    signature: str | None,
    body: str,
    doc: str | None = None,
) -> str:
    head = f"{path or ''} {kind} {qualified_name}".strip()
    if doc:
        head = f"{head}\n{doc[:DOC_CHARS]}"
    sig = (signature or "").strip()
    text = body if not sig or body.lstrip().startswith(sig[:40]) else f"{sig}\n{body}"
    return f"{head}\n{text[:BODY_CHARS]}"


def file_text(path: str | None, content: str) -> str:
    return f"{path or ''}\n{content[:BODY_CHARS]}"
