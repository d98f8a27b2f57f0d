"""Who plays whom: a `Schedule` names the games to play next, given the games played so far.

The round robin (`RoundRobin`, or its gauntlet of one bot) names all its games at once; an adaptive schedule
plugs in beside it, naming a few games at a time from the results so far.

A round is every ordered pair once (each pair meets twice, each bot once as south). The order inside a round
comes from a hash of (seed, round, south, north): the same seed and bots give the same schedule, and adding
a bot or a round inserts its games without reshuffling the others. Ratings are computed in this order, never
in the order games happen to finish, so parallel play does not change them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from arena.game.openings import Book, Opening, position_after
from arena.game.rules import NORTH, SOUTH, Move, Rules
from arena.match.bots import Bot
from arena.match.record import GameRecord, Reason
from arena.match.referee import starts_anywhere


@dataclass(frozen=True, slots=True)
class Slot:
    """One scheduled game: round, its place in the round's shuffled order, and the two bot versions."""

    round: int
    ordinal: str
    south: Bot
    north: Bot
    opening: tuple[Move, ...] = ()  # plies from the start before the bots play (see arena/game/openings.py)

    def unplayed(self, rules: Rules, culprit: str, reason: Reason, detail: str, said: str = "") -> GameRecord:
        """The game recorded without being played: `culprit` forfeits it where the opening left the board
        (a benched bot's, or one charged with failures its machines could not run it past)."""
        pos = position_after(rules, self.opening)
        names = (self.south.name, self.north.name)
        return GameRecord(
            rules=rules.spec,
            south=self.south.name,
            north=self.north.name,
            moves=(),
            south_store=pos.store(SOUTH),
            north_store=pos.store(NORTH),
            winner=self.north.name if culprit == self.south.name else self.south.name,
            reason=reason,
            faulty=culprit,
            detail=detail,
            said=said,
            move_ms=(),
            think_ms=dict.fromkeys(names, 0.0),
            moves_made=dict.fromkeys(names, 0),
            stderr=dict.fromkeys(names, ""),
            opening=self.opening,
        )


def _ordinal(seed: int, rnd: int, south: str, north: str) -> str:
    return hashlib.blake2b(f"{seed}:{rnd}:{south}:{north}".encode(), digest_size=8).hexdigest()


def round_robin(bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None) -> list[Slot]:
    """Every ordered pair of distinct bots once per round, in the seeded order. All games of a round start
    from the round's opening, so each pair plays it once from each side; games of a bot whose protocol
    cannot begin at an opening (a Manchester agent) start from the start position."""
    slots = [
        Slot(r, _ordinal(seed, r, s.name, n.name), s, n, _opening(book, r, s, n))
        for r in range(1, rounds + 1)
        for s in bots
        for n in bots
        if s.name != n.name
    ]
    return sorted(slots, key=lambda s: (s.round, s.ordinal))


def game(rnd: int, south: Bot, north: Bot, seed: int, book: Book | None = None) -> Slot:
    """The game of round `rnd` with these two bots on these sides, as every schedule names it: its place in
    the round's seeded order and the round's opening."""
    return Slot(
        rnd, _ordinal(seed, rnd, south.name, north.name), south, north, _opening(book, rnd, south, north)
    )


def _opening(book: Book | None, rnd: int, south: Bot, north: Bot) -> Opening:
    if book is None or not (starts_anywhere(south) and starts_anywhere(north)):
        return ()
    return book.for_round(rnd)


def gauntlet(hero: Bot, bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None) -> list[Slot]:
    """The round robin's games that involve `hero`: it meets every other bot twice a round."""
    return [s for s in round_robin(bots, rounds, seed, book) if hero.name in (s.south.name, s.north.name)]


Version = tuple[str, str]  # a bot version: its name and the digest of its code


@dataclass(frozen=True, slots=True)
class Result:
    """A game the store holds played (a benched bot's forfeit is not), as a schedule sees it."""

    round: int
    south: Version
    north: Version
    winner: str | None  # the winner's name; None: a draw
    repeat: bool = False  # an exact repeat of an earlier game (store.REPEAT): played, but no new evidence


def key(game: Slot | Result) -> tuple[int, Version, Version]:
    """What makes a game one of its schedule: its round and the two bot versions, south first."""
    if isinstance(game, Result):
        return game.round, game.south, game.north
    return game.round, (game.south.name, game.south.digest), (game.north.name, game.north.digest)


class Schedule(Protocol):
    """Who plays whom in a run. The run asks `next` with every played game the store holds, plays what it
    names, and asks again, until it names no game the run has not tried (a game it tried and could not
    play, as a benched bot's, is not named twice in one run)."""

    @property
    def bots(self) -> Sequence[Bot]: ...  # the field: every bot that may be named

    @property
    def book(self) -> Book | None: ...  # the openings its games start from (`next` may `expect` some)

    def next(self, results: Sequence[Result]) -> list[Slot]:
        """The games to play next, in the order their ratings count them; none: the schedule is done."""
        ...

    def played(self, results: Sequence[Result]) -> int:
        """How many of `results` are games of this schedule."""
        ...


@dataclass(frozen=True, slots=True)
class RoundRobin:
    """The round robin of `rounds` rounds (`round_robin`), or with a `hero` its gauntlet (`gauntlet`): every
    game known at once, so `next` names every one the store lacks."""

    bots: tuple[Bot, ...]
    rounds: int
    seed: int
    book: Book | None = None
    hero: Bot | None = None

    def slots(self) -> list[Slot]:
        """The whole schedule, in schedule order."""
        if self.hero:
            return gauntlet(self.hero, self.bots, self.rounds, self.seed, self.book)
        return round_robin(self.bots, self.rounds, self.seed, self.book)

    def next(self, results: Sequence[Result]) -> list[Slot]:
        done = {key(r) for r in results}
        return [s for s in self.slots() if key(s) not in done]

    def played(self, results: Sequence[Result]) -> int:
        done = {key(r) for r in results}
        return sum(key(s) in done for s in self.slots())
