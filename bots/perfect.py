"""Perfect Kalah bot for small boards: the exact best move wherever arena.solver finishes the game in time.

Each MOVE runs the solver's iterative deepening (alpha-beta with a transposition table, see arena/solver.py)
for a part of the MOVE time. When an iteration reaches the end of the game everywhere, the move is perfect;
on a board too big for that it answers with the deepest finished iteration, like an alpha-beta bot. The
table lives as long as the process, so what one move solved (every position seen, under these rules) makes
the next moves and games quick: on Kalah(4,3) only the first few moves of its first game are estimates.

It speaks protocol v1 (see protocol.md) through arena.botkit, which keeps track of the game (rules, the first
turn, SWAP) and of the clock, and it logs one line per move to stderr.
"""

import gc
import os
import sys

try:
    from arena.botkit import Turn, run
    from arena.rules import Move
    from arena.solver import Solver
except ImportError:  # developing in the source tree without arena installed: use the arena beside bots/
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from arena.botkit import Turn, run
    from arena.rules import Move
    from arena.solver import Solver

TIME_FRACTION = 0.25  # of the MOVE time, as protocol.md advises; the search reads the clock every 256 nodes
MAX_SECONDS = 10.0


def main() -> None:
    solver: Solver | None = None  # kept across moves and games while the rules stay the same

    def answer(turn: Turn) -> Move:
        """Solve (or search) the position botkit hands over: our side to move, as south, whatever side."""
        nonlocal solver
        if solver is None or solver.rules != turn.rules:
            solver = Solver(turn.rules)
        found = solver.search(turn.position, turn.budget(TIME_FRACTION, MAX_SECONDS))
        kind = "exact" if found.exact else f"depth {found.depth}"
        print(
            f"move {found.best_move} value {found.value:+g} {kind} nodes {found.nodes} "
            f"ms {1000 * found.seconds:.0f}",
            file=sys.stderr,
        )
        gc.freeze()  # the table only grows: keep the garbage collector from walking it in a later move
        return found.best_move

    run(answer)


if __name__ == "__main__":
    main()
