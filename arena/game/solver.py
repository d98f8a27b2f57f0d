"""Exact and time-limited search on the rules engine: negamax alpha-beta with a transposition table.

One search serves `arena solve` (the perfect-play value of a board small enough to finish) and the bots
(the best move within a time budget): iterative deepening, where a position past the depth limit gets a
heuristic estimate, until an iteration meets no estimate at all; its value is then exact.

Values are margins. Inside the search, a position's value is its *remaining* margin for the side to move:
(own store - their store) at the end under best play by both, minus that difference now. For rules whose
play does not look at the stores (Kalah without `early`) it depends on the pits alone, so a position's
table entry serves every way of having reached it with other stores. Relay and `early` end on a store
holding more than half of the seeds, and a SWAP hands the stores over with the sides: there (and on the
game's first turn, before a SWAP) the table keys keep the stores.

A move whose child has the same player to move (an extra turn) keeps the sign; any other move, SWAP
included, flips it: SWAP leaves the board and the side to move as they were but hands that side to the
other player. Every rules object here plays finite games (stores never shrink, and a move that banks
nothing moves seeds forward), so the search always ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from arena.game.rules import SWAP, Kalah, Move, Position, Rules

SCALE = 4  # search units per seed of margin: an estimate counts a seed in one's own row as a quarter seed
EXACT = 1 << 30  # the depth of a table entry whose bounds hold for the game's true value
INFINITY = 1 << 40
MAX_DEPTH = 300  # moves deep; keeps the recursion within Python's default limit
MAX_ENTRIES = 2_000_000  # table entries (about 170 bytes each); beyond it, new positions are not kept
TICK = 256  # nodes between looks at the clock
# Iterations deepen one move at a time up to STEP_FROM moves, then by half again each time: the last
# iterations of an exact solve cost the most, and small steps there would only repeat work.
STEP_FROM = 12
GROWTH = 1.5


class OutOfTime(Exception):
    """The deadline passed inside an iteration; that iteration is thrown away."""


@dataclass(frozen=True, slots=True)
class Solution:
    """What a search found for the player to move. `value` is their final margin in seeds under best play
    when `exact`, else an estimate from the deepest finished iteration (`depth` moves; 0: none finished)."""

    value: float
    best_move: Move
    exact: bool
    depth: int
    nodes: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Progress:
    """How a long search stands, reported about once a second."""

    depth: int  # the iteration under way
    nodes: int
    seconds: float


# A move's child: (move, position, sign, gain). sign +1: the same player moves again; -1: the other player
# moves (or SWAP handed the side over). gain: how the mover's store difference changes, in search units.
_Child = tuple[Move, Position, int, int]


class Solver:
    """A search on one rules object. Its table outlives a call: the positions of later moves (and games)
    under the same rules find their earlier results there."""

    def __init__(self, rules: Rules, max_entries: int = MAX_ENTRIES) -> None:
        self.rules = rules
        self.n = rules.pits
        self.max_entries = max_entries
        self.table: dict[object, tuple[int, int, int, Move | None]] = {}  # key: (depth, lower, upper, move)
        self._stores_matter = not (isinstance(rules, Kalah) and not rules.early)
        self._small = 2 * rules.pits * rules.seeds < 256  # every count fits a byte: keys are bytes
        self._total = rules.total_seeds
        self._pie = rules.pie
        self.nodes = 0
        self._cut = False  # did the subtree being searched use an estimate anywhere?
        self._deadline = float("inf")
        self._progress: Callable[[Progress], None] | None = None
        self._started = 0.0
        self._next_report = 0.0
        self._depth = 0

    def key(self, pos: Position) -> object:
        """What decides a position's remaining value: the pits, the side to move, the phase of the opening
        (first turn, SWAP allowed, later) and the stores where they matter: under rules that look at them,
        and in the opening, where a SWAP to come would hand the stores over with the sides."""
        phase = 0 if pos.turn == 0 else (1 if pos.can_swap else 2)
        flag = pos.to_move * 3 + phase
        board = pos.board
        if phase == 2 and not self._stores_matter:
            n = self.n
            board = board[:n] + board[n + 1 : 2 * n + 1]
        if self._small:
            return bytes(board) + bytes((flag,))
        return (*board, flag)

    def search(
        self,
        pos: Position,
        seconds: float | None = None,
        progress: Callable[[Progress], None] | None = None,
        depth: int | None = None,
    ) -> Solution:
        """Deepen until the value is exact, `seconds` have passed or the iteration of `depth` moves is done
        (with `depth` and no `seconds` the result does not depend on the machine's speed); `progress` hears
        about it each second."""
        self._started = time.perf_counter()
        self._deadline = self._started + seconds if seconds is not None else float("inf")
        self._progress = progress
        self._next_report = self._started + 1.0
        self.nodes = 0
        if not self.rules.legal_moves(pos):
            raise ValueError("the game is over: there is no move to search")
        best, value, reached = next(self._children(pos, None))[0], 0, 0
        for iteration in _depths():
            if time.perf_counter() > self._deadline or (depth is not None and reached >= depth):
                break
            self._depth = iteration
            self._cut = False
            try:
                value, best = self._mtd(pos, iteration, value, best)
            except OutOfTime:
                break
            reached = iteration
            if not self._cut:
                return self._solution(pos, value, best, True, reached)
        return self._solution(pos, value, best, False, reached)

    def _mtd(self, pos: Position, depth: int, guess: int, hint: Move) -> tuple[int, Move]:
        """MTD(f): null-window searches closing in on the value from `guess`. The best move is the one that
        last proved a new lower bound: its value is at least the final one."""
        lower, upper, value, best = -INFINITY, INFINITY, guess, hint
        while lower < upper:
            beta = value + 1 if value == lower else value
            value, move = self._root(pos, depth, beta - 1, beta, best)
            if value >= beta:
                lower, best = value, move
            else:
                upper = value
        return value, best

    def _solution(self, pos: Position, value: int, best: Move, exact: bool, depth: int) -> Solution:
        margin = value / SCALE + self._lead(pos)
        seconds = time.perf_counter() - self._started
        return Solution(round(margin) if exact else margin, best, exact, depth, self.nodes, seconds)

    def _lead(self, pos: Position) -> int:
        """The store difference now, for the side to move."""
        n, board = self.n, pos.board
        return board[n] - board[2 * n + 1] if pos.to_move == 0 else board[2 * n + 1] - board[n]

    def _tick(self) -> None:
        now = time.perf_counter()
        if now > self._deadline:
            raise OutOfTime
        if self._progress and now >= self._next_report:
            self._next_report = now + 1.0
            self._progress(Progress(self._depth, self.nodes, now - self._started))

    def _step(self, pos: Position, move: Move, lead: int) -> _Child:
        child = self.rules.play(pos, move, None, True)  # a move legal_moves gave: not checked again
        n, b = self.n, child.board
        now = b[n] - b[2 * n + 1] if child.to_move == 0 else b[2 * n + 1] - b[n]
        sign = 1 if child.to_move == pos.to_move and move != SWAP else -1
        return move, child, sign, (sign * now - lead) * SCALE

    def _children(self, pos: Position, hint: Move | None) -> Iterator[_Child]:
        """Every move's child, most promising first: the table's best move (played alone first, as it often
        settles the position), then extra turns, then bigger gains. Plain tuples, sorted as they are: the
        search makes millions, and a dataclass of each cost a tenth of its time."""
        lead = self._lead(pos)
        moves = self.rules.legal_moves(pos)
        if hint in moves:
            yield self._step(pos, hint, lead)
        rest = []
        for k, move in enumerate(moves):
            if move != hint:
                _, child, sign, gain = self._step(pos, move, lead)
                rest.append((-sign, -gain, k, move, child))  # k: ties in move order, positions never compared
        rest.sort()
        for sign, gain, _, move, child in rest:
            yield move, child, -sign, -gain

    def _root(self, pos: Position, depth: int, alpha: int, beta: int, hint: Move) -> tuple[int, Move]:
        """The root's value and best move in a window, without a table cut-off (a move is needed)."""
        value, move = self._best_child(pos, depth, alpha, beta, hint)
        assert move is not None, "the root of a search is never a finished game"
        return value, move

    def _best_child(
        self, pos: Position, depth: int, alpha: int, beta: int, hint: Move | None
    ) -> tuple[int, Move | None]:
        """Fail-soft alpha-beta over the children: the best value in the window and its move."""
        best_value, best_move = -INFINITY, None
        low = alpha
        for move, child, sign, gain in self._children(pos, hint):
            if sign > 0:
                value = gain + self._negamax(child, depth - 1, low - gain, beta - gain)
            else:
                value = gain - self._negamax(child, depth - 1, gain - beta, gain - low)
            if value > best_value:
                best_value, best_move = value, move
                if value >= beta:
                    break
                low = max(low, value)
        return best_value, best_move

    def _negamax(self, pos: Position, depth: int, alpha: int, beta: int) -> int:
        """The remaining value of `pos` for the side to move, in search units (fail-soft alpha-beta)."""
        self.nodes += 1
        if self.nodes % TICK == 0:
            self._tick()
        if pos.ended is not None:
            return 0
        if not (self._pie and (pos.turn == 0 or pos.can_swap)):
            # Every seed still in a pit goes to one store or to none, and no SWAP is to come: the rest of the
            # game changes the margin by at most the seeds in play, either way. An exact bound, no estimate.
            n = self.n
            bound = (self._total - pos.board[n] - pos.board[2 * n + 1]) * SCALE
            if alpha >= bound:
                return bound
            if beta <= -bound:
                return -bound
        key = self.key(pos)
        entry = self.table.get(key)
        hint = None
        if entry is not None:
            known, lower, upper, hint = entry
            if known >= depth:
                if lower >= beta or upper <= alpha or lower == upper:
                    if known != EXACT:
                        self._cut = True  # an estimate decided this
                    return lower if lower >= beta or lower == upper else upper
                if known == EXACT:  # an estimate's bounds would make the value found here depend on it
                    alpha, beta = max(alpha, lower), min(beta, upper)
        if depth == 0:  # an estimate: a seed in one's own row is worth a quarter of a seed in the store
            self._cut = True
            n = self.n
            me, them = pos.to_move * (n + 1), (1 - pos.to_move) * (n + 1)
            return sum(pos.board[me : me + n]) - sum(pos.board[them : them + n])
        outer_cut, self._cut = self._cut, False
        best_value, best_move = self._best_child(pos, depth, alpha, beta, hint)
        cut = self._cut
        self._cut = outer_cut or cut
        lower = best_value if best_value > alpha else -INFINITY
        upper = best_value if best_value < beta else INFINITY
        self._store(key, depth if cut else EXACT, lower, upper, best_move)
        return best_value

    def _store(self, key: object, depth: int, lower: int, upper: int, move: Move | None) -> None:
        """Keep what a search learnt; bounds from searches of the same depth are merged."""
        old = self.table.get(key)
        if old is None:
            if len(self.table) < self.max_entries:
                self.table[key] = (depth, lower, upper, move)
            return
        known, old_lower, old_upper, old_move = old
        if known > depth:
            return
        if known == depth and max(lower, old_lower) <= min(upper, old_upper):
            if lower <= old_lower:
                move = old_move  # the move that proved the better lower bound stays
            self.table[key] = (depth, max(lower, old_lower), min(upper, old_upper), move)
        else:
            self.table[key] = (
                depth,
                lower,
                upper,
                move if lower > -INFINITY or old_move is None else old_move,
            )


def _depths() -> Iterator[int]:
    """The depth of each iteration in turn."""
    depth = 1
    while depth < MAX_DEPTH:
        yield depth
        depth = depth + 1 if depth < STEP_FROM else int(depth * GROWTH) + 1
    yield MAX_DEPTH


def solve(
    rules: Rules,
    pos: Position | None = None,
    seconds: float | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Solution:
    """The perfect-play value and a best move of `pos` (the start by default), or the best estimate when
    `seconds` run out first (then `exact` is false)."""
    return Solver(rules).search(rules.initial() if pos is None else pos, seconds, progress)
