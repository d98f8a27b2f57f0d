"""A new version against the old one: a sequential probability ratio test on game pairs, as fishtest runs it.

Games are played in pairs (one opening, once from each side) and counted by the new version's score in the
pair: the five pentanomial counts (0, ½, 1, 1½, 2 points, fishtest's LL, LD+DL, LW+DD+WL, DW+WD, WW). After
every pair the generalized log-likelihood ratio of elo1 against elo0 (logistic Elo) is compared with Wald's
bounds log(β/(1-α)) and log((1-β)/α); crossing the upper accepts H1 (the new version is better by elo1), the
lower accepts H0 (it is not better by elo0). A pair's two games from one opening move together (each side
may win its own), so the pair score varies less than two separate games would: counting pairs, not games,
is what makes the test decide sooner at the same error rates. `counts` of three numbers (losses, draws,
wins of single games) give the older trinomial test, for comparison.

The LLR is fishtest's: server/fishtest/stats/sprt.py (`sprt.set_state`) takes
`LLRcalc.LLR_drift_variance_alt2`, the Brownian approximation of the GSPRT (N (s1 - s0)(2s - s0 - s1) / 2v
with s, v the mean and variance of the observed per-pair score on [0, 1], N the pairs), and
`LLRcalc.results_to_pdf` first puts 1e-3 in every empty count (`regularize`). fishtest's correction for the
overshoot and its sequential confidence interval are not here: the interval shown is the plain normal one
of the score.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arena.game.openings import Book
from arena.match.bots import Bot
from arena.stats.posterior import Z95
from arena.tournament.schedule import Result, Slot, game, key
from arena.tournament.settings import SPRT_ALPHA, SPRT_BETA, SPRT_ELO0, SPRT_ELO1

REGULARIZE = 1e-3  # fishtest's LLRcalc.regularize: the count put in an empty cell
BATCH = 8  # rounds (pairs) a run plays between two looks at the test
MIN_COUNT = 20  # pairs (or games) before a test may stop: the variance of a handful of them says nothing


class Decision(enum.Enum):
    H1 = "H1"  # the new version is better (by elo1)
    H0 = "H0"  # it is not better (by elo0)


@dataclass(frozen=True, slots=True)
class Design:
    """An SPRT's design: H0 Elo <= elo0 against H1 Elo >= elo1, with error rates alpha and beta."""

    elo0: float = SPRT_ELO0
    elo1: float = SPRT_ELO1
    alpha: float = SPRT_ALPHA
    beta: float = SPRT_BETA

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(
                f"elo0 must be below elo1 (H0: no better than elo0), not {self.elo0:g} and {self.elo1:g}"
            )
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < value < 0.5:
                raise ValueError(f"{name} must be between 0 and 0.5 (for instance 0.05), not {value:g}")
        if max(abs(self.elo0), abs(self.elo1)) >= 1000:
            raise ValueError(f"elo0 and elo1 must be within ±1000, not {self.elo0:g} and {self.elo1:g}")

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1.0 - self.beta) / self.alpha)

    def describe(self) -> str:
        return (
            f"SPRT elo0 {self.elo0:g}, elo1 {self.elo1:g}, alpha {self.alpha:g}, beta {self.beta:g}: "
            f"stops when the LLR leaves [{self.lower:.2f}, {self.upper:.2f}]"
        )


def score(elo: float | np.ndarray) -> float | np.ndarray:
    """Expected score of a bot `elo` stronger (logistic Elo)."""
    return 1.0 / (1.0 + 10.0 ** (-np.asarray(elo) / 400.0))


def llr(counts: np.ndarray | Sequence[int], elo0: float, elo1: float) -> np.ndarray:
    """The log-likelihood ratio of elo1 against elo0 for `counts` (..., 5) of game pairs or (..., 3) of
    games, by fishtest's LLR_drift_variance_alt2: vectorised over the leading axes."""
    c = np.asarray(counts, dtype=float)
    c = np.where(c == 0, REGULARIZE, c)
    values = np.linspace(0.0, 1.0, c.shape[-1])
    total = c.sum(axis=-1)
    mean = (c * values).sum(axis=-1) / total
    var = (c * (values - mean[..., None]) ** 2).sum(axis=-1) / total
    s0, s1 = score(elo0), score(elo1)
    return total * (s1 - s0) * (2.0 * mean - s0 - s1) / var / 2.0


@dataclass(frozen=True, slots=True)
class Status:
    """Where a test stands: the counts, the LLR and its bounds, the Elo with its 95% interval."""

    test: Design
    counts: tuple[int, ...]
    llr: float
    elo: float
    elo_lo: float
    elo_hi: float

    @property
    def decision(self) -> Decision | None:
        if sum(self.counts) < MIN_COUNT:
            return None
        if self.llr >= self.test.upper:
            return Decision.H1
        if self.llr <= self.test.lower:
            return Decision.H0
        return None

    @property
    def games(self) -> int:
        return sum(self.counts) * (2 if len(self.counts) == 5 else 1)

    def line(self) -> str:
        """One line for the terminal while it runs."""
        names = ("0", "½", "1", "1½", "2") if len(self.counts) == 5 else ("L", "D", "W")
        counts = " ".join(f"{n}:{c}" for n, c in zip(names, self.counts, strict=True))
        verdict = {
            Decision.H1: "H1 accepted: the new version is better",
            Decision.H0: "H0 accepted: the new version is not better",
            None: "running",
        }[self.decision]
        return (
            f"LLR {self.llr:+.2f} [{self.test.lower:.2f}, {self.test.upper:.2f}]  {self.elo_words()}  "
            f"{self.games} games, pairs {counts}  {verdict}"
        )

    def elo_words(self) -> str:
        """The Elo with its 95% interval, or what the counts allow where they allow no finite one: a test
        whose every pair (or game) came out the same has no spread to measure ("all 24 pairs won")."""
        total = sum(self.counts)
        unit = "pair" if len(self.counts) == 5 else "game"
        if total == 0:
            return f"Elo: no {unit}s yet"
        alike = next((k for k, c in enumerate(self.counts) if c == total), None)
        if alike is not None:
            five = (
                "lost",
                "lost one and drew one",
                "split (1-1 or two draws)",
                "won one and drew one",
                "won",
            )
            word = (five if len(self.counts) == 5 else ("lost", "drawn", "won"))[alike]
            return f"Elo: all {total} {unit}{'s' * (total != 1)} {word}"

        def elo(x: float) -> str:
            return f"{x + 0.0:+.1f}"  # + 0.0: no "-0.0"

        lo = elo(self.elo_lo) if math.isfinite(self.elo_lo) else "no lower bound"
        hi = elo(self.elo_hi) if math.isfinite(self.elo_hi) else "no upper bound"
        return f"Elo {elo(self.elo)} [{lo}, {hi}]"


def status(test: Design, counts: Sequence[int]) -> Status:
    """The test after the games counted (five pair counts, or three game counts)."""
    if len(counts) not in (3, 5) or min(counts) < 0:
        raise ValueError(f"counts are five pair counts or three game counts, not {tuple(counts)}")
    if sum(counts) == 0:
        return Status(test, tuple(counts), 0.0, 0.0, -math.inf, math.inf)
    c = np.asarray(counts, dtype=float)
    values = np.linspace(0.0, 1.0, len(c))
    total = c.sum()
    mean = float((c * values).sum() / total)
    se = math.sqrt(float((c * (values - mean) ** 2).sum() / total) / total)
    return Status(
        test,
        tuple(int(x) for x in counts),
        float(llr(c, test.elo0, test.elo1)),
        _elo(mean),
        _elo(mean - Z95 * se),
        _elo(mean + Z95 * se),
    )


def _elo(s: float) -> float:
    """Logistic Elo of an expected score (±inf at 0 and 1)."""
    if s <= 0.0:
        return -math.inf
    if s >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


@dataclass(frozen=True, slots=True)
class Match:
    """`new` against `base` as a run asks for it (`schedule.Schedule`): rounds of one pair of games each
    (the round's opening, once from each side), `batch` rounds at a time. After each complete batch the test
    is judged on exactly the pairs of the rounds so far, so a resumed run and a cluster run stop where an
    uninterrupted local one does. `max_games` caps the games."""

    new: Bot
    base: Bot
    design: Design
    seed: int
    book: Book | None = None
    batch: int = BATCH
    max_games: int | None = None

    @property
    def bots(self) -> tuple[Bot, ...]:
        return (self.new, self.base)

    def _rounds(self, results: Sequence[Result]) -> dict[int, list[Result]]:
        mine = {(b.name, b.digest) for b in self.bots}
        rounds: dict[int, list[Result]] = {}
        for r in results:
            if r.south in mine and r.north in mine:
                rounds.setdefault(r.round, []).append(r)
        return rounds

    def counts(self, results: Sequence[Result], through: int | None = None) -> list[int]:
        """The five pair counts of `new`'s score in the complete pairs (of the rounds up to `through`); a pair
        with a game that repeats an earlier one exactly is no new evidence and is not counted."""
        counts = [0] * 5
        for rnd, games in self._rounds(results).items():
            if len(games) == 2 and (through is None or rnd <= through) and not any(g.repeat for g in games):
                half = sum(2 if g.winner == self.new.name else 1 if g.winner is None else 0 for g in games)
                counts[half] += 1
        return counts

    def judged(self, results: Sequence[Result]) -> int:
        """The last round of the complete batches, up to the first batch after which the test decided."""
        rounds = self._rounds(results)
        through = 0
        while all(len(rounds.get(r, ())) == 2 for r in range(through + 1, through + self.batch + 1)):
            through += self.batch
            if status(self.design, self.counts(results, through)).decision is not None:
                break
        return through

    def status(self, results: Sequence[Result]) -> Status:
        """The test as the run stands: on the pairs of the complete batches."""
        return status(self.design, self.counts(results, self.judged(results)))

    def next(self, results: Sequence[Result]) -> list[Slot]:
        through = self.judged(results)
        if status(self.design, self.counts(results, through)).decision is not None:
            return []
        if self.max_games is not None and 2 * through >= self.max_games:
            return []
        if self.repeating(results):
            return []
        done = {key(r) for r in results}
        slots = [
            game(rnd, south, north, self.seed, self.book)
            for rnd in range(through + 1, through + self.batch + 1)
            for south, north in ((self.new, self.base), (self.base, self.new))
        ]
        if self.book is not None:
            self.book.expect(through + 2 * self.batch)  # the next batch's rounds, made while this one plays
        return [s for s in slots if key(s) not in done]

    def repeats(self, results: Sequence[Result]) -> int:
        """Games played that repeat an earlier one exactly: not counted."""
        return sum(g.repeat for games in self._rounds(results).values() for g in games)

    def repeating(self, results: Sequence[Result]) -> bool:
        """Whether the last complete batch repeated earlier games only: the openings are used up (`--openings
        0`, the pie rule's few) and the bots deterministic, so more would teach nothing."""
        through = self.judged(results)
        if through < self.batch:
            return False
        rounds = self._rounds(results)
        return all(g.repeat for r in range(through - self.batch + 1, through + 1) for g in rounds[r])

    def played(self, results: Sequence[Result]) -> int:
        return sum(len(g) for g in self._rounds(results).values())
