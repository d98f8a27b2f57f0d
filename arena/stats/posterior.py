"""Ratings with their uncertainty: each bot's Elo with a 95% interval, and the odds of every place.

The strengths are the order-free Bradley-Terry fit (`fit`: a draw is half a point, with a weak prior of
virtual draws), here on the results of game pairs: two games from one opening, once from each side, under
a prior for the field estimated from the field (`posterior`: empirical Bayes), a mixture of normals with
one group per group of bots the strengths show (working bots and broken ones are two), whose scale is
integrated over rather than plugged in (`integrate`).
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
PRIOR_DRAWS = 1.0  # virtual drawn games of every bot, spread over its opponents (see fit): a finite start
# Virtual draws kept under the field's prior (see `posterior`): a quarter a bot. A virtual draw of a bot far
# from the middle against its group is a second pull towards the middle on top of the prior's: at 30 bots
# (SD 250) one a bot pulled the weakest tenth's estimates up by 0.84 SD and the intervals covered 91%, with
# the true spread known 91% (none: 93.9%, a quarter: 93.6%; benchmarks/interval_coverage.py). None at all
# left a perfectly ordered field (every pair 10-0) nothing to bound its spread: the likelihood grows with it
# without end, and three bots 10-0 apart were not told apart.
VIRTUAL_DRAWS = 0.25
SCORES = 5  # a pair's score in half points: 0 (lost both) .. 4 (won both)
DISPERSION_WEIGHT = 5.0  # the dispersion's prior: as many units of variance at 1 as ~10 even pairs carry
RANK_SAMPLES = 4000  # draws behind P(rank = k): its error is below 0.008 at any probability
# The strengths' prior: each group's spread estimated from its bots (empirical Bayes), as if SPREAD_BOTS
# more bots had come out SPREAD_GUESS (in natural units: 200 Elo) from its centre.
SPREAD_BOTS = 1.0
SPREAD_GUESS = 200.0 / ELO_PER_NAT
SPREAD_STEPS = 30  # EM steps at most: each refits the strengths under the spread so far
SPREAD_TOLERANCE = 1e-3  # relative change of spread² that ends EM: a tenth of a percent moves no risk
CENTRES = 1000.0 / ELO_PER_NAT  # the groups' centres: normal around the field's mean with this SD
GROUPS = 3  # groups of the class the prior may have (see `groups`)
# Log-likelihood a group must add to be kept: a third of AIC's (one per number a group costs), since a group
# too many costs little and one too few a lot (see `groups`).
GROUP_COST = 1.0
GROUP_BOTS = 4  # bots per group at least: a field of n bots has at most n // GROUP_BOTS groups
GROUP_STEPS = 100  # EM steps at most of the deconvolution that counts the groups
GROUP_TOLERANCE = 1e-4  # gain of log-likelihood that ends it: far below what a group must add (GROUP_COST)
# The prior's scale is integrated over, not plugged in (see `integrate`): the groups' SDs times each of these
# factors, from a twentieth to 4.5 times the estimate (which put a tight cluster's spread at twice its truth),
# under a weak prior on the groups' variance v: log-logistic, P(v <= x) = x / (x + SCALE_PRIOR²), flat near
# 0 and as weak as the centres' (CENTRES). Flat in the SD instead (a half-Cauchy, Gelman 2006) weighed
# spreads near none more, and with 5 bots the 95% interval of a difference covered 90% (tests/test_posterior).
SCALES = np.exp(np.linspace(-3.0, 1.5, 13))
REFINE = 3  # steps each of the heaviest point's two steps is refined into (see `integrate`)
SCALE_PRIOR = 1000.0 / ELO_PER_NAT
# The games' evidence on the prior's scale counted at this power (a power likelihood, as Miller & Dunson's
# coarsened posterior has it): the model of the scale is wrong in two ways measured at the stops of adaptive
# runs (benchmarks/interval_coverage.py): the stop comes where gaps look wide, so the results at it look more
# spread than the field is (a tight cluster's spread put at 1.2 times its truth), and a class is not always
# bell curves (heavy tails). On the results at the stops of 180 runs of 20 bots each, counted whole the
# intervals covered 94.4% of a tight cluster's bots (the true spread given: 96%) and 94.1% of a heavy-tailed
# field's; at a half 95.5% and 94.9%, the normal field (60 runs) 95.7% -> 96.3% (docs/statistics.md). A
# half is a choice the figures support, not a derivation: the scale's posterior then spans the spreads the
# schedule could have left.
EVIDENCE_POWER = 0.5


def _log_likelihood(theta: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Σ score[i, j] · log P(i beats j) under Bradley-Terry, for each row of log-strengths `theta`."""
    d = theta[:, None, :] - theta[:, :, None]  # log(1 + e^d), as logaddexp has it, in two passes not four
    return -(score * (np.log1p(np.exp(-np.abs(d))) + np.maximum(d, 0.0))).sum(axis=(1, 2))


def _newton(
    theta: np.ndarray,
    score: np.ndarray,
    games: np.ndarray,
    ridge: float | np.ndarray = 0.0,
    steps: int = 100,
) -> np.ndarray:
    """Maximum-likelihood log-strengths (mean 0) for a batch of score tables (B, n, n) from starts near them
    (B, n), less thetaᵀ Q theta / 2 (a normal prior's log-density; Q is `ridge` times the identity, the
    (n, n) matrix `ridge`, or one matrix per fit (B, n, n)): the objective is concave, so Newton steps with
    step halving get there in a few steps. Batched, so a batch of fits costs a few numpy calls."""
    n = theta.shape[1]
    points = score.sum(axis=2)
    pin = np.full((n, n), 1.0 / n)
    # the prior acts on the centred strengths: its curvature is C Q C, C the centring
    centring = np.eye(n) - pin
    curve = centring @ (ridge if np.ndim(ridge) >= 2 else float(ridge) * np.eye(n)) @ centring

    def pull(t: np.ndarray) -> np.ndarray:
        """Q t for each row t, (B, n)."""
        return (curve @ t[..., None])[..., 0]

    def objective(t: np.ndarray) -> np.ndarray:
        return _log_likelihood(t, score) - 0.5 * (pull(t) * t).sum(axis=1)

    value = objective(theta)
    for _ in range(steps):
        diff = theta[:, :, None] - theta[:, None, :]
        e = np.exp(-np.abs(diff))  # one pass of exp gives both P(i beats j) and its variance
        expected = (games * (np.where(diff >= 0.0, 1.0, e) / (1.0 + e))).sum(axis=2)
        info = -games * e / (1.0 + e) ** 2  # n P(i>j) P(j>i)
        info[:, np.arange(n), np.arange(n)] = 0.0
        info[:, np.arange(n), np.arange(n)] = -info.sum(axis=2)
        # info's null space is the free mean and the gradient sums to 0: pinning the mean makes it invertible
        gradient = points - expected - pull(theta)
        step = np.linalg.solve(info + curve + pin, gradient[:, :, None])[:, :, 0]
        moving = np.max(np.abs(step), axis=1) >= 1e-10
        if not moving.any():
            break
        before, t = value, np.ones(len(theta))
        slack = 1e-12 * (1.0 + np.abs(before))  # rounding near the top is no reason to shorten a step
        for _ in range(30):
            trial = objective(theta + t[:, None] * step)
            worse = moving & (trial < before - slack)
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        theta = theta + np.where(moving, t, 0.0)[:, None] * step
        value = np.where(moving, trial, before) if not worse.any() else objective(theta)
    return theta - theta.mean(axis=1, keepdims=True)


def prior_games(n: int, prior_draws: float = PRIOR_DRAWS, together: np.ndarray | None = None) -> np.ndarray:
    """The prior's virtual drawn games, (n, n): `prior_draws` per bot, spread evenly over its opponents, or
    over those of its own group where `together[i, j]` is the chance that i and j are of one group."""
    share = np.ones((n, n)) if together is None else np.array(together, dtype=float)
    np.fill_diagonal(share, 0.0)
    per_bot = share / np.maximum(share.sum(axis=1, keepdims=True), 1e-12)
    return prior_draws * (per_bot + per_bot.T) / 2.0


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


@dataclass(frozen=True, slots=True, eq=False)
class Mixture:
    """The strengths' prior: a mixture of normals (natural units, around the field's mean 0), each
    component a group of the class with its share, centre and variance."""

    weight: np.ndarray  # (k,)
    mean: np.ndarray  # (k,)
    var: np.ndarray  # (k,)

    @property
    def spread(self) -> float:
        """The mixture's SD, in natural units."""
        centre = float(self.weight @ self.mean)
        return math.sqrt(float(self.weight @ (self.var + (self.mean - centre) ** 2)))

    def belongs(self, theta: np.ndarray, var: np.ndarray) -> np.ndarray:
        """P(bot i is of group c), (n, k), for strengths `theta` known to within variances `var`: its
        expected log-density under each group (mean field, as variational Bayes has it)."""
        log = (
            np.log(self.weight)[None, :]
            - 0.5 * np.log(self.var)[None, :]
            - 0.5 * ((theta[:, None] - self.mean[None, :]) ** 2 + var[:, None]) / self.var[None, :]
        )
        log -= log.max(axis=1, keepdims=True)
        r = np.exp(log)
        return r / r.sum(axis=1, keepdims=True)

    def precision(self, r: np.ndarray) -> np.ndarray:
        """The prior's precision matrix of the strengths, given each bot's odds `r` (n, k) of each group,
        with the groups' centres integrated out (a flat prior on each): a bot is pulled towards the others
        of its group, not towards a centre taken as known, so the gap between groups rests on the games
        between them and its uncertainty stays in the intervals. With one group, I / var on the centred
        strengths, as one normal prior around the field's mean."""
        size = r.sum(axis=0) + self.var / CENTRES**2
        return np.diag(r @ (1.0 / self.var)) - (r / (self.var * size)) @ r.T

    def refit(self, theta: np.ndarray, var: np.ndarray, r: np.ndarray) -> Mixture:
        """The M step: each group's share, centre and variance from the strengths (posterior means `theta`,
        variances `var`) of its bots, with SPREAD_BOTS virtual bots SPREAD_GUESS from its centre so that a
        group of equal bots keeps a spread. One group stays centred at the field's mean (0)."""
        n = len(theta)
        size = r.sum(axis=0)
        mean = (r.T @ theta) / np.maximum(size, 1e-12) if len(size) > 1 else np.zeros(1)
        square = (r * ((theta[:, None] - mean[None, :]) ** 2 + var[:, None])).sum(axis=0)
        kept = size * max(n - 1, 0) / max(n, 1)  # the centring takes one bot's worth of freedom
        var_ = (square + SPREAD_BOTS * SPREAD_GUESS**2) / (kept + SPREAD_BOTS)
        return Mixture(np.maximum(size / n, 1e-12), mean, var_)

    def distance(self, other: Mixture) -> float:
        """How far EM moved: the largest relative change of a variance, or of a centre in SDs."""
        return float(
            max(
                np.max(np.abs(other.var / self.var - 1.0)),
                np.max(np.abs(other.mean - self.mean) / np.sqrt(self.var)),
                np.max(np.abs(other.weight - self.weight)),
            )
        )


def deconvolve(theta: np.ndarray, noise: np.ndarray, k: int) -> tuple[Mixture, float]:
    """A k-group mixture for estimates `theta` measured with variances `noise`, by EM on their marginal
    likelihood (Bovy's extreme deconvolution in one dimension), and that log-likelihood. Deterministic:
    the groups start as the k runs of the sorted estimates."""
    n = len(theta)
    chunks = np.array_split(np.sort(theta), k)
    mix = Mixture(
        np.full(k, 1.0 / k),
        np.array([c.mean() for c in chunks]),
        np.array([c.var() + SPREAD_GUESS**2 / 4 for c in chunks]),
    )
    loglik = -math.inf
    for _ in range(GROUP_STEPS):
        total = mix.var[None, :] + noise[:, None]  # (n, k)
        log = np.log(mix.weight)[None, :] - 0.5 * (
            np.log(2 * math.pi * total) + (theta[:, None] - mix.mean[None, :]) ** 2 / total
        )
        top = log.max(axis=1, keepdims=True)
        per_bot = top[:, 0] + np.log(np.exp(log - top).sum(axis=1))
        new_loglik = float(per_bot.sum())
        r = np.exp(log - per_bot[:, None])
        shrink = mix.var[None, :] / total
        b = mix.mean[None, :] + shrink * (theta[:, None] - mix.mean[None, :])  # each bot's strength if of c
        size = r.sum(axis=0)
        mean = (r * b).sum(axis=0) / np.maximum(size, 1e-12)
        var = (
            (r * ((b - mean[None, :]) ** 2 + mix.var[None, :] * (1 - shrink))).sum(axis=0)
            + SPREAD_BOTS * SPREAD_GUESS**2
        ) / (size + SPREAD_BOTS)
        mix = Mixture(np.maximum(size / n, 1e-12), mean, var)
        if new_loglik - loglik < GROUP_TOLERANCE:
            loglik = new_loglik
            break
        loglik = new_loglik
    return mix, loglik


def groups(theta: np.ndarray, noise: np.ndarray) -> Mixture:
    """The field's prior: a mixture of 1 to GROUPS normals, as many as the estimates' spread supports, each
    group kept if it adds GROUP_COST to the log-likelihood. Less than AIC's three (one for each of share,
    centre and variance) and far less than BIC's log(n)/2 a number, because the errors cost unequally: a
    normal field split in two loses little (its gap rests on the many games between neighbours across the
    split: refits of a tight and a normal field at 20 bots covered 95.5% and 96.2%, as before), while a
    group too few pulls a bot or a bunch far from the rest into the bell curve. BIC kept two groups 700 Elo
    apart as one in some runs (benchmarks/schedule_efficiency.py --fields: 89% coverage against 96%); AIC
    kept one bot 900 Elo above a field of SD 150 in it in a third of 60 runs of 20 bots, and its interval
    covered it in 52 of the 60 (the field's bots 93.7%); at 1, 95.1% (benchmarks/interval_coverage.py,
    refits of those stops)."""
    n = len(theta)
    best, best_score = Mixture(np.ones(1), np.zeros(1), np.ones(1)), -math.inf
    for k in range(1, min(GROUPS, max(1, n // GROUP_BOTS)) + 1):
        mix, loglik = deconvolve(theta, noise, k)
        score = loglik - GROUP_COST * k
        if score > best_score + 1e-9:
            best, best_score = mix, score
    if len(best.weight) == 1:
        best = Mixture(np.ones(1), np.zeros(1), best.var)
    return best


def posterior(
    pairs: Pairs,
    prior_draws: float = PRIOR_DRAWS,
    start: np.ndarray | None = None,
    virtual_draws: float = VIRTUAL_DRAWS,
) -> Posterior:
    """The Bradley-Terry fit of `pairs` with its Laplace covariance, scaled by the pairs' dispersion, under a
    prior for the field estimated from the field (empirical Bayes): a mixture of normals, one per group of
    the class that the strengths show.

    Why a prior: the ranking is read off noisy estimates, and noise spreads them apart. Where the schedule
    measures mostly neighbours (a chain of differences, as an adaptive run does), nothing else reins in the
    field's spread, so neighbour gaps come out too wide: with the flat fit alone the risks of the pairs the
    ranking puts side by side were overconfident (benchmarks/schedule_efficiency.py, see settle.LOOKS), and
    at a run's stop a tight cluster's intervals covered 74% of its bots. Why a mixture: a class is often not
    one bell curve (working bots and broken ones, a third near random). One normal for two groups 700 Elo
    apart pulled the groups together and its intervals covered 41% of the bots; with a group each, a bot is
    pulled only towards its own group, and the gap between groups rests on the games between them. The
    number of groups (1 to GROUPS) is chosen by AIC on the fit's strengths with their noise (`groups`, a
    deconvolution), so a field that is one bell curve keeps one. The groups' shares, centres and spreads are
    then refined by EM with the fit (each step: each bot's odds of each group and the posterior mode and
    curvature under the prior so far, then the groups' moments), with `SPREAD_BOTS` virtual bots at
    `SPREAD_GUESS` per group so that a group of equal bots keeps a spread. Then the groups' spread is not
    taken as known: the posterior is averaged over scales of it, each weighed by how well it explains the
    games (`integrate`), which finds a tight cluster's spread where the estimate put it at twice its truth,
    and widens the intervals by what the spread is not known to. A bot without games sits at a
    group's centre with its spread as its uncertainty. The `prior_draws` virtual draws keep only the first
    fit (the one without a prior) finite; under the prior the prior does that, within a group and (the
    centres' prior, SD `CENTRES`) between groups, but a perfectly ordered field needs a few `virtual_draws`
    (spread over each bot's own group) to bound its spread; more pulled a bot far from its group's middle in
    once more (`VIRTUAL_DRAWS`)."""
    n = pairs.n
    prior = prior_games(n, prior_draws)
    score, games = pairs.points()
    total = games + prior
    theta = fit(score + 0.5 * prior, total, start)  # the virtual draws keep a start finite
    pin = np.full((n, n), 1.0 / n)
    centre = np.eye(n) - pin
    # EM's start: the groups the fit's strengths show, less what their noise adds (a deconvolution)
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    info = total * p * (1.0 - p)
    noise = np.diag(np.linalg.inv(np.diag(info.sum(axis=1)) - info + pin) - pin) * dispersion(pairs, p)
    mix = groups(theta, np.maximum(noise, 0.0))
    var = np.zeros(n)  # the strengths' posterior variances: none known yet
    unit = np.zeros((n, n))  # their covariance per unit of dispersion: what the fit took out (see dispersion)
    steps, polish = [float(mix.var[0])], False
    for step in range(SPREAD_STEPS + 1):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
        r = mix.belongs(theta, var)
        total = games + prior_games(n, virtual_draws, r @ r.T)
        info = total * p * (1.0 - p)
        phi = dispersion(pairs, p, unit)
        precision = mix.precision(r)
        # The strengths are free up to a common shift: pinning their mean makes the curvature invertible,
        # and inv(H + J/n) - J/n is then the covariance of the centred strengths.
        curve = (np.diag(info.sum(axis=1)) - info) / phi + centre @ precision @ centre
        cov_nats = np.linalg.inv(curve + pin) - pin
        var = np.maximum(np.diag(cov_nats), 0.0)
        unit = cov_nats / phi
        new = mix.refit(theta, var, mix.belongs(theta, var))
        if polish or step == SPREAD_STEPS:
            break
        # One Newton step per EM step; once the prior has converged, a converged fit under it
        polish = mix.distance(new) <= SPREAD_TOLERANCE
        mix = new
        if len(mix.var) == 1:  # EM creeps geometrically: Aitken's extrapolation jumps to where it is going
            steps.append(float(mix.var[0]))
            if len(steps) >= 3:
                a, b, c = steps[-3:]
                ratio = (c - b) / (b - a) if b != a else 0.0
                jump = c - (c - b) ** 2 / ((c - b) - (b - a)) if 0.0 < ratio < 1.0 else 0.0
                if jump > 0.0:  # not where a moving dispersion made the steps no geometric series
                    mix = Mixture(mix.weight, mix.mean, np.array([jump]))
                    steps.clear()
        r = mix.belongs(theta, var)
        virtual = prior_games(n, virtual_draws, r @ r.T)
        theta = _newton(
            theta[None, :],
            (score + 0.5 * virtual)[None],
            games + virtual,
            ridge=phi * mix.precision(r),
            steps=100 if polish else 1,
        )[0]
    r = mix.belongs(theta, var)
    virtual = prior_games(n, virtual_draws, r @ r.T)
    theta, cov_nats, spread = integrate(mix, r, theta, score + 0.5 * virtual, games + virtual, phi)
    cov = ELO_PER_NAT**2 * cov_nats
    return Posterior(ELO_CENTRE + ELO_PER_NAT * theta, (cov + cov.T) / 2.0, phi, theta, ELO_PER_NAT * spread)


def integrate(
    mix: Mixture, r: np.ndarray, theta: np.ndarray, score: np.ndarray, games: np.ndarray, phi: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """The strengths' posterior mean and covariance (natural units) with the prior's scale integrated
    out, and the prior's SD averaged likewise: the groups' variances times each of SCALES², each weighed
    by its Laplace marginal likelihood (the games' likelihood over the dispersion `phi`, the strengths
    integrated out) to the power EVIDENCE_POWER and the variance's prior (see SCALE_PRIOR); the
    posteriors under each, mixed.

    Why: empirical Bayes plugs in one spread as if it were known, and an adaptive run's games do not pin it
    down: the schedule plays on where estimates look close and leaves gaps that look wide, so chance gaps
    stay and the estimates come out more spread than their noise explains. At the stop of 20-bot runs of a
    tight cluster (Elo SD 29) they were spread 45 where the noise explained 31; the same pairings replayed
    with fresh results were not (without a prior, intervals covered 95% of the bots on those and 74% on the
    run's own: schedule_efficiency.py --fields), and the plug-in put the prior's SD at 60 (the virtual bot
    at SPREAD_GUESS adds the rest). The
    marginal likelihood is blind to how the games were chosen (the choice depends only on results already
    seen), so weighing each scale by it finds the cluster's spread (mostly 20-45 Elo) and widens each
    interval by what the spread is not known to: on the results of those stops the intervals covered 94%
    of the bots where the plug-in covered 87%, with the true SD known 95%.

    The integral is a sum over scales, and SCALES alone are too far apart for it where the games pin the
    spread down: at 30 bots its log has an SD of about 0.13 (1 / sqrt(2 (n - 1))), the grid's step is
    0.375, and one point took nearly all the weight, a plug-in again. So the grid is refined around its
    heaviest point (`REFINE` steps in each step either side, `_scale_grid`) and each point weighed by the
    span it stands for (the trapezoid rule in log SD)."""
    n = len(theta)
    pin = np.full((n, n), 1.0 / n)
    centring = np.eye(n) - pin
    base = math.sqrt(float(mix.weight @ mix.var))

    def at(factors: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(strengths, log weight per log SD, covariance) of the posterior under each scale factor."""
        k = len(factors)
        precision = np.stack([Mixture(mix.weight, mix.mean, mix.var * f**2).precision(r) for f in factors])
        thetas = _newton(start, np.broadcast_to(score, (k, n, n)), games, ridge=phi * precision)
        p = 1.0 / (1.0 + np.exp(thetas[:, None, :] - thetas[:, :, None]))  # (k, n, n): P(i beats j)
        info = games * p * (1.0 - p)
        prior = centring @ precision @ centring
        curve = (np.eye(n) * info.sum(axis=2)[:, :, None] - info) / phi + prior
        # the log marginal likelihood on the centred strengths (n - 1 of them), by Laplace: the 2π terms
        # cancel
        log_prior = 0.5 * np.linalg.slogdet(prior + pin)[1] - 0.5 * (
            (prior @ thetas[..., None])[..., 0] * thetas
        ).sum(1)
        evidence = _log_likelihood(thetas, score) / phi + log_prior - 0.5 * np.linalg.slogdet(curve + pin)[1]
        sd = base * factors
        log_prior_sd = 2.0 * (np.log(sd) - np.log1p((sd / SCALE_PRIOR) ** 2))  # per log SD (see SCALES)
        log_w = EVIDENCE_POWER * evidence + log_prior_sd
        return thetas, log_w, np.linalg.inv(curve + pin) - pin

    coarse = np.log(SCALES)
    thetas, log_w, covs = at(SCALES, np.broadcast_to(theta, (len(SCALES), n)).copy())
    fine = _scale_grid(coarse, int(np.argmax(log_w)))
    if len(fine):
        nearest = np.abs(fine[:, None] - coarse[None, :]).argmin(axis=1)
        more = at(np.exp(fine), thetas[nearest].copy())
        thetas, log_w, covs = (
            np.concatenate([a, b]) for a, b in zip((thetas, log_w, covs), more, strict=True)
        )
    x = np.concatenate([coarse, fine])
    order = np.argsort(x)
    x, thetas, log_w, covs = x[order], thetas[order], log_w[order], covs[order]
    span = np.gradient(x) if len(x) > 1 else np.ones(1)  # the trapezoid rule's weight of each point
    w = np.exp(log_w - log_w.max()) * span
    w /= w.sum()
    mean = w @ thetas
    apart = thetas - mean
    cov = np.einsum("k,kij->ij", w, covs) + (w[:, None] * apart).T @ apart
    spreads = [Mixture(mix.weight, mix.mean, mix.var * f**2).spread for f in np.exp(x)]
    return mean, cov, float(w @ np.array(spreads))


def _scale_grid(coarse: np.ndarray, heaviest: int) -> np.ndarray:
    """The log scale factors added between the coarse grid's points next to its heaviest (index
    `heaviest`): `REFINE` - 1 evenly spaced in each of its steps either side."""
    if REFINE <= 1 or len(coarse) < 2:
        return np.zeros(0)
    lo, hi = max(heaviest - 1, 0), min(heaviest + 1, len(coarse) - 1)
    steps = [np.linspace(coarse[k], coarse[k + 1], REFINE + 1)[1:-1] for k in range(lo, hi)]
    return np.concatenate(steps)


def dispersion(pairs: Pairs, p: np.ndarray, unit: np.ndarray | None = None) -> float:
    """Pearson's dispersion of the pair scores under the fit: Σ (score - 2p)² over Σ 2p(1 - p) (1 - h),
    each pair of bots once, shrunk towards 1 (independent games) by a prior worth a few pairs.

    h is a pair's leverage, V · Var(theta_a - theta_b) per unit of dispersion (`unit`, the fit's covariance
    over the dispersion; none: no correction): the fit follows each pair's results by that share, so its
    residuals fall short of the scores' variance by as much. Where pairs of bots meet once or twice, as
    extremes of an adaptive run and sparse fields do, the plain ratio put the dispersion of independent games
    with 6% draws (0.94) at 0.69, and every interval was too narrow by a fifth."""
    upper = np.triu(np.ones_like(p, dtype=bool), 1)
    counts = pairs.counts[upper]  # (m, 5)
    expected = 2.0 * p[upper]
    k = np.arange(SCORES) / 2.0
    residual = (counts * (k[None, :] - expected[:, None]) ** 2).sum()
    v = 2.0 * p[upper] * (1.0 - p[upper])
    lever = np.zeros_like(v)
    if unit is not None:
        diag = np.diag(unit)
        lever = np.clip(v * (diag[:, None] + diag[None, :] - unit - unit.T)[upper], 0.0, 1.0)
    model = (counts.sum(axis=1) * v * (1.0 - lever)).sum()
    return float((residual + DISPERSION_WEIGHT) / (model + DISPERSION_WEIGHT))
