"""An adaptive schedule: the next game pairs, chosen by what they would teach, until the ranking is settled.

A pure function of the seed, the batch's number and the results so far, so a resumed run, a cluster run and
a local run choose the same games. Every pairing is a pair of games from one opening, once from each side.
A batch holds, in this order:
- placement: a bot with fewer than `PLACEMENT` pairings (a new bot, or a changed one, whose old games no
  longer count) meets opponents spread over the whole ranking, so it lands near its place at once;
- exploration: a tenth of the batch, seeded random pairs of a bot of an open pair and one a few places
  from it, so that no early fluke goes unchallenged;
- the rest, one pairing at a time, the pairing that most shrinks the variance of the pairs the rule still
  has open (`settle`), each weighted by its own variance, so that relative progress counts: a pairing's
  effect on that variance is exact for the normal posterior (a rank-one update of the covariance), and
  each pick is taken into account before the next, so a batch spreads over the open pairs.
A settled pair is left alone: a bot that joins, changes or is withdrawn reopens only the pairs near it. So
is a pair that can only repeat its games (`Adaptive.exhausted`: deterministic bots whose next opening they
have played already), which would cost games and teach nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from arena.game.openings import Book
from arena.match.bots import Bot
from arena.stats.posterior import ELO_PER_NAT, Pairs, Posterior, from_games, posterior
from arena.stats.settle import Rule, Status, Verdict, verdict
from arena.tournament.schedule import Result, Slot, game, key

if TYPE_CHECKING:
    from arena.store.writer import Store

PLACEMENT = 4  # pairings of a new bot against a spread of opponents
EXPLORE = 0.1  # share of a batch on random pairs a few places apart
EXPLORE_REACH = 6  # how many places apart an exploring pair may be
WINDOW = 3  # pairings considered for information: bots at most this many places apart, and the open pairs


def batch_size(bots: int) -> int:
    """Pairings per batch (two games each): at least as many games as bots, so that a machine with up to
    `bots` game slots is busy for most of a batch (a run plays each batch to its end before deciding the
    next; benchmarks/schedule_efficiency.py decides one batch later still, so its figures are cautious)."""
    return max(8, (bots + 1) // 2)


def plan(
    pairs: Pairs,
    rule: Rule,
    names: Sequence[str],
    seed: int,
    index: int,
    size: int,
    post: Posterior | None = None,
    done: Collection[tuple[int, int]] = (),
) -> tuple[tuple[int, int], ...]:
    """The pairings (a, b), a < b, of batch `index`: none when `pairs` already settle the ranking, or when
    every pairing that could help is one of `done` (pairs (a, b), a < b, that can only repeat their games)."""
    post = post or posterior(pairs)
    judged = verdict(post, rule, names)
    if judged.settled or pairs.n < 2:
        return ()
    done = frozenset(done)
    rng = np.random.default_rng([seed, index])
    picks = _placement(pairs, judged, rng, size, done)
    explore = min(size - len(picks), int(EXPLORE * size + rng.random()))  # a tenth, rounded at random
    picks += _explore(judged, rng, explore, done)
    picks += _informative(post, judged, size - len(picks), done)
    return tuple((min(a, b), max(a, b)) for a, b in picks)


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def _placement(
    pairs: Pairs, judged: Verdict, rng: np.random.Generator, size: int, done: frozenset[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Pairings of the bots with fewer than PLACEMENT pairings, against opponents spread over the ranking
    (at evenly spaced places, from a seeded offset), fewest games first; none of `done`."""
    played = pairs.pairings().sum(axis=1)
    order = list(judged.order)
    picks: list[tuple[int, int]] = []
    extra = np.zeros_like(played)
    for bot in sorted(range(pairs.n), key=lambda b: (played[b], b)):
        needed = PLACEMENT - int(played[bot] + extra[bot])
        offset = rng.random()
        if needed <= 0:
            continue
        others = [b for b in order if b != bot and _pair(bot, b) not in done]
        for k in range(max(0, needed) if others else 0):
            if len(picks) >= size:
                return picks
            opponent = others[int((k + offset) * len(others) / PLACEMENT) % len(others)]
            picks.append((bot, opponent))
            extra[bot] += 1
            extra[opponent] += 1
    return picks


def _explore(
    judged: Verdict, rng: np.random.Generator, count: int, done: frozenset[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Random pairs: a bot of an open pair against a bot at most EXPLORE_REACH places from it, none of
    `done` (its draw is dropped). Settled parts of the ranking are left alone."""
    order, n = judged.order, len(judged.order)
    position = {b: k for k, b in enumerate(order)}
    near = sorted({position[b] for c in judged.open for b in (c.upper, c.lower)})
    picks = []
    for _ in range(count if near else 0):
        k = near[int(rng.integers(len(near)))]
        j = k + int(rng.integers(1, EXPLORE_REACH + 1)) * (1 if rng.random() < 0.5 else -1)
        j = min(max(j, 0), n - 1)
        if j == k:
            j = k + 1 if k + 1 < n else k - 1
        if _pair(order[k], order[j]) not in done:
            picks.append((order[k], order[j]))
    return picks


def _informative(
    post: Posterior, judged: Verdict, count: int, done: frozenset[tuple[int, int]] = frozenset()
) -> list[tuple[int, int]]:
    """`count` pairings, greedily, each the one that most lowers the summed risk of the claims (the chance
    that each is the wrong way round by more than the resolution), to first order: a claim's risk
    Φ(-(m + r) / s) falls by φ(z) z / 2s² per unit of variance taken off its difference. None of `done`."""
    if count <= 0 or judged.settled:
        return []
    claims = [c for c in judged.claims if c.risk > 1e-12 or c.status is Status.OPEN]
    n = post.n
    cov = post.cov / ELO_PER_NAT**2
    u = np.zeros((len(claims), n))
    rows = np.arange(len(claims))
    u[rows, [c.upper for c in claims]] = 1.0
    u[rows, [c.lower for c in claims]] = -1.0
    var = np.einsum("pi,ij,pj->p", u, cov, u)
    mean = u @ post.theta
    z = (mean + judged.rule.resolution / ELO_PER_NAT) / np.sqrt(var)
    weight = np.exp(-z * z / 2.0) * z / (2.0 * var)
    # A reference's pair that is open because it is neither ordered nor within the resolution on both sides
    # may have little risk of a reversal left: it is weighed as a pair one SD from being settled would be.
    unsure = np.array([c.status is Status.OPEN and c.two_sided for c in claims], dtype=bool)
    weight = np.where(unsure, np.maximum(weight, np.exp(-0.5) / (2.0 * var)), weight)
    order = judged.order
    candidates = {
        (min(order[k], order[j]), max(order[k], order[j]))
        for k in range(n)
        for j in range(k + 1, min(n, k + WINDOW + 1))
    }
    candidates |= {(min(c.upper, c.lower), max(c.upper, c.lower)) for c in judged.open}
    candidates -= done
    if not candidates:
        return []
    cand = np.array(sorted(candidates))
    a, b = cand[:, 0], cand[:, 1]
    p = 1.0 / (1.0 + np.exp(post.theta[b] - post.theta[a]))
    info = 2.0 * p * (1.0 - p) / post.dispersion  # of one pairing about theta[a] - theta[b]
    # Each pick is a rank-one update of the covariance (cov - c c' / denom, c its column difference), kept
    # as the list of c's: only what the gains read is updated (their columns, not the whole matrix).
    var_pair = cov[a, a] + cov[b, b] - 2.0 * cov[a, b]  # each candidate's difference
    d = u @ cov  # (claims, n): Cov(claim's difference, each bot)
    cross = d[:, a] - d[:, b]  # (claims, candidates): Cov(claim's difference, candidate's difference)
    updates: list[tuple[np.ndarray, float]] = []
    picks = []
    for _ in range(count):
        denom = 1.0 / info + var_pair
        gain = (weight @ cross**2) / denom
        best = int(np.argmax(gain))
        x, y = int(a[best]), int(b[best])
        picks.append((x, y))
        cx = cov[:, x] - cov[:, y]
        for c, k in updates:
            cx = cx - c * ((c[x] - c[y]) / k)
        updates.append((cx, float(denom[best])))
        cc = cx[a] - cx[b]
        cross = cross - np.outer(cross[:, best], cc) / denom[best]
        var_pair = var_pair - cc * cc / denom[best]
    return picks


@dataclass(frozen=True, slots=True)
class Adaptive:
    """The adaptive schedule as a run asks for it (`schedule.Schedule`): each `next` is one batch of `plan`,
    decided from every played game of the field, as games: a pairing of a and b is their next round (one
    past the last round they played, so it follows on from any round robin before it), one game from each
    side, from that round's opening.

    A run plays a batch to its end before asking again, so a local run and a cluster run decide the same
    batches from the same results. The batch being played is kept in the store (`Store.set_batch`): a run
    stopped in the middle of one finishes it first when resumed, and so plays the games an uninterrupted
    run would have. `max_games` caps the field's played games: no batch starts beyond it."""

    bots: tuple[Bot, ...]
    rule: Rule
    seed: int
    book: Book | None = None
    max_games: int | None = None
    store: Store | None = None

    def games(
        self, results: Sequence[Result], repeats: bool = False
    ) -> list[tuple[int, int, int, int | None]]:
        """The field's played games as (round, south, north, winner or None), bots by their index: those
        that are evidence, or with `repeats` every one played (exact repeats of an earlier game too)."""
        index = {(b.name, b.digest): k for k, b in enumerate(self.bots)}
        names = {b.name: k for k, b in enumerate(self.bots)}
        return [
            (r.round, index[r.south], index[r.north], None if r.winner is None else names[r.winner])
            for r in results
            if r.south in index and r.north in index and (repeats or not r.repeat)
        ]

    def pairs(self, results: Sequence[Result]) -> Pairs:
        """The field's played games as game pairs, each exact repeat of an earlier game left out."""
        return from_games(self.games(results), range(len(self.bots)))

    def verdict(self, results: Sequence[Result]) -> Verdict:
        """The stopping rule applied to the field's games."""
        return verdict(posterior(self.pairs(results)), self.rule, [b.name for b in self.bots])

    def next(self, results: Sequence[Result]) -> list[Slot]:
        done = {key(r) for r in results}
        by_version = {(b.name, b.digest): b for b in self.bots}
        if self.store is not None:
            left = [
                game(rnd, by_version[s], by_version[n], self.seed, self.book)
                for rnd, s, n in self.store.batch()
                if s in by_version and n in by_version and (rnd, s, n) not in done
            ]
            if left:
                return left
        played = self.games(results, repeats=True)  # the games' cost, and the rounds they used
        if self.max_games is not None and len(played) >= self.max_games:
            return []
        if self.store is not None and self._nothing_new(results):
            return []
        names = [b.name for b in self.bots]
        pairs = from_games(self.games(results), range(len(self.bots)))
        size = batch_size(len(self.bots))
        batch = plan(pairs, self.rule, names, self.seed, len(played), size, done=self.exhausted(results))
        last: dict[tuple[int, int], int] = {}
        for rnd, south, north, _ in played:
            pair = (min(south, north), max(south, north))
            last[pair] = max(last.get(pair, 0), rnd)
        slots = []
        for a, b in batch:
            last[(a, b)] = rnd = last.get((a, b), 0) + 1
            x, y = self.bots[a], self.bots[b]
            slots += [game(rnd, x, y, self.seed, self.book), game(rnd, y, x, self.seed, self.book)]
        slots.sort(key=lambda s: (s.round, s.ordinal))
        if self.book is not None and batch:
            # The next batch, at this one's pace: each pair of it as many rounds further again.
            picks = Counter(batch)
            self.book.expect(max(last[pair] + n for pair, n in picks.items()))
        if self.store is not None:
            self.store.set_batch(key(s) for s in slots)
        return slots

    def _nothing_new(self, results: Sequence[Result]) -> bool:
        """Whether the last batch (kept in the store) was played and every game of it repeated an earlier
        one: the openings are used up (`--openings 0`, or the pie rule's few) and the bots deterministic,
        so more batches would teach nothing either."""
        assert self.store is not None
        last = set(self.store.batch())
        played = {key(r): r.repeat for r in results if key(r) in last}
        return bool(last) and len(played) == len(last) and all(played.values())

    def played(self, results: Sequence[Result]) -> int:
        return len(self.games(results, repeats=True))

    def exhausted(self, results: Sequence[Result]) -> frozenset[tuple[int, int]]:
        """The pairs (a, b), a < b, that can only repeat their games: a pairing of theirs (one round's two
        games) repeated earlier games exactly, so the two play the same game whenever they meet in the same
        position, and their next round starts from an opening they have played (`--openings 0`: every
        round from the start; under the pie rule the few openings come round again)."""
        rounds: dict[tuple[int, int], dict[int, list[bool]]] = {}
        index = {(b.name, b.digest): k for k, b in enumerate(self.bots)}
        for r in results:
            if r.south in index and r.north in index:
                pair = _pair(index[r.south], index[r.north])
                rounds.setdefault(pair, {}).setdefault(r.round, []).append(r.repeat)
        done = set()
        for (a, b), by_round in rounds.items():
            if not any(len(games) == 2 and all(games) for games in by_round.values()):
                continue
            x, y = self.bots[a], self.bots[b]
            opening = game(max(by_round) + 1, x, y, self.seed, self.book).opening
            if opening in {game(rnd, x, y, self.seed, self.book).opening for rnd in by_round}:
                done.add((a, b))
        return frozenset(done)

    def stopped(self, results: Sequence[Result]) -> str:
        """Why a run of this schedule that asked `next` and got no game stopped, in words: "settled", or why
        not. The cap of `max_games` only when the games reached it; a last batch whose every game repeated an
        earlier one, or open pairs that can only repeat, said as such."""
        if self.verdict(results).settled:
            return "settled"
        played = self.played(results)
        if self.max_games is not None and played >= self.max_games:
            return f"the cap of --max-games: {played} games played, at most {self.max_games}"
        more = "more openings would give them new games (--openings N)"
        if self.store is not None and self._nothing_new(results):
            return (
                f"every game of its last batch repeated an earlier game exactly: the bots are deterministic "
                f"and the openings used up; {more}"
            )
        done = self.exhausted(results)
        names = [b.name for b in self.bots]
        if done and not plan(self.pairs(results), self.rule, names, self.seed, played, 1, done=done):
            pairs = "pair" if len(done) == 1 else "pairs"
            return (
                f"the games that could settle it can only repeat earlier ones: {len(done)} {pairs} of "
                f"deterministic bots played every opening they have; {more}"
            )
        return "no more games could be played"
