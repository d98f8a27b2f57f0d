"""Where a game was lost: every position of a played game valued by the solver, every move marked by what
it cost the player who made it.

A position's value is the final margin in seeds for the player to move under best play by both (the
solver's). It is exact where the search finished within its budget, else the estimate of the deepest
iteration that finished, with that depth: an estimate is never called exact. A move's cost is the value of
the position before it (what the best move keeps) minus the value of the position it led to, for the same
player; the mark says whether that cost changed the game's result (a won game lost or drawn, a drawn game
lost) or only seeds.

Positions are searched from the end of the game back to its start with one solver: late positions solve
at once, and what they leave in the solver's table is what the earlier, harder ones search into. Every
rule set of the engine is analysed (Kalah's options, `early`, the pie rule, relay): the solver plays them
all, and a SWAP is a move like any other (it hands the side to move to the other player).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from arena.game.rules import SIDE_NAMES, SWAP, Move, Position, Rules
from arena.game.solver import Solver

# Below this share of the game's budget a position still gets this long: a search with no time at all
# would have no finished iteration, so no value.
MIN_SECONDS = 0.02


@dataclass(frozen=True, slots=True)
class Budget:
    """How long the analysis may search: `position` seconds at most for one position, `game` seconds for
    all of them (shared out evenly among the positions not yet searched). `depth`, if given, also stops
    each search after its iteration of that many moves: the result then does not depend on the machine."""

    position: float = 1.0
    game: float = 10.0
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.position <= 0 or self.game <= 0:
            raise ValueError("a budget must be a positive number of seconds")
        if self.depth is not None and self.depth < 1:
            raise ValueError("a depth must be at least one move")


@dataclass(frozen=True, slots=True)
class Value:
    """A position's value for the player to move, in seeds of final margin. `exact`: under perfect play
    (the search finished, or the game is over); else an estimate from the iteration `depth` moves deep.
    `best` is a best move (None once the game is over)."""

    seeds: float
    exact: bool
    depth: int
    best: Move | None
    seconds: float = 0.0

    def words(self) -> str:
        """'+4 (exact)' or '+2.75 (estimate, depth 9)'."""
        if self.exact:
            return f"{round(self.seeds):+d} (exact)"
        return f"{self.seeds:+.2f} (estimate, depth {self.depth})"


class Mark(Enum):
    """What a move cost the player who made it."""

    BEST = "best"  # nothing lost
    SEEDS = "seeds"  # seeds of margin lost, the result unchanged
    WIN_TO_DRAW = "drew a won game"
    WIN_TO_LOSS = "lost a won game"
    DRAW_TO_LOSS = "lost a drawn game"

    @property
    def changes_result(self) -> bool:
        return self not in (Mark.BEST, Mark.SEEDS)


def _standing(seeds: float) -> str:
    return "won" if seeds > 0 else ("lost" if seeds < 0 else "drawn")


def mark(before: float, after: float, best_played: bool) -> Mark:
    """The mark of a move that turned a value of `before` into `after`, both for the player who moved."""
    if best_played or after >= before:
        return Mark.BEST
    was, now = _standing(before), _standing(after)
    if was == now:
        return Mark.SEEDS
    if was == "won":
        return Mark.WIN_TO_LOSS if now == "lost" else Mark.WIN_TO_DRAW
    if was == "drawn" and now == "lost":
        return Mark.DRAW_TO_LOSS
    return Mark.SEEDS  # rounding between estimates: a lost game cannot get worse than lost


@dataclass(frozen=True, slots=True)
class MoveCost:
    """One ply of the game, valued for the player who made it: `before` is the position's value (what its
    best move, `best_move`, keeps), `after` what the move played left. `exact` only if both are."""

    ply: int  # 1-based, counting the opening's plies
    number: int  # the bots' own move number, as the replay page counts them (1: the first after the opening)
    side: int  # the side that moved (SOUTH or NORTH)
    move: Move
    best_move: Move | None
    before: float
    after: float
    exact: bool
    depth: int  # the shallower of the two values' depths when not exact (0 when exact)
    opening: bool  # part of the opening, not chosen by the bots: marked, but never the turning point
    mark: Mark

    @property
    def cost(self) -> float:
        """Seeds of final margin the move gave away (never below 0)."""
        return 0.0 if self.mark is Mark.BEST else max(0.0, self.before - self.after)

    def seeds_words(self) -> str:
        cost = self.cost
        if self.exact:
            whole = round(cost)
            return f"{whole} seed{'s' * (whole != 1)} lost"
        return f"about {cost:.1f} seeds lost (estimate, depth {self.depth})"

    def words(self) -> str:
        """The mark in words: 'best', '3 seeds lost', '5 seeds lost: lost a won game'."""
        if self.mark is Mark.BEST:
            return "best" if self.exact else f"best as far as the search sees (depth {self.depth})"
        if self.mark is Mark.SEEDS:
            return self.seeds_words()
        return f"{self.seeds_words()}: {self.mark.value}"

    def turning_words(self, who: str = "") -> str:
        """'move 23, north: 5 seeds lost, the game was won before it and lost after'."""
        name = f" ({who})" if who else ""
        head = f"{self.label()}, {SIDE_NAMES[self.side]}{name}: {self.seeds_words()}"
        if self.mark.changes_result:
            was, now = _standing(self.before), _standing(self.after)
            return f"{head}, the game was {was} before it and {now} after"
        return head

    def label(self) -> str:
        """'move 12', or 'opening 2' for a ply of the opening (numbered as the replay page does)."""
        return f"opening {self.ply}" if self.opening else f"move {self.number}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ply": self.ply,
            "number": self.number,
            "side": self.side,
            "move": self.move,
            "best_move": self.best_move,
            "before": self.before,
            "after": self.after,
            "exact": self.exact,
            "depth": self.depth,
            "opening": self.opening,
            "mark": self.mark.name,
            "cost": self.cost,
            "words": self.words(),
        }


@dataclass(frozen=True, slots=True)
class Analysis:
    """A whole game analysed: `values[k]` is the value of the position after k plies (0: the start), for
    the player to move there; `moves[k]` the (k+1)-th ply's mark."""

    rules: str
    values: tuple[Value, ...]
    moves: tuple[MoveCost, ...]
    budget: Budget
    seconds: float
    nodes: int

    def turning_point(self) -> MoveCost | None:
        """The move that decided the result: the last one of the bots' that changed it (the result has stood
        since); where none did, the costliest; None if no move of theirs lost anything."""
        played = [m for m in self.moves if not m.opening]
        changed = [m for m in played if m.mark.changes_result]
        if changed:
            return changed[-1]
        costly = [m for m in played if m.cost > 0]
        return max(costly, key=lambda m: m.cost) if costly else None

    def turning_words(self, who: Callable[[MoveCost], str] | None = None) -> str:
        """The turning point in a sentence, for the terminal and the page."""
        turn = self.turning_point()
        if turn is None:
            exact = all(m.exact for m in self.moves if not m.opening)
            return "no move lost a seed" + ("" if exact else " as far as the search sees")
        words = turn.turning_words(who(turn) if who else "")
        if turn.mark.changes_result:
            return f"turning point: {words}"
        return f"no move changed the result; the costliest was {words}"

    def exact_positions(self) -> int:
        return sum(v.exact for v in self.values)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values, what is kept beside the store and what `from_dict` reads back."""
        return {
            "rules": self.rules,
            "values": [[v.seeds, v.exact, v.depth, v.best, v.seconds] for v in self.values],
            "moves": [m.to_dict() for m in self.moves],
            "budget": [self.budget.position, self.budget.game, self.budget.depth],
            "seconds": self.seconds,
            "nodes": self.nodes,
            "turning_point": self.turning_words(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Analysis:
        values = tuple(Value(s, e, d, b, t) for s, e, d, b, t in data["values"])
        moves = tuple(
            MoveCost(
                m["ply"],
                m["number"],
                m["side"],
                m["move"],
                m["best_move"],
                m["before"],
                m["after"],
                m["exact"],
                m["depth"],
                m["opening"],
                Mark[m["mark"]],
            )  # fmt: skip
            for m in data["moves"]
        )
        position, game, depth = data["budget"]
        return cls(
            data["rules"], values, moves, Budget(position, game, depth), data["seconds"], data["nodes"]
        )


@dataclass(frozen=True, slots=True)
class Searched:
    """Progress: position `index` (plies done before it) has its value; `done` of `total` so far."""

    index: int
    done: int
    total: int
    value: Value
    seconds: float  # since the analysis began


def positions(rules: Rules, plies: Sequence[Move]) -> list[Position]:
    """The start and the position after each ply; IllegalMove (from the engine) at a move that does not
    replay. A game stopped by a forfeit ends on a position still in play."""
    game = [rules.initial()]
    for move in plies:
        game.append(rules.play(game[-1], move))
    return game


def final_value(pos: Position) -> Value:
    """A finished game's value for the player to move: the store difference, exact."""
    return Value(pos.store(pos.to_move) - pos.store(1 - pos.to_move), True, 0, None)


def analyse(
    rules: Rules,
    plies: Sequence[Move],
    opening: int = 0,
    budget: Budget | None = None,
    progress: Callable[[Searched], None] | None = None,
    solver: Solver | None = None,
) -> Analysis:
    """Value every position of the game `plies` (the opening's first `opening` of them included) and mark
    every ply. `solver` may be one kept from other games under the same rules: its table carries over."""
    budget = budget or Budget()
    solver = solver or Solver(rules)
    started = time.perf_counter()
    game = positions(rules, plies)
    values: list[Value | None] = [None] * len(game)
    todo = [k for k, pos in enumerate(game) if pos.ended is None]
    nodes = 0
    for k, pos in enumerate(game):
        if pos.ended is not None:
            values[k] = final_value(pos)
    for done, k in enumerate(reversed(todo), 1):
        left = budget.game - (time.perf_counter() - started)
        share = max(MIN_SECONDS, min(budget.position, left / (len(todo) - done + 1)))
        found = solver.search(game[k], share, depth=budget.depth)
        nodes += found.nodes
        value = Value(found.value, found.exact, found.depth, found.best_move, found.seconds)
        values[k] = value
        if progress:
            progress(Searched(k, done, len(todo), value, time.perf_counter() - started))
    known = tuple(v for v in values if v is not None)
    assert len(known) == len(game)
    moves = tuple(
        _cost(k, game[k], game[k + 1], plies[k], known[k], known[k + 1], opening) for k in range(len(plies))
    )
    return Analysis(rules.spec, known, moves, budget, time.perf_counter() - started, nodes)


def _cost(
    k: int, pos: Position, child: Position, move: Move, before: Value, after: Value, opening: int
) -> MoveCost:
    """Ply k+1 valued for its mover. The child's value is for the player to move there: the same player
    after an extra turn, else (and after a SWAP, which hands the side to the other player) the other."""
    same = child.to_move == pos.to_move and move != SWAP
    after_seeds = after.seeds if same else -after.seeds
    exact = before.exact and after.exact
    depth = 0 if exact else min(v.depth for v in (before, after) if not v.exact)
    best_played = move == before.best
    return MoveCost(
        k + 1, max(0, k + 1 - opening), pos.to_move, move, before.best, before.seeds, after_seeds, exact,
        depth, k < opening,
        mark(before.seeds, after_seeds, best_played),
    )  # fmt: skip
