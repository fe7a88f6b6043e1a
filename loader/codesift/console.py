"""How the command line shows things: its consoles and the rendering of repository data.

Repository data (names, paths, symbols, code, error messages quoting them) is never
rendered as rich markup: it goes out as Text objects (plain). Control characters in data
shown to a person are made visible (\\x1b), and code printed to a terminal loses them
(strip_controls), so that escape sequences in indexed files never reach a terminal; piped
output stays exact. The commands (cli and the modules it runs) and the MCP tools' text
share these.
"""

import re
import sys

from rich.console import Console
from rich.text import Text

err = Console(stderr=True, soft_wrap=True)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # not \t or \n


def strip_controls(text: str) -> str:
    """Code for a terminal: every control character but newline and tab removed."""
    return _CONTROL.sub("", text)


def visible(text: str) -> str:
    """Data for a person: control characters shown as escapes (\\x1b), not obeyed."""
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], text)


def plain(text: object, style: str = "") -> Text:
    """Data as a rich renderable: no markup, no emoji codes, no control characters."""
    return Text(visible(str(text)), style=style)


def stdout_console() -> Console:
    """Tables on stdout; piped output gets a wide page instead of squeezed columns."""
    return Console() if sys.stdout.isatty() else Console(width=200)


# explain_context's `why`, as both explanations (ask --explain, MCP explain_search) read it
WHY_NAMED = (
    "(why->>'mention_rank')::int as named,"
    " coalesce((why->>'failing_frame')::bool, false) as failing"
)


def named_mark(named: int | None, failing: bool) -> str:
    """A candidate's rank among what the question names, `!` where its traceback failed;
    '' when the question names neither it nor its file."""
    return f"{named or ''}{'!' if failing else ''}"
