"""What a bot's analysed games say over many (arena analyse, kept in analyses.sqlite beside the store): the
seeds its moves gave away, per move, and the won games it threw, by phase of the game, beside the same
figures for the reference bots (arena's own bots, bots/) that played in the same tournament.

The phases, by how many of the seeds are still in the pits (not yet in a store) when the move is made:
the opening while more than two thirds are, the endgame once a third or fewer are (where the analysis is
exact), the middle between. Read from the store and the analyses kept beside it only; the moves of a
tournament's opening (not the bots' choice) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.game.analysis import Analysis, Mark, positions
from arena.game.rules import Position, parse_rules
from arena.match.record import GameRecord
from arena.report.analysed import mover
from arena.report.marked import kept_analyses
from arena.store.writer import Store

PHASES = ("opening", "middle", "endgame")
PHASE_WORDS = (
    "the opening: while more than two thirds of the seeds are still in the pits; the endgame: once a third "
    "or fewer are; the middle: between"
)
# arena's own bots (bots/): where they played, their figures are the yardstick beside a bot's
REFERENCE_BOTS = ("random", "greedy", "alphabeta", "solver")
THROWN = (Mark.WIN_TO_LOSS, Mark.WIN_TO_DRAW)


@dataclass(frozen=True, slots=True)
class Tally:
    """A bot's analysed moves in one phase: how many, the seeds they gave away in all, how many of them
    threw a won game (to a loss or a draw), and how many were valued exactly."""

    moves: int = 0
    lost: float = 0.0
    thrown: int = 0
    exact: int = 0

    def plus(self, cost: float, thrown: bool, exact: bool) -> Tally:
        return Tally(self.moves + 1, self.lost + cost, self.thrown + thrown, self.exact + exact)

    def per_move(self) -> str:
        return f"{self.lost / self.moves:.2f}" if self.moves else "–"


@dataclass(frozen=True, slots=True)
class Mistakes:
    """One bot's figures over its analysed games: a tally per phase (PHASES' order), and how many of the
    games it threw (a move of its lost a won game)."""

    bot: str
    games: int
    phases: tuple[Tally, Tally, Tally]
    thrown_games: int

    def total(self) -> Tally:
        return Tally(
            sum(t.moves for t in self.phases),
            sum(t.lost for t in self.phases),
            sum(t.thrown for t in self.phases),
            sum(t.exact for t in self.phases),
        )

    def row(self) -> tuple[str, ...]:
        """The page's row: bot, games, moves, seeds lost per move (each phase, all), won games thrown (moves
        in each phase, games), the share of moves valued exactly."""
        total = self.total()
        exact = f"{100 * total.exact / total.moves:.0f}%" if total.moves else "–"
        return (
            self.bot,
            str(self.games),
            str(total.moves),
            *(t.per_move() for t in self.phases),
            total.per_move(),
            *(str(t.thrown) for t in self.phases),
            str(self.thrown_games),
            exact,
        )


def phase(pos: Position, total_seeds: int) -> int:
    """The phase (an index into PHASES) of a move made from `pos`."""
    in_pits = sum(pos.board) - pos.store(0) - pos.store(1)
    if 3 * in_pits > 2 * total_seeds:
        return 0
    return 2 if 3 * in_pits <= total_seeds else 1


def tally(records: list[tuple[GameRecord, Analysis]]) -> dict[str, Mistakes]:
    """Every bot's figures over the analysed games given, by name."""
    found: dict[str, tuple[list[Tally], int, int]] = {}
    for record, analysis in records:
        rules = parse_rules(record.rules)
        game = positions(rules, record.plies)
        threw: set[str] = set()
        for bot in {record.south, record.north}:
            tallies, games, thrown = found.get(bot, ([Tally(), Tally(), Tally()], 0, 0))
            found[bot] = (tallies, games + 1, thrown)
        for m in analysis.moves:
            if m.opening:
                continue
            bot = mover(record, m.ply, m.side)
            k = phase(game[m.ply - 1], rules.total_seeds)
            tallies = found[bot][0]
            tallies[k] = tallies[k].plus(m.cost, m.mark in THROWN, m.exact)
            if m.mark in THROWN:
                threw.add(bot)
        for bot in threw:
            tallies, games, thrown = found[bot]
            found[bot] = (tallies, games, thrown + 1)
    return {
        bot: Mistakes(bot, games, (tallies[0], tallies[1], tallies[2]), thrown)
        for bot, (tallies, games, thrown) in found.items()
    }


def analysed_games(store: Store) -> list[tuple[GameRecord, Analysis]]:
    """The store's games with an analysis kept beside it (of that very game: its rules and plies)."""
    return [(record, analysis) for _, record, analysis in kept_analyses(store) or ()]


def rows_for(bot: str, figures: dict[str, Mistakes]) -> tuple[tuple[str, ...], ...]:
    """A bot's page's rows: its own, then each reference bot's that played (not itself)."""
    if bot not in figures:
        return ()
    others = [figures[name] for name in REFERENCE_BOTS if name in figures and name != bot]
    return tuple(m.row() for m in (figures[bot], *others))
