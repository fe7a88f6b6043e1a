"""What text is embedded for a symbol and for a file.

The model reads at most 256 word pieces, so the head of the text decides the
vector: the location and the name come first (they carry the most meaning per
word piece), then the signature, then the body, which is cut at a character cap
well past 256 word pieces (the tokenizer truncates the rest).
"""

BODY_CHARS = 1500


def symbol_text(
    path: str | None, kind: str, qualified_name: str, signature: str | None, body: str
) -> str:
    head = f"{path or ''} {kind} {qualified_name}".strip()
    sig = (signature or "").strip()
    text = body if not sig or body.lstrip().startswith(sig[:40]) else f"{sig}\n{body}"
    return f"{head}\n{text[:BODY_CHARS]}"


def file_text(path: str | None, content: str) -> str:
    return f"{path or ''}\n{content[:BODY_CHARS]}"
