"""Who plays whom: the round robin and the gauntlet, as lists of `Slot`s.

A round is every ordered pair once (each pair meets twice, each bot once as south). The order inside a round
comes from a hash of (seed, round, south, north): the same seed and bots give the same schedule, and adding
a bot or a round inserts its games without reshuffling the others. Ratings are computed in this order, never
in the order games happen to finish, so parallel play does not change them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from arena.game.openings import Book, Opening
from arena.game.rules import Move
from arena.match.bots import Bot
from arena.match.referee import starts_anywhere


@dataclass(frozen=True, slots=True)
class Slot:
    """One scheduled game: round, its place in the round's shuffled order, and the two bot versions."""

    round: int
    ordinal: str
    south: Bot
    north: Bot
    opening: tuple[Move, ...] = ()  # plies from the start before the bots play (see arena/game/openings.py)


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


def _opening(book: Book | None, rnd: int, south: Bot, north: Bot) -> Opening:
    if book is None or not (starts_anywhere(south) and starts_anywhere(north)):
        return ()
    return book.for_round(rnd)


def gauntlet(hero: Bot, bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None) -> list[Slot]:
    """The round robin's games that involve `hero`: it meets every other bot twice a round."""
    return [s for s in round_robin(bots, rounds, seed, book) if hero.name in (s.south.name, s.north.name)]


def schedule(
    bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None, hero: Bot | None = None
) -> list[Slot]:
    """The whole schedule of a tournament of `rounds` rounds: the round robin, or `hero`'s gauntlet."""
    return gauntlet(hero, bots, rounds, seed, book) if hero else round_robin(bots, rounds, seed, book)
