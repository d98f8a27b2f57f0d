"""Ratings with their uncertainty: each bot's Elo with a 95% interval, and the odds of every place.

The strengths are the order-free Bradley-Terry fit (`fit`: a draw is half a point, with a weak prior of
virtual draws), here on the results of game pairs: two games from one opening, once from each side, under
a normal prior for the field whose spread is estimated from the field (`posterior`: empirical Bayes).
Their uncertainty is the Laplace approximation of the posterior: normal around its mode, with the inverse
of the curvature as covariance (as BayesElo's), the likelihood's part scaled by the pairs' dispersion: the
observed variance of pair scores over what independent games would give. Deterministic bots make the two
games of a pair move together (an opening that favours south gives each bot one win), and a draw varies
less than a coin, so pairs tell more than twice a game; the dispersion measures by how much instead of
assuming.

P(rank = k) is counted over seeded draws from that posterior (as BayesElo's `prediction` simulates), so it is
the same for the same results and seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

ELO_CENTRE = 1500.0  # Bradley-Terry points are shown on the Elo scale, the field's mean at 1500
ELO_PER_NAT = 400.0 / math.log(10.0)
Z95 = 1.959963984540054  # the ± shown is a 95% interval
PRIOR_DRAWS = 1.0  # virtual drawn games of every bot, spread over its opponents (see fit)
SCORES = 5  # a pair's score in half points: 0 (lost both) .. 4 (won both)
DISPERSION_WEIGHT = 5.0  # the dispersion's prior: as many units of variance at 1 as ~10 even pairs carry
RANK_SAMPLES = 4000  # draws behind P(rank = k): its error is below 0.008 at any probability
# The strengths' prior: normal around the field's mean, its SD estimated from the field (empirical Bayes),
# as if SPREAD_BOTS more bots had come out SPREAD_GUESS (in natural units: 200 Elo) from the mean.
SPREAD_BOTS = 1.0
SPREAD_GUESS = 200.0 / ELO_PER_NAT
SPREAD_STEPS = 30  # EM steps at most: each refits the strengths under the spread so far
SPREAD_TOLERANCE = 1e-3  # relative change of spread² that ends EM: a tenth of a percent moves no risk


def _log_likelihood(theta: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Σ score[i, j] · log P(i beats j) under Bradley-Terry, for each row of log-strengths `theta`."""
    return -(score * np.logaddexp(0.0, theta[:, None, :] - theta[:, :, None])).sum(axis=(1, 2))


def _newton(
    theta: np.ndarray, score: np.ndarray, games: np.ndarray, ridge: float = 0.0, steps: int = 100
) -> np.ndarray:
    """Maximum-likelihood log-strengths (mean 0) for a batch of score tables (B, n, n) from starts near them
    (B, n), less `ridge` / 2 · Σ theta² (a normal prior's log-density): the objective is concave, so Newton
    steps with step halving get there in a few steps. Batched, so a batch of fits costs a few numpy calls."""
    n = theta.shape[1]
    points = score.sum(axis=2)

    def objective(t: np.ndarray) -> np.ndarray:
        return _log_likelihood(t, score) - 0.5 * ridge * (t * t).sum(axis=1)

    for _ in range(steps):
        diff = theta[:, :, None] - theta[:, None, :]
        expected = (games * np.exp(-np.logaddexp(0.0, -diff))).sum(axis=2)
        info = -games * np.exp(-np.logaddexp(0.0, diff) - np.logaddexp(0.0, -diff))  # n P(i>j) P(j>i)
        info[:, np.arange(n), np.arange(n)] = 0.0
        info[:, np.arange(n), np.arange(n)] = -info.sum(axis=2) + ridge
        # info's null space is the free mean and the gradient sums to 0: pinning the mean makes it invertible
        gradient = points - expected - ridge * (theta - theta.mean(axis=1, keepdims=True))
        step = np.linalg.solve(info + 1.0 / n, gradient[:, :, None])[:, :, 0]
        moving = np.max(np.abs(step), axis=1) >= 1e-10
        if not moving.any():
            break
        before, t = objective(theta), np.ones(len(theta))
        slack = 1e-12 * (1.0 + np.abs(before))  # rounding near the top is no reason to shorten a step
        for _ in range(30):
            worse = moving & (objective(theta + t[:, None] * step) < before - slack)
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        theta = theta + np.where(moving, t, 0.0)[:, None] * step
    return theta - theta.mean(axis=1, keepdims=True)


def prior_games(n: int, prior_draws: float = PRIOR_DRAWS) -> np.ndarray:
    """The prior's virtual drawn games, (n, n): `prior_draws` per bot, spread evenly over its opponents."""
    prior = np.full((n, n), prior_draws / max(1, n - 1))
    np.fill_diagonal(prior, 0.0)
    return prior


def fit(score: np.ndarray, total: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """Maximum-likelihood Bradley-Terry log-strengths (mean 0) from points `score[i, j]` of i against j in
    `total[i, j]` games (a draw half a point; the prior's virtual games included, which keeps them finite).

    By the MM algorithm (Hunter 2004), finished by Newton steps: MM alone crawls for thousands of iterations
    when a bot wins nearly everything, as deterministic bots do. From `start` (a fit of a few games ago),
    Newton alone: the likelihood is concave, so it gets there in a few steps.
    """
    n = len(score)
    if start is None:
        p = np.ones(n)
        for _ in range(200):  # MM: every step raises the likelihood
            new = score.sum(axis=1) / (total / (p[:, None] + p[None, :])).sum(axis=1)
            new /= math.exp(np.log(new).mean())  # only ratios matter: keep the geometric mean at 1
            done = np.max(np.abs(np.log(new) - np.log(p))) < 1e-12
            p = new
            if done:
                break
        start = np.log(p)
    return _newton(np.asarray(start, dtype=float)[None, :], score[None], total)[0]


@dataclass(frozen=True, slots=True, eq=False)
class Pairs:
    """Results between n bots (indices 0..n-1). `counts[i, j, k]`: game pairs of i and j in which i scored
    k half points (so `counts[j, i, 4 - k]` is the same number); `single[i, j]`: games outside a pair
    (a pair cut short) as i's (wins, draws, losses) against j."""

    counts: np.ndarray  # (n, n, 5) int
    single: np.ndarray  # (n, n, 3) int

    @classmethod
    def empty(cls, n: int) -> Pairs:
        return cls(np.zeros((n, n, SCORES), dtype=np.int64), np.zeros((n, n, 3), dtype=np.int64))

    @property
    def n(self) -> int:
        return len(self.counts)

    def add(self, a: np.ndarray, b: np.ndarray, half_points: np.ndarray) -> Pairs:
        """These results with more pairs added: bot a[t] scored half_points[t] (0..4) against b[t]."""
        counts = self.counts.copy()
        a, b, k = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), np.asarray(half_points)
        np.add.at(counts, (a, b, k), 1)
        np.add.at(counts, (b, a, SCORES - 1 - k), 1)
        return Pairs(counts, self.single)

    def add_game(self, a: int, b: int, points: float) -> Pairs:
        """These results with one game outside a pair: a scored `points` (1, 0.5 or 0) against b."""
        single = self.single.copy()
        k = {1.0: 0, 0.5: 1, 0.0: 2}[float(points)]
        single[a, b, k] += 1
        single[b, a, 2 - k] += 1
        return Pairs(self.counts, single)

    def pairings(self) -> np.ndarray:
        """Game pairs played by each two bots, (n, n)."""
        return self.counts.sum(axis=2)

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """(points of i against j, games of i against j), each (n, n)."""
        k = np.arange(SCORES) / 2.0
        score = (self.counts * k).sum(axis=2) + self.single[..., 0] + 0.5 * self.single[..., 1]
        return score, 2.0 * self.pairings() + self.single.sum(axis=2)


def from_games(games: Iterable[tuple[int, int, int, int | None]], ids: Sequence[int]) -> Pairs:
    """Pairs of the bots `ids` (in that index order) from games (round, south, north, winner or None): a
    round's game of a against b and its game of b against a are one pair; a game whose pair is missing (a
    run stopped between them, or a game of a bot that cannot start at an opening) counts alone."""
    index = {int(b): k for k, b in enumerate(ids)}
    half: dict[tuple[int, int, int], list[int]] = {}  # (round, a, b), a < b -> a's half points per game
    for rnd, south, north, winner in games:
        if south not in index or north not in index:
            continue
        a, b = sorted((index[south], index[north]))
        points = 1 if winner is None else 2 if index[winner] == a else 0
        half.setdefault((rnd, a, b), []).append(points)
    pairs = Pairs.empty(len(ids))
    paired = [(a, b, sum(h)) for (_, a, b), h in half.items() if len(h) == 2]
    if paired:
        pa, pb, pk = (np.array(x) for x in zip(*paired, strict=True))
        pairs = pairs.add(pa, pb, pk)
    for (_, a, b), h in half.items():
        for points in h if len(h) != 2 else ():
            pairs = pairs.add_game(a, b, points / 2.0)
    return pairs


@dataclass(frozen=True, slots=True, eq=False)
class Posterior:
    """Bots' strengths on the Elo scale (the field's mean at 1500) and their joint uncertainty."""

    elo: np.ndarray  # (n,)
    cov: np.ndarray  # (n, n), Elo²: the strengths are centred, so a bot's variance is about its place
    dispersion: float  # observed variance of pair scores over that of independent games
    theta: np.ndarray  # the posterior mode in natural units (`elo` is it in Elo); the next fit starts there
    spread: float = math.nan  # the prior's SD of the strengths, in Elo, as estimated from the field

    @property
    def n(self) -> int:
        return len(self.elo)

    def pm(self) -> np.ndarray:
        """Half-widths of each bot's 95% interval, in Elo."""
        return Z95 * np.sqrt(np.maximum(np.diag(self.cov), 0.0))

    def difference(self, i: int, j: int) -> tuple[float, float]:
        """Mean and standard deviation of elo[i] - elo[j]."""
        var = self.cov[i, i] + self.cov[j, j] - 2.0 * self.cov[i, j]
        return float(self.elo[i] - self.elo[j]), math.sqrt(max(var, 1e-12))

    def p_above(self, i: int, j: int, by: float = 0.0) -> float:
        """P(elo[i] > elo[j] + by)."""
        mean, sd = self.difference(i, j)
        return normal_cdf((mean - by) / sd)

    def order(self) -> np.ndarray:
        """Bots best first by posterior mean (ties by index)."""
        return np.lexsort((np.arange(self.n), -self.elo))

    def samples(self, count: int, seed: int) -> np.ndarray:
        """`count` seeded draws of all strengths from the posterior, (count, n)."""
        values, vectors = np.linalg.eigh(self.cov)
        root = vectors * np.sqrt(np.maximum(values, 0.0))
        z = np.random.default_rng(seed).standard_normal((count, self.n))
        return self.elo + z @ root.T

    def rank_odds(self, count: int = RANK_SAMPLES, seed: int = 0) -> np.ndarray:
        """P(bot i finishes in place k + 1), (n, n): each row sums to 1."""
        draws = self.samples(count, seed)
        places = np.argsort(np.argsort(-draws, axis=1, kind="stable"), axis=1, kind="stable")
        odds = np.zeros((self.n, self.n))
        np.add.at(odds, (np.broadcast_to(np.arange(self.n), places.shape), places), 1.0)
        return odds / count


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def posterior(pairs: Pairs, prior_draws: float = PRIOR_DRAWS, start: np.ndarray | None = None) -> Posterior:
    """The Bradley-Terry fit of `pairs` with its Laplace covariance, scaled by the pairs' dispersion, under a
    normal prior N(0, spread²) on the strengths, the spread estimated from the field (empirical Bayes).

    Why a prior: the ranking is read off noisy estimates, and noise spreads them apart. Where the schedule
    measures mostly neighbours (a chain of differences, as an adaptive run does), nothing else reins in the
    field's spread, so neighbour gaps come out too wide: with the flat fit alone the risks of the pairs the
    ranking puts side by side were overconfident (benchmarks/schedule_efficiency.py, see settle.LOOKS). The
    strengths of a class are one population; its spread, estimated from all of them, pulls each gap in by
    what the data cannot tell from noise. The spread is the maximum of the marginal likelihood, found by EM
    (each step: the posterior mode under the spread so far, then the strengths' expected mean square), with
    `SPREAD_BOTS` virtual bots at `SPREAD_GUESS` so that a field of equal bots keeps a spread. A bot
    without games sits at the centre with the field's spread as its uncertainty."""
    n = pairs.n
    prior = prior_games(n, prior_draws)
    score, games = pairs.points()
    total = games + prior
    score = score + 0.5 * prior
    theta = fit(score, total, start)
    pin = np.full((n, n), 1.0 / n)
    centre = np.eye(n) - pin
    # EM's start: the method of moments (the fit's mean square less what its noise adds), near where EM ends
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    info = total * p * (1.0 - p)
    noise = np.trace(np.linalg.inv(np.diag(info.sum(axis=1)) - info + pin) - pin) * dispersion(pairs, p)
    tau2 = float(max(theta @ theta - noise, 0.0) + SPREAD_BOTS * SPREAD_GUESS**2) / (
        max(n - 1, 0) + SPREAD_BOTS
    )
    steps, polish = [tau2], False
    for step in range(SPREAD_STEPS + 1):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
        info = total * p * (1.0 - p)
        phi = dispersion(pairs, p)
        # The strengths are free up to a common shift: pinning their mean makes the curvature invertible,
        # and inv(H + J/n) - J/n is then the covariance of the centred strengths.
        cov_nats = np.linalg.inv((np.diag(info.sum(axis=1)) - info) / phi + centre / tau2 + pin) - pin
        new = float(theta @ theta + np.trace(cov_nats) + SPREAD_BOTS * SPREAD_GUESS**2) / (
            max(n - 1, 0) + SPREAD_BOTS
        )
        if polish or step == SPREAD_STEPS:
            break
        # One Newton step per EM step; once the spread has converged, a converged fit under it
        polish = abs(new - tau2) <= SPREAD_TOLERANCE * tau2
        steps.append(new)
        tau2 = new
        if len(steps) >= 3:  # EM creeps geometrically: Aitken's extrapolation jumps to where it is going
            a, b, c = steps[-3:]
            if 0.0 < (c - b) / (b - a) < 1.0:
                tau2 = c - (c - b) ** 2 / ((c - b) - (b - a))
                steps.clear()
        theta = _newton(theta[None, :], score[None], total, ridge=phi / tau2, steps=100 if polish else 1)[0]
    cov = ELO_PER_NAT**2 * cov_nats
    return Posterior(
        ELO_CENTRE + ELO_PER_NAT * theta, (cov + cov.T) / 2.0, phi, theta, ELO_PER_NAT * math.sqrt(tau2)
    )


def dispersion(pairs: Pairs, p: np.ndarray) -> float:
    """Pearson's dispersion of the pair scores under the fit: Σ (score - 2p)² over Σ 2p(1 - p), each pair
    of bots once, shrunk towards 1 (independent games) by a prior worth a few pairs."""
    upper = np.triu(np.ones_like(p, dtype=bool), 1)
    counts = pairs.counts[upper]  # (m, 5)
    expected = 2.0 * p[upper]
    k = np.arange(SCORES) / 2.0
    residual = (counts * (k[None, :] - expected[:, None]) ** 2).sum()
    model = (counts.sum(axis=1) * 2.0 * p[upper] * (1.0 - p[upper])).sum()
    return float((residual + DISPERSION_WEIGHT) / (model + DISPERSION_WEIGHT))
