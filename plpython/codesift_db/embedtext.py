"""What text is embedded for a symbol and for a file.

The model reads at most 256 word pieces, so the head of the text decides the
vector: the location and the name come first (they carry the most meaning per
word piece), then the doc comment above the symbol, then the signature, then the
body, which is cut at a character cap well past 256 word pieces (the tokenizer
truncates the rest).
"""

import hashlib

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


def embedding_key(model: str, text: str) -> str:
    """The key of a vector: the model and the exact text it read. Equal keys are equal
    vectors, so a symbol unchanged in a new blob, branch or repository reuses its vector,
    and another model never reuses one."""
    return hashlib.sha256(f"{model}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
