"""Text from a bot, fit for a teacher's terminal.

What a bot writes on stderr, what its build prints, its files' names and its bot.toml reach the terminal of
whoever runs arena (a forfeit's detail, a build's error, a replay's stderr tail, a bot not entered). A
terminal obeys control characters in it: ESC sequences set its title, write its clipboard (OSC 52), clear
its screen; a carriage return or a bidirectional override makes a line read as something else. Every one of
them is shown instead, as the escape a student would write (`\\x1b`, `\\u202e`), so that the text stays
readable and does nothing.
"""

from __future__ import annotations

import re

# C0 but newline (and tab: it moves the cursor, no more), DEL, C1, and the controls that reorder text
# (bidirectional embeddings, overrides and isolates, the line and paragraph separators).
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ONE_LINE = re.compile(f"[\n{_CONTROL}]")
_LINES = re.compile(f"[{_CONTROL}]")


def printable(text: str, *, lines: bool = False) -> str:
    """`text` with every control character shown as its escape; newlines kept where `lines` (a block of
    lines printed as such: a stderr tail, a build's output), else shown too (one line: a forfeit's detail)."""
    return (_LINES if lines else _ONE_LINE).sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
