"""Alpha-beta Kalah bot: iterative-deepening negamax search on the arena rules engine (arena.game.rules).

Search: negamax with alpha-beta pruning, one ply per move. An extra turn keeps the same player to move, so
that child's value is taken as is instead of negated (and the window is passed unchanged); after SWAP the
side to move stays but changes hands, so that child is negated like any other. Iterative deepening searches
depth 1, 2, 3, ... until the time budget is spent, abandoning an unfinished iteration; it stops early when a
search reached the end of the game everywhere (the result is then exact).

Evaluation, from the mover's side: 4 * (own store - their store) + (seeds in own row - seeds in their row),
plus a large bonus once a store holds more than half of all seeds (the game is decided) or the game is over.

Move ordering: the best move of the previous iteration at that position first, then moves that end in the
own store (extra turns), then the others from the pit nearest the store.

Time: a quarter of the MOVE time, at most MAX_SECONDS, counted from when the MOVE line was read; the search
looks at the clock every TICK nodes (a fraction of a millisecond), so that it stops on time also on a busy
machine, where one slice of Python search takes several times longer than alone. For reproducible
benchmarks give a fixed depth with `--depth N` or ARENA_DEPTH=N: the bot then always searches to that depth
(deterministic), unless that would overrun half the MOVE time, where it answers with the deepest finished
iteration and says so on stderr.

It speaks protocol v1 (see protocol.md) through arena.botkit, which keeps track of the game (rules, the first
turn, SWAP) and of the clock, and it logs one line per move to stderr.
"""

import os
import sys
import time

try:
    from arena.botkit import Turn, run
    from arena.game.rules import SWAP, Move, Position
except ImportError:  # developing in the source tree without arena installed: use the arena beside bots/
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from arena.botkit import Turn, run
    from arena.game.rules import SWAP, Move, Position

MAX_SECONDS = 3.0
TIME_FRACTION = 0.25
HARD_FRACTION = 0.5  # of the MOVE time: where even a fixed-depth search stops (the rest is transport's)
TICK = 16  # nodes between looks at the clock: about 0.15 ms of search alone, a little more under load
WIN = 10**12  # beyond any (weighted) store difference
MAX_DEPTH = 200


class OutOfTime(Exception):
    """Raised inside the search when the clock runs out; the unfinished iteration is thrown away."""


class Search:
    def __init__(self, rules, deadline: float) -> None:
        self.rules = rules
        self.deadline = deadline
        self.nodes = 0
        self.best: dict[tuple, object] = {}  # best move found at a position, for move ordering
        self.cut = False  # did the last iteration stop anywhere at the depth limit (not at a game end)?

    def evaluate(self, pos: Position, total: int) -> int:
        me, them = pos.to_move, 1 - pos.to_move
        mine, theirs = pos.store(me), pos.store(them)
        score = 4 * (mine - theirs)
        if pos.ended is None:
            score += sum(pos.row(me)) - sum(pos.row(them))
        if 2 * mine > total or (pos.ended and mine > theirs):
            score += WIN
        elif 2 * theirs > total or (pos.ended and theirs > mine):
            score -= WIN
        return score

    def ordered(self, pos: Position) -> list:
        """Legal moves, most promising first."""
        n = pos.pits
        start = pos.to_move * (n + 1)
        hint = self.best.get((pos.board, pos.to_move, pos.turn == 1))

        def rank(move) -> tuple[int, int]:
            if move == hint:
                return (-1, 0)
            if move == SWAP:
                return (2, 0)
            seeds = pos.board[start + move - 1]
            extra_turn = seeds % (2 * n + 1) == n + 1 - move  # the last seed lands in the own store
            return (0 if extra_turn else 1, -move)

        return sorted(self.rules.legal_moves(pos), key=rank)

    def negamax(self, pos: Position, depth: int, alpha: int, beta: int, total: int) -> int:
        """The value of `pos` for the player to move, searched `depth` moves deep."""
        self.nodes += 1
        if self.nodes % TICK == 0 and time.perf_counter() > self.deadline:
            raise OutOfTime
        if pos.ended is not None:
            return self.evaluate(pos, total)
        if depth == 0:
            self.cut = True
            return self.evaluate(pos, total)
        best_value, best_move = -2 * WIN, None
        for move in self.ordered(pos):
            child = self.rules.play(pos, move)
            if child.to_move == pos.to_move and move != SWAP:  # extra turn: same player moves again
                value = self.negamax(child, depth - 1, alpha, beta, total)
            else:
                value = -self.negamax(child, depth - 1, -beta, -alpha, total)
            if value > best_value:
                best_value, best_move = value, move
                alpha = max(alpha, value)
                if alpha >= beta:
                    break
        if len(self.best) < 2_000_000:
            self.best[(pos.board, pos.to_move, pos.turn == 1)] = best_move
        return best_value


def choose(rules, pos: Position, budget: float, depth_limit: int | None, hard_limit: float) -> tuple:
    """(move, depth reached, value, nodes) by iterative deepening within `budget` seconds."""
    started = time.perf_counter()
    moves = rules.legal_moves(pos)
    fixed = depth_limit is not None
    search = Search(rules, started + (hard_limit if fixed else budget))
    best = search.ordered(pos)[0]
    if len(moves) == 1:
        return best, 0, 0, 0
    total = sum(pos.board)
    reached, value = 0, 0
    for depth in range(1, (depth_limit or MAX_DEPTH) + 1):
        search.cut = False
        try:
            value = search.negamax(pos, depth, -2 * WIN, 2 * WIN, total)
        except OutOfTime:
            if fixed:
                print(f"depth {depth} ran out of time; answering from depth {reached}", file=sys.stderr)
            break
        best = search.best.get((pos.board, pos.to_move, pos.turn == 1), best)
        reached = depth
        if not search.cut:
            break  # the whole game tree was searched: deeper cannot change anything
        if not fixed and time.perf_counter() - started > budget / 2:
            break  # the next iteration would most likely not finish
    return best, reached, value, search.nodes


def fixed_depth() -> int | None:
    """A fixed search depth from `--depth N` / `--depth=N` on the command line or ARENA_DEPTH, else None."""
    args = sys.argv[1:]
    value = os.environ.get("ARENA_DEPTH")
    for i, arg in enumerate(args):
        if arg == "--depth" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--depth="):
            value = arg.partition("=")[2]
    return max(1, int(value)) if value else None


def main() -> None:
    depth_limit = fixed_depth()

    def answer(turn: Turn) -> Move:
        """Search the position botkit hands over (our side to move, as south, whatever side we are)."""
        budget, hard_limit = turn.budget(TIME_FRACTION, MAX_SECONDS), turn.budget(HARD_FRACTION)
        reply, depth, value, nodes = choose(turn.rules, turn.position, budget, depth_limit, hard_limit)
        print(f"move {reply} depth {depth} value {value} nodes {nodes}", file=sys.stderr)
        return reply

    run(answer)


if __name__ == "__main__":
    main()
