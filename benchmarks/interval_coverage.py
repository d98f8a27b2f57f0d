"""Do the page's 95% intervals cover 95% on the fields a class has, adaptive schedule included?

    python benchmarks/interval_coverage.py [--bots 20 30] [--seeds 60] [--fields KIND ...] [--jobs 2]

Virtual bots of known Elo driven through the real schedule, ratings and stopping rule as `arena run` plays
them (schedule_efficiency.py's `adaptive`: the next batch decided while one plays), to the stop. For each
kind of field and size it prints one row:
- coverage: the share of bots whose true Elo (centred on the mean of the bots that do not lose every game)
  lies inside the interval the page shows, with a 95% interval for it that treats each run as one cluster
  (the bots of a run share its schedule and its errors, so counting them as independent would overstate how
  well coverage is known);
- relative: the same, each bot's Elo less the working bots' mean against that difference's own SD (from
  the posterior's covariance): the page's intervals are about the whole field's mean, broken bots too,
  whose uncertainty widens every interval; this is what a comparison within the working field rests on;
- ideal: the same share under the exact posterior given the field's own prior (`ideal`, by importance
  sampling): the best any rating could do with the run's games, knowing what the field was drawn from. A
  Bayesian posterior under the true prior and likelihood covers 95% on average over seeds whatever the
  schedule (the choice of games depends only on results already seen), so this column shows how far a
  row's seeds are from 95% by chance, and `relative` against it what the page's posterior loses;
- the mean z of the strongest and the weakest tenth of the working bots ((estimate - truth) / sd, as in
  relative): a field pulled together shows the strong below 0 and the weak above;
- reversals: settled runs with a neighbour pair more than the resolution the wrong way round, of the
  settled runs (the rule promises at most 5%);
- games as a share of a 100-round round robin's, n(n-1)100.

The fields (`FIELDS`), each scaled to n bots by its shares:
- normal: Elo SD 250, 6% draws;
- tight: Elo SD 30 (a cluster of near-equal bots), 6% draws;
- groups: two halves 700 Elo apart (working bots and broken ones that still move), 6% draws;
- class: as a class is, from 24 bots: 3 strong at +600, 13 middling (SD 150), 4 near random (-500), 4
  broken that lose every game; 12% draws;
- lab (this benchmark's own): 2 of 20 broken (lose every game), 3 crashing often (-400, SD 80), a bunch of
  5 copies of one sample bot (equal, +100), the rest SD 200; 20% draws, as among careful bots;
- tails (not tuned to): Student's t with 3 degrees of freedom, scale 120 Elo: a few bots far out where a
  normal prior expects none; 6% draws;
- dominant (not tuned to): one bot 900 Elo above a field of SD 150 (a teacher's reference, or a student
  far ahead), which wins nearly every game; 10% draws.
Broken bots are left out of the coverage: no finite Elo is true of them. So are bots that scored no point
or lost none in the run (counted in the last column, `one-sided`): their results bound their Elo on one side
only, as a broken bot's do (the tails field draws one now and then 1,500-3,000 Elo below the rest, and no
interval of a bot that lost all of 140 games says how far below), and the others are measured against the
mean of the rest, as with the broken bots.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: BLAS threads only fight over a shared machine's cores

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from schedule_efficiency import FORFEIT, adaptive, judge, pair_odds, wilson  # noqa: E402
from sprt import game_odds  # noqa: E402

from arena.stats import ratings  # noqa: E402
from arena.stats.posterior import ELO_PER_NAT, Pairs  # noqa: E402
from arena.stats.settle import Rule  # noqa: E402

FIELDS = ("normal", "tight", "groups", "class", "lab", "tails", "dominant")
DRAWS = {
    "normal": 0.06,
    "tight": 0.06,
    "groups": 0.06,
    "class": 0.12,
    "lab": 0.20,
    "tails": 0.06,
    "dominant": 0.10,
}


def shares(n: int, parts: list[int]) -> list[int]:
    """`parts` (of their sum) scaled to n bots, the largest part taking what rounding leaves."""
    total = sum(parts)
    sizes = [max(1, round(p * n / total)) for p in parts]
    sizes[int(np.argmax(parts))] += n - sum(sizes)
    return sizes


@dataclass(frozen=True)
class Prior:
    """What a field's Elos are drawn from, bot by bot: Student's t with `df` degrees of freedom (inf: a
    normal) around `centre` with `scale`; a scale of 0 is a point (a broken bot, copies of one bot)."""

    centre: np.ndarray
    scale: np.ndarray
    df: float = math.inf


def field(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, Prior]:
    """True Elos of a field of `kind` and n bots, which of them lose every game, and what they were drawn
    from (for `ideal`)."""
    broken = np.zeros(n, dtype=bool)
    df = math.inf
    if kind == "normal":
        centre, scale = np.zeros(n), np.full(n, 250.0)
    elif kind == "tight":
        centre, scale = np.zeros(n), np.full(n, 30.0)
    elif kind == "groups":
        centre, scale = np.where(np.arange(n) < n // 2, 0.0, -700.0), np.full(n, 100.0)
    elif kind == "class":
        strong, middling, weak, dead = shares(n, [3, 13, 4, 4])
        centre = np.repeat([600.0, 0.0, -500.0, FORFEIT], [strong, middling, weak, dead])
        scale = np.repeat([60.0, 150.0, 60.0, 0.0], [strong, middling, weak, dead])
        broken[strong + middling + weak :] = True
    elif kind == "lab":
        dead, crashing, copies, rest = shares(n, [2, 3, 5, 10])
        centre = np.repeat([FORFEIT, -400.0, 100.0, 0.0], [dead, crashing, copies, rest])
        scale = np.repeat([0.0, 80.0, 0.0, 200.0], [dead, crashing, copies, rest])
        broken[:dead] = True
    elif kind == "tails":
        # Student's t, 3 degrees of freedom: a few bots far out, where a normal prior expects none
        centre, scale, df = np.zeros(n), np.full(n, 120.0), 3.0
    elif kind == "dominant":
        centre = np.concatenate([[900.0], np.zeros(n - 1)])  # one bot that beats everyone
        scale = np.concatenate([[0.0], np.full(n - 1, 150.0)])
    else:
        raise ValueError(f"unknown field {kind!r}")
    if kind == "groups":  # drawn as it always was, both halves' draws made, so that a seed keeps its field
        elo = np.where(np.arange(n) < n // 2, rng.normal(0.0, 100.0, n), rng.normal(-700.0, 100.0, n))
    elif kind == "tails":
        elo = 120.0 * rng.standard_t(3, n)
    else:
        drawn = scale > 0
        elo = centre.copy()
        for c, sd in dict.fromkeys(zip(centre[drawn], scale[drawn], strict=True)):  # group by group, in order
            mine = drawn & (centre == c) & (scale == sd)
            elo[mine] = rng.normal(c, sd, int(mine.sum()))
    return elo, broken, Prior(centre, scale, df)


def ideal(
    elo: np.ndarray,
    prior: Prior,
    pairs: Pairs,
    draws: float,
    start: np.ndarray,
    phi: float,
    keep: np.ndarray,
    seed: int,
) -> int:
    """Of the bots `keep`, how many lie inside the 95% interval of their Elo less those bots' mean that the
    exact posterior gives under the field's own prior and the games' own likelihood (`pair_odds`, with
    its `draws`): the best any rating could do with the run's games, knowing how the field was drawn and
    the games played (what `relative` measures for the page's posterior). By importance sampling: a
    Student's t (5 degrees of freedom) around the mode of the page's likelihood (Bradley-Terry on the half
    points over the pairs' dispersion `phi`) under that prior, its curvature's covariance widened by a
    third; the mode found by Newton from the page's `start` (natural units). A bot drawn from a point is
    fixed there."""
    score, games = pairs.points()
    free = prior.scale > 0
    x = prior.centre / ELO_PER_NAT
    centre, scale = prior.centre[free] / ELO_PER_NAT, prior.scale[free] / ELO_PER_NAT
    df = prior.df

    def prior_terms(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Log-density of the free strengths `t` (B, m), its gradient and its curvature (-d², each bot)."""
        d = t - centre
        if math.isinf(df):
            return (
                -0.5 * ((d / scale) ** 2).sum(axis=1),
                -d / scale**2,
                np.broadcast_to(1 / scale**2, d.shape),
            )
        wide = df * scale**2 + d**2
        log = -(df + 1) / 2 * np.log1p(d**2 / (df * scale**2))
        return log.sum(axis=1), -(df + 1) * d / wide, (df + 1) * (df * scale**2 - d**2) / wide**2

    def full(t: np.ndarray) -> np.ndarray:
        out = np.broadcast_to(x, (len(t), len(x))).copy()
        out[:, free] = t
        return out

    t = (start[free] - start[free].mean() + centre.mean())[None, :]
    for _ in range(200):  # Newton to the mode; a t prior's curvature is not concave far out: kept positive
        whole = full(t)[0]
        p = 1.0 / (1.0 + np.exp(whole[None, :] - whole[:, None]))
        info = games * p * (1.0 - p)
        hess = ((np.diag(info.sum(axis=1)) - info) / phi)[np.ix_(free, free)]
        _, grad, curve = prior_terms(t)
        grad = (score.sum(axis=1) - (games * p).sum(axis=1))[free] / phi + grad[0]
        step = np.linalg.solve(hess + np.diag(np.maximum(curve[0], 0.1 / scale**2)), grad)
        t = t + np.clip(step, -1.0, 1.0)
        if np.max(np.abs(step)) < 1e-9:
            break
    cov = 1.33 * np.linalg.inv(hess + np.diag(np.maximum(curve[0], 0.1 / scale**2)))
    root = np.linalg.cholesky(cov)
    rng = np.random.default_rng(50_000 + seed)
    many, nu = 20_000, 5.0
    z = rng.standard_normal((many, len(t[0])))
    stretch = np.sqrt(rng.chisquare(nu, many) / nu)[:, None]
    samples = t + (z @ root.T) / stretch
    log_q = -(nu + len(t[0])) / 2 * np.log1p(((z / stretch) ** 2).sum(axis=1) / nu)
    a, b = np.nonzero(np.triu(pairs.pairings() + pairs.single.sum(axis=2), 1))
    counts, single = pairs.counts[a, b], pairs.single[a, b]  # a's pair scores, a's (wins, draws, losses)

    def log_likelihood(t: np.ndarray) -> np.ndarray:
        """The games' log-likelihood as they were played (pair_odds), for each row of strengths `t`."""
        e = full(t) * ELO_PER_NAT
        with np.errstate(divide="ignore", invalid="ignore"):  # a result they make impossible: weight 0
            pair = np.log(pair_odds(e[:, a], e[:, b], draws))
            game = np.log(game_odds(e[:, a] - e[:, b], draws))[..., ::-1]  # as `single`: wins first
            seen = np.where(counts > 0, counts * pair, 0.0).sum(axis=(1, 2))
            return seen + np.where(single > 0, single * game, 0.0).sum(axis=(1, 2))

    log_p = np.concatenate([log_likelihood(samples[k : k + 1000]) for k in range(0, len(samples), 1000)])
    log_p = log_p + prior_terms(samples)[0]
    w = np.exp(log_p - log_q - (log_p - log_q).max())
    w /= w.sum()
    est = full(samples)[:, keep] * ELO_PER_NAT
    est -= est.mean(axis=1, keepdims=True)
    truth = elo[keep] - elo[keep].mean()
    inside = 0
    for i in range(int(keep.sum())):
        order = np.argsort(est[:, i])
        cumulative = np.cumsum(w[order])
        lo, hi = np.interp([0.025, 0.975], cumulative, est[order, i])
        inside += bool(lo <= truth[i] <= hi)
    return inside


@dataclass(frozen=True)
class Row:
    inside: int
    counted: int
    games: int
    settled: bool
    reversed: bool
    z_top: float  # mean z of the strongest tenth (at least 2) of the working bots
    z_bottom: float  # and of the weakest tenth
    relative: int  # bots inside the 95% interval of their Elo less the working bots' mean (its own SD)
    one_sided: int  # bots not broken left out: they scored no point, or lost none
    ideal: int  # bots inside the exact posterior's interval under the field's own prior (see `ideal`)


def one(task: tuple[str, int, int]) -> Row:
    kind, n, seed = task
    elo, broken, prior = field(kind, n, np.random.default_rng(seed))
    rule = Rule()
    run = adaptive(elo, rule, seed, DRAWS[kind], cap=n * (n - 1) * 100)
    points, games = run.pairs.points()
    scored, played = points.sum(axis=1), games.sum(axis=1)
    pct = [100.0 * s / g if g else None for s, g in zip(scored, played, strict=True)]
    one_sided = ~broken & np.array([ratings.one_sided(p) != "" for p in pct])  # as the page tells them
    keep = ~broken & ~one_sided
    truth = elo[keep] - elo[keep].mean()
    shown = run.post.elo[keep] - run.post.elo[keep].mean()
    inside = int((np.abs(shown - truth) <= run.post.pm()[keep]).sum())
    # each working bot's Elo less the working bots' mean, with that difference's own SD: what a comparison
    # with the field (or with a bot of it) rests on, whatever the broken bots' uncertainty adds to the page's
    m = int(keep.sum())
    u = np.eye(n)[keep] - np.where(keep, 1.0 / m, 0.0)[None, :]
    sd = np.sqrt(np.maximum(np.einsum("pi,ij,pj->p", u, run.post.cov, u), 1e-12))
    z = (shown - truth) / sd
    tenth = max(2, len(truth) // 10)
    ranked = np.argsort(-truth)
    return Row(
        inside,
        int(keep.sum()),
        run.games,
        run.settled,
        run.settled and judge(elo, run.post, rule.resolution)[2],
        float(z[ranked[:tenth]].mean()),
        float(z[ranked[-tenth:]].mean()),
        int((np.abs(z) <= 1.959964).sum()),
        int(one_sided.sum()),
        ideal(elo, prior, run.pairs, DRAWS[kind], run.post.theta, run.post.dispersion, keep, seed),
    )


def clustered(inside: list[int], counted: list[int]) -> tuple[float, float]:
    """The pooled share inside/counted and the half-width of its 95% interval, each run one cluster (a ratio
    estimator's standard error: the runs' residuals inside - share * counted)."""
    k, m = np.array(inside, dtype=float), np.array(counted, dtype=float)
    share = k.sum() / m.sum()
    if len(k) < 2:
        return float(share), float("nan")
    resid = k - share * m
    se = np.sqrt(len(k) / (len(k) - 1) * (resid**2).sum()) / m.sum()
    return float(share), float(1.96 * se)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, nargs="+", default=[20, 30])
    parser.add_argument("--seeds", type=int, default=60)
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--fields", nargs="+", choices=FIELDS, default=list(FIELDS))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    seeds = range(args.first, args.first + args.seeds)
    print(f"seeds {seeds[0]}-{seeds[-1]}; {Rule().describe()}")
    print(
        f"{'bots':>4} {'field':7} {'runs':>4} {'coverage (95% CI)':>22} {'relative (95% CI)':>22} "
        f"{'ideal (95% CI)':>22} {'z strong':>8} {'z weak':>7} "
        f"{'reversed/settled (Wilson 95%)':>29} {'RR-100 share':>12} {'s/run':>6} {'one-sided':>9}"
    )
    with Pool(args.jobs) as pool:
        for n in args.bots:
            for kind in args.fields:
                started = time.perf_counter()
                rows = pool.map(one, [(kind, n, s) for s in seeds], chunksize=1)
                took = (time.perf_counter() - started) * args.jobs / len(rows)
                cover, half = clustered([r.inside for r in rows], [r.counted for r in rows])
                rel, rel_half = clustered([r.relative for r in rows], [r.counted for r in rows])
                best, best_half = clustered([r.ideal for r in rows], [r.counted for r in rows])
                settled = sum(r.settled for r in rows)
                wrong = sum(r.reversed for r in rows)
                share = np.mean([r.games for r in rows]) / (n * (n - 1) * 100)
                ci = f"{cover:.1%} ({cover - half:.1%}-{min(1.0, cover + half):.1%})"
                rci = f"{rel:.1%} ({rel - rel_half:.1%}-{min(1.0, rel + rel_half):.1%})"
                ici = f"{best:.1%} ({best - best_half:.1%}-{min(1.0, best + best_half):.1%})"
                low, high = wilson(wrong, settled)
                rev = f"{wrong}/{settled} ({low:.0%}-{high:.0%})"
                print(
                    f"{n:>4} {kind:7} {len(rows):>4} {ci:>22} {rci:>22} {ici:>22} "
                    f"{np.mean([r.z_top for r in rows]):>+8.2f} "
                    f"{np.mean([r.z_bottom for r in rows]):>+7.2f} {rev:>29} {share:>12.1%} "
                    f"{took:>6.1f} {sum(r.one_sided for r in rows):>9}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
