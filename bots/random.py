"""Random Kalah bot: plays a uniformly random legal pit. A template to copy for your own bot.

It speaks protocol v1 (see protocol.md): it reads the referee's lines from stdin one by one and answers every
MOVE with exactly one line on stdout. It never plays SWAP, even where the pie rule would allow it, to keep
the template short. Standard library only.

Set the environment variable ARENA_SEED to make its choices repeatable. Run it by hand as
`python -u -P random.py`: -P keeps this file's folder off sys.path, so `import random` below finds the
standard library's module and not this file (arena starts .py bots that way).
"""

import os
import random
import sys


def choose(board: list[int]) -> int:
    """A random non-empty pit of ours. `board` is the MOVE view: our pits 1..n first, then our store, ..."""
    pits = len(board) // 2 - 1
    legal = [pit for pit in range(1, pits + 1) if board[pit - 1] > 0]
    return random.choice(legal)


def main() -> None:
    random.seed(os.environ.get("ARENA_SEED"))  # no seed: different games every run
    for line in sys.stdin:  # one referee line at a time
        words = line.split()  # also drops the line end, \n or \r\n
        if not words:
            continue
        command = words[0]
        if command == "NEWGAME":
            pass  # NEWGAME <pits> <seeds> <side> <rules>: a random bot keeps no state between moves
        elif command == "MOVE":
            # MOVE <ms> <our pits...> <our store> <their pits...> <their store>
            board = [int(word) for word in words[2:]]
            print(choose(board), flush=True)  # exactly one line per MOVE; flush, or the referee waits
        elif command == "END":
            pass  # END <win|loss|draw> <our store> <their store> <reason>: nothing to clean up
        elif command == "QUIT":
            break
        # any other line: ignored, as the protocol asks
        # (logs and debugging output go to stderr: print(..., file=sys.stderr))


if __name__ == "__main__":
    main()
