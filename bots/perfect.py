"""Perfect Kalah bot for small boards: the exact best move wherever arena.solver finishes the game in time.

Each MOVE runs the solver's iterative deepening (alpha-beta with a transposition table, see arena/solver.py)
for a part of the MOVE time. When an iteration reaches the end of the game everywhere, the move is perfect;
on a board too big for that it answers with the deepest finished iteration, like an alpha-beta bot. The
table lives as long as the process, so what one move solved (every position seen, under these rules) makes
the next moves and games quick: on Kalah(4,3) only the first few moves of its first game are estimates.

It speaks protocol v1 (see protocol.md) and logs one line per move to stderr.
"""

import gc
import os
import sys
import time

try:
    from arena.rules import SOUTH, Position, RulesError, parse_rules
    from arena.solver import Solver
except ImportError:  # developing in the source tree without arena installed: use the arena beside bots/
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from arena.rules import SOUTH, Position, RulesError, parse_rules
    from arena.solver import Solver

TIME_FRACTION = 0.25  # of the MOVE time, as protocol.md advises; the search reads the clock every 256 nodes
MAX_SECONDS = 10.0


def main() -> None:
    rules, solver = None, None
    can_swap = first_turn = False
    for line in sys.stdin:
        received = time.perf_counter()
        words = line.split()
        if not words:
            continue
        if words[0] == "NEWGAME" and len(words) >= 5:  # NEWGAME <pits> <seeds> <south|north> <rules>
            try:
                rules = parse_rules(words[4])
            except RulesError as e:
                print(f"unknown rules, playing plain Kalah: {e}", file=sys.stderr)
                rules = None
            # SWAP is ours only on our first MOVE as north; as south, the game's first turn (with its extra
            # turns) is turn 0, which the pie rule and no-first-extra treat specially.
            can_swap = rules is not None and rules.pie and words[3] == "north"
            first_turn = rules is not None and words[3] == "south"
        elif words[0] == "MOVE":  # MOVE <ms> <our pits> <our store> <their pits> <their store>
            ms = int(words[1])
            view = [int(word) for word in words[2:]]
            if rules is None or len(view) != 2 * rules.pits + 2:  # no (usable) NEWGAME: assume plain Kalah
                rules, first_turn = parse_rules(f"kalah,pits={len(view) // 2 - 1}"), False
            if solver is None or solver.rules != rules:
                solver = Solver(rules)
            # our side to move, as south, whatever side we are
            pos = Position(tuple(view), SOUTH, 0) if first_turn else rules.from_view(view, can_swap)
            budget = min(ms / 1000 * TIME_FRACTION, MAX_SECONDS) - (time.perf_counter() - received)
            found = solver.search(pos, budget)
            kind = "exact" if found.exact else f"depth {found.depth}"
            print(
                f"move {found.best_move} value {found.value:+g} {kind} nodes {found.nodes} "
                f"ms {1000 * found.seconds:.0f}",
                file=sys.stderr,
            )
            can_swap = False
            if first_turn and rules.play(pos, found.best_move).to_move != SOUTH:
                first_turn = False  # our first turn is over: the opponent moves (or swaps) next
            print(found.best_move, flush=True)
            gc.freeze()  # the table only grows: keep the garbage collector from walking it in a later move
        elif words[0] == "END":
            can_swap = first_turn = False  # the next game starts afresh with its own NEWGAME
        elif words[0] == "QUIT":
            break


if __name__ == "__main__":
    main()
