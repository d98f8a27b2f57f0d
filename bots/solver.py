"""Solver Kalah bot: perfect on small boards, a time-limited search with a transposition table on big ones.

Each MOVE runs arena.game.solver's iterative deepening (alpha-beta with a transposition table, MTD(f), see
arena/game/solver.py) for a part of the MOVE time. When an iteration reaches the end of the game everywhere,
the move is perfect. On a board too big for that, such as Kalah(6,6), it is not: it answers with the deepest
finished iteration, an alpha-beta bot with a table, which scored 67.5% (95% interval 52-80%) over 40 games
against alphabeta at 100 ms a move; it can lose to alphabeta, and ranks near it. The table lives as long as
the process, so what one move solved (every position seen, under these rules) makes the next moves and games
quick: on Kalah(4,3) only the first few moves of its first game are estimates.

Time: a quarter of the MOVE time, counted from when the MOVE line was read. The search looks at the clock
every TICK nodes. The table holds at most MAX_ENTRIES positions (Kalah(4,3) solved takes 18,551): a Python
dict grows by copying itself whole into fresh memory, a pause no look at the clock can cut short, which on a
2-core VM took 27-35 ms at 175,000 entries and 110-180 ms at 700,000, a size a process reaches in a 20-round
tournament. A full table is dropped at the start of a move (11-14 ms, on that move's clock) for a new one.

It speaks protocol v1 (see protocol.md) through arena.botkit, which keeps track of the game (rules, the first
turn, SWAP) and of the clock, and it logs one line per move to stderr.
"""

import gc
import os
import sys

try:
    from arena.botkit import Turn, run
    from arena.game import solver as solver_module
    from arena.game.rules import Move
    from arena.game.solver import Solver
except ImportError:  # developing in the source tree without arena installed: use the arena beside bots/
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from arena.botkit import Turn, run
    from arena.game import solver as solver_module
    from arena.game.rules import Move
    from arena.game.solver import Solver

TIME_FRACTION = 0.25  # of the MOVE time, as protocol.md advises
MAX_SECONDS = 10.0
TICK = 16  # nodes between looks at the clock (the solver's default, 256, is 4 ms of search alone, 10+ loaded)
MAX_ENTRIES = 1 << 17  # the table's last growth (at 87,382 entries) copies it in a few milliseconds


class Player:
    """The bot between MOVEs: one Solver, its table kept while the rules stay the same and it has room."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        solver_module.TICK = TICK  # read by the solver at every node; this process is the bot's
        self.max_entries = max_entries
        self.solver: Solver | None = None

    def answer(self, turn: Turn) -> Move:
        """Solve (or search) the position botkit hands over: our side to move, as south, whatever side."""
        solver = self.solver
        if solver is None or solver.rules != turn.rules or len(solver.table) >= self.max_entries:
            self.solver = solver = None  # the old table is freed now, on this move's clock
            self.solver = solver = Solver(turn.rules, self.max_entries)
        found = solver.search(turn.position, turn.budget(TIME_FRACTION, MAX_SECONDS))
        kind = "exact" if found.exact else f"depth {found.depth}"
        print(
            f"move {found.best_move} value {found.value:+g} {kind} nodes {found.nodes} "
            f"ms {1000 * found.seconds:.0f}",
            file=sys.stderr,
        )
        gc.freeze()  # the table only grows: keep the garbage collector from walking it in a later move
        return found.best_move


def main() -> None:
    run(Player().answer)


if __name__ == "__main__":
    main()
