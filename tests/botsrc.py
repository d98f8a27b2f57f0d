"""Source code of the small bots the tests write into bots folders: one copy of each, not one per test."""

from __future__ import annotations

# Plays its first non-empty pit: deterministic, quick, stdlib only.
FIRST_LEGAL = """import sys
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        board = [int(w) for w in words[2:]]
        print(next(p for p in range(1, len(board) // 2) if board[p - 1]), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


def first_legal_after(prelude: str) -> str:
    """FIRST_LEGAL with `prelude` run first (e.g. a hang at start)."""
    return prelude.rstrip("\n") + "\n" + FIRST_LEGAL
