"""The token count charged against every budget: an estimate of an LLM (BPE) tokenizer's
count, used by extraction (token counts stored per blob and symbol), the pipeline and packing,
and the MCP server.

estimate_tokens is a linear model of byte-class counts, each computed by a C-level
bytes.translate / count (no tokenizer, no regex; a few times faster than one regex pass):

    0.867 per letter run (a word or identifier piece)  + 0.039 per letter
    0.759 per lower->upper case change (camelCase)      + 0.679 per '_'
    1.031 per run of punctuation                        + 0.123 per punctuation char
    0.706 per digit                                     + 0.956 per line break
    1.02 per extra UTF-8 byte of non-ASCII characters

rounded up (at least 1 for non-empty text). The weights were fitted (least squares on
relative error) to the largest of three real BPE token counts, OpenAI's cl100k_base and
o200k_base and Anthropic's published legacy Claude tokenizer, on 40-line chunks of Python and
JavaScript, then raised 4 % so that undercounting, which could overflow a caller's budget,
stays rare. bench/token_estimator_bench.py measures it: on code it reads about 4.5 % high
against the Claude tokenizer (6 % mean absolute error, under by more than 10 % on 2 % of
chunks) and about 15 % high against cl100k_base and o200k_base; short header lines read
higher still. Every count only grows when text is appended, so neither does the estimate.
"""

import math
import string


def _table(classes: dict[str, str]) -> bytes:
    table = bytearray(b" " * 256)
    for chars, cls in classes.items():
        for ch in chars:
            table[ord(ch)] = ord(cls)
    return bytes(table)


_PUNCTUATION = string.punctuation.replace("_", "")
# Lower-case letters -> 'a', upper-case -> 'A', everything else -> ' '.
_CASE = _table({string.ascii_lowercase: "a", string.ascii_uppercase: "A"})
# ASCII punctuation except '_' -> '.', everything else -> ' '.
_PUNCT = _table({_PUNCTUATION: "."})
_DIGITS = string.digits.encode()
_NON_LETTERS = bytes(b for b in range(256) if chr(b) not in string.ascii_letters)


def estimate_tokens(text: str) -> int:
    """Estimated LLM (BPE) token count of `text`, biased slightly high; 0 for ''."""
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    size = len(raw)
    case = raw.translate(_CASE)
    punct = raw.translate(_PUNCT)
    first_is_letter = case[:1] != b" "
    letter_runs = case.count(b" a") + case.count(b" A") + first_is_letter
    punct_runs = punct.count(b" .") + (punct[:1] == b".")
    estimate = (
        0.867 * letter_runs
        + 0.039 * len(raw.translate(None, _NON_LETTERS))
        + 0.759 * case.count(b"aA")
        + 0.679 * text.count("_")
        + 1.031 * punct_runs
        + 0.123 * punct.count(b".")
        + 0.706 * (size - len(raw.translate(None, _DIGITS)))
        + 0.956 * text.count("\n")
        + 1.02 * (size - len(text))
    )
    return max(1, math.ceil(estimate))
