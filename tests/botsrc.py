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

# FIRST_LEGAL in C; `/*HERE*/` is where a test may edit the source (a compile error).
FIRST_LEGAL_C = r"""#include <stdio.h>
#include <string.h>
int main(void) {
    static char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "QUIT", 4) == 0) break;
        if (strncmp(line, "MOVE ", 5) != 0) continue;
        int board[256], k = 0, n = 0, used;
        char *p = line + 5;
        sscanf(p, "%*d%n", &used); /*HERE*/
        for (p += used; k < 256 && sscanf(p, "%d%n", &board[k], &n) == 1; p += n) k++;
        int move = 1;
        while (move < k / 2 - 1 && board[move - 1] == 0) move++;
        printf("%d\n", move);
        fflush(stdout);
    }
    return 0;
}
"""

# Burns CPU in a thread all along and logs its CPU time on stderr at every MOVE (logs, since no file is
# writable in the sandbox), then plays its first legal pit: the tests see how much CPU it got between moves.
CPU_REPORTER = """\
import sys, threading, time


def ponder():
    while True:
        pass


threading.Thread(target=ponder, daemon=True).start()
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        print(f"cpu {time.process_time()}", file=sys.stderr, flush=True)
        pits = (len(words) - 4) // 2
        print(next(p for p in range(1, pits + 1) if words[1 + p] != "0"), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


def first_legal_after(prelude: str) -> str:
    """FIRST_LEGAL with `prelude` run first (e.g. a hang at start)."""
    return prelude.rstrip("\n") + "\n" + FIRST_LEGAL
