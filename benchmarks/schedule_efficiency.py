"""Games until a ranking is settled: the adaptive schedule against a round robin of 100 rounds.

    python benchmarks/schedule_efficiency.py [--bots 30 100] [--seeds 40] [--sd 250] [--draws 0.06]
                                             [--confidence 0.95] [--resolution 30] [--looks L]
                                             [--fields [KIND ...]] [--reference]

Virtual bots of known Elo (no processes): every game's result is drawn from the Elo curve, with 6% draws
(fewer where a win is near certain, so the expected score is the curve's), each pairing two games. They are
driven through the real schedule (`adaptive.plan`), ratings (`posterior.posterior`) and stopping rule
(`settle.verdict`), batch by batch as `arena run` plays them: the next batch is decided while one is being
played, from the batches already complete, and the run stops when the complete results are settled.

For each field size, over `--seeds` fields of bots drawn with Elo SD `--sd`, it prints
- games until settled, against the 100-round round robin's n(n-1)100 games;
- the share of pairs more than the resolution apart ordered wrong, and top-3 exact, for both, ranked the
  same way (the posterior's order);
- calibration: among runs called settled, the share whose ranking has a neighbour pair reversed by more
  than the resolution, with its 95% (Wilson) interval; it must be at most 1 - confidence. Beside it, what
  the rule stated at the stop: the mean over those runs of the summed risks (the posterior's chance of such
  a pair), which a calibrated posterior matches.

`--fields [KIND ...]` runs four kinds of field (or those named) instead of one normal one, as a class may
be: `normal` (Elo SD `--sd`), `tight` (near-equal bots, SD 30), `groups` (two halves 700 Elo apart: working
bots and broken ones) and `class` (a third near random, 600 below the rest, and a tenth that forfeit every
game), printing for each the
coverage of the page's 95% intervals (the share of bots whose true Elo, both centred on the field's mean
without the forfeiting bots, lies inside their interval) at the adaptive run's stop, and the stopping rule's
calibration as above. Beside it, the coverage without the prior, on the run's results and on the same
pairings replayed with fresh results: where the two differ, the schedule's choices (it plays on where
estimates look close, and leaves gaps that look wide) made the estimates more spread than their noise.

`--reference` settles every bot against one reference bot only (the field's median, `--reference` alone on
`arena run`) and prints its games beside the full ranking's, and the share of verdicts (better, worse,
within the resolution) wrong by more than the resolution.

`--looks` replaces the rule's margin for stopping at the first batch that passes (`settle.LOOKS`): the risks
must sum to (1 - confidence) / looks. Runs at several values, confidences and resolutions give the curve of
games against calibration.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: BLAS threads only fight over a shared machine's cores

import numpy as np  # noqa: E402  (after the thread counts, which numpy reads once)
from sprt import game_odds  # noqa: E402  (this folder's: the games' model, one place)

from arena.stats import settle  # noqa: E402
from arena.stats.posterior import (  # noqa: E402
    ELO_CENTRE,
    ELO_PER_NAT,
    SCORES,
    Pairs,
    Posterior,
    dispersion,
    fit,
    posterior,
    prior_games,
)
from arena.stats.settle import Rule, verdict  # noqa: E402
from arena.tournament.adaptive import batch_size, plan  # noqa: E402


def pair_odds(elo_a: np.ndarray, elo_b: np.ndarray, draws: float) -> np.ndarray:
    """P(a scores k half points in a pair of games against b), (..., 5), the two games independent."""
    game = game_odds(elo_a - elo_b, draws)  # 0, 1, 2 half points
    pair = np.zeros((*game.shape[:-1], SCORES))
    for x in range(3):
        for y in range(3):
            pair[..., x + y] += game[..., x] * game[..., y]
    return pair


def play(
    elo: np.ndarray, batch: tuple[tuple[int, int], ...], draws: float, rng: np.random.Generator
) -> tuple:
    a = np.array([x for x, _ in batch])
    b = np.array([y for _, y in batch])
    odds = pair_odds(elo[a], elo[b], draws)
    u = rng.random(len(a))[:, None]
    k = (u > np.cumsum(odds, axis=1)[:, :-1]).sum(axis=1)
    return a, b, k


@dataclass
class Outcome:
    games: int
    settled: bool
    post: Posterior
    risk: float  # the summed risks of the claims at the stop: what the rule stated
    pairs: Pairs  # the results at the stop


def batches(elo: np.ndarray, rule: Rule, seed: int, draws: float) -> Iterator[tuple[int, Pairs, Posterior]]:
    """Batches as `arena run` plays them: batch i+2 is decided when batch i is complete, from batches <= i,
    so one batch is always in hand; after each complete batch, the games so far, their results and the
    posterior. The run ends when the complete batches are settled and none is left."""
    n = len(elo)
    names = [f"bot{i}" for i in range(n)]
    rng = np.random.default_rng(10_000 + seed)
    size = batch_size(n)
    done = Pairs.empty(n)
    in_hand = [plan(done, rule, names, seed, 0, size), plan(done, rule, names, seed, 1, size)]
    index = 2
    games = 0
    post = posterior(done)
    while in_hand:
        batch = in_hand.pop(0)
        if batch:
            done = done.add(*play(elo, batch, draws, rng))
            games += 2 * len(batch)
        post = posterior(done, start=post.theta)
        yield games, done, post
        nxt = plan(done, rule, names, seed, index, size, post)
        index += 1
        if nxt:
            in_hand.append(nxt)


def adaptive(elo: np.ndarray, rule: Rule, seed: int, draws: float, cap: int) -> Outcome:
    """An adaptive run (`batches`) to its end, or until `cap` games."""
    last = (0, Pairs.empty(len(elo)), posterior(Pairs.empty(len(elo))))
    for last in batches(elo, rule, seed, draws):
        if last[0] >= cap:
            break
    games, done, post = last
    judged = verdict(post, rule, [f"bot{i}" for i in range(len(elo))])
    return Outcome(games, judged.settled, post, sum(c.risk for c in judged.claims), done)


def round_robin(elo: np.ndarray, rounds: int, draws: float, rng: np.random.Generator) -> Posterior:
    n = len(elo)
    a, b = np.triu_indices(n, 1)
    odds = pair_odds(elo[a], elo[b], draws)
    counts = np.stack([rng.multinomial(rounds, o) for o in odds])
    pairs = Pairs.empty(n)
    full = pairs.counts.copy()
    full[a, b] = counts
    full[b, a] = counts[:, ::-1]
    return posterior(Pairs(full, pairs.single))


def judge(elo: np.ndarray, post: Posterior, resolution: float) -> tuple[float, bool, bool]:
    """(share of pairs more than `resolution` apart ordered wrong, top 3 exact, a neighbour pair in the
    ranking reversed by more than `resolution`)."""
    order = post.order()
    truth = elo[order]  # true strengths in the order ranked
    i, j = np.triu_indices(len(elo), 1)  # i ranked above j
    apart = np.abs(truth[i] - truth[j]) > resolution
    wrong = apart & (truth[j] > truth[i])
    share = wrong.sum() / max(1, apart.sum())
    top3 = bool(np.array_equal(order[:3], np.argsort(-elo)[:3]))
    reversed_neighbour = bool(np.any(truth[1:] - truth[:-1] > resolution))
    return float(share), top3, reversed_neighbour


FIELDS = ("normal", "tight", "groups", "class")
FORFEIT = -3000.0  # a bot that forfeits every game: it loses to all, as far below as the curve can tell


def field(kind: str, n: int, sd: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """True Elos of a field of `kind`, and which of them forfeit every game (left out of the coverage: no
    finite Elo is true of them)."""
    forfeits = np.zeros(n, dtype=bool)
    if kind == "normal":
        elo = rng.normal(0.0, sd, n)
    elif kind == "tight":
        elo = rng.normal(0.0, 30.0, n)
    elif kind == "groups":
        elo = np.where(np.arange(n) < n // 2, rng.normal(0.0, 100.0, n), rng.normal(-700.0, 100.0, n))
    elif kind == "class":
        third, tenth = n // 3, max(1, n // 10)
        elo = rng.normal(0.0, 200.0, n)
        elo[:third] = rng.normal(-600.0, 60.0, third)  # near random
        elo[third : third + tenth] = FORFEIT
        forfeits[third : third + tenth] = True
    else:
        raise ValueError(f"unknown field {kind!r}")
    return elo, forfeits


def flat(pairs: Pairs) -> Posterior:
    """The same results without the field's prior (only `posterior.PRIOR_DRAWS` virtual draws keep the fit
    finite): the alternative of no prior for what the page reports, the prior only for the schedule."""
    n = pairs.n
    prior = prior_games(n)
    score, games = pairs.points()
    total = games + prior
    theta = fit(score + 0.5 * prior, total)
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    info = total * p * (1.0 - p)
    phi = dispersion(pairs, p)
    pin = np.full((n, n), 1.0 / n)
    cov = ELO_PER_NAT**2 * (np.linalg.inv((np.diag(info.sum(axis=1)) - info) / phi + pin) - pin)
    return Posterior(ELO_CENTRE + ELO_PER_NAT * theta, (cov + cov.T) / 2.0, phi, theta)


def coverage(elo: np.ndarray, forfeits: np.ndarray, post: Posterior) -> tuple[int, int]:
    """(bots whose true Elo lies inside their 95% interval, bots counted), both centred on the mean of the
    bots that do not forfeit everything."""
    keep = ~forfeits
    truth = elo[keep] - elo[keep].mean()
    shown = post.elo[keep] - post.elo[keep].mean()
    return int((np.abs(shown - truth) <= post.pm()[keep]).sum()), int(keep.sum())


def replayed(elo: np.ndarray, pairs: Pairs, draws: float, rng: np.random.Generator) -> Pairs:
    """The same pairings as `pairs` with fresh results: the schedule's choices kept, its dependence on the
    results it saw removed (what the fit's coverage is without it)."""
    n = len(elo)
    a, b = np.triu_indices(n, 1)
    played = pairs.pairings()[a, b]
    odds = pair_odds(elo[a], elo[b], draws)
    counts = np.stack([rng.multinomial(int(k), o) for k, o in zip(played, odds, strict=True)])
    full = np.zeros_like(pairs.counts)
    full[a, b], full[b, a] = counts, counts[:, ::-1]
    return Pairs(full, np.zeros_like(pairs.single))


def reference_errors(elo: np.ndarray, judged: settle.Verdict, ref: int, resolution: float) -> int:
    """Verdicts against the reference wrong by more than the resolution: 'better' of a bot more than the
    resolution worse, 'worse' of one more than it better, 'within' of one more than it away either way."""
    wrong = 0
    for name, verdicts in judged.against().items():
        b = judged.names.index(name)
        gap = elo[b] - elo[ref]
        word = next(iter(verdicts.values())).word
        wrong += (word == "better" and gap < -resolution) or (word == "worse" and gap > resolution)
        wrong += word == "within" and abs(gap) > resolution  # within on both sides (settle._status)
    return wrong


def fields(args: argparse.Namespace, rule: Rule) -> None:
    """Coverage and calibration on the four kinds of field."""
    for n in args.bots:
        cap = n * (n - 1) * args.rounds
        for kind in args.fields:
            started = time.perf_counter()
            inside = counted = games = wrong = settled = unshrunk = fresh = 0
            for seed in range(args.seeds):
                elo, forfeits = field(kind, n, args.sd, np.random.default_rng(seed))
                run = adaptive(elo, rule, seed, args.draws, cap=cap)
                k, m = coverage(elo, forfeits, run.post)
                inside, counted, games = inside + k, counted + m, games + run.games
                unshrunk += coverage(elo, forfeits, flat(run.pairs))[0]
                again = replayed(elo, run.pairs, args.draws, np.random.default_rng(30_000 + seed))
                fresh += coverage(elo, forfeits, flat(again))[0]
                if run.settled:
                    settled += 1
                    wrong += judge(elo, run.post, rule.resolution)[2]
            lo, hi = wilson(wrong, settled)
            print(
                f"{n} bots, {kind:6} field, {args.seeds} seeds ({time.perf_counter() - started:.0f} s): 95% "
                f"intervals cover {inside / counted:.1%} of {counted} bots (without the prior "
                f"{unshrunk / counted:.1%}, or {fresh / counted:.1%} of the same pairings replayed with "
                f"fresh results); games {games / args.seeds:,.0f} "
                f"= {games / args.seeds / cap:.1%} of the round robin; settled {settled}/{args.seeds}, "
                f"with a neighbour reversed by > {rule.resolution:g} Elo {wrong}/{settled} "
                f"({lo:.0%}-{hi:.0%})",
                flush=True,
            )


def references(args: argparse.Namespace, rule: Rule) -> None:
    """Settling every bot against the median bot only, beside settling the whole ranking."""
    for n in args.bots:
        cap = n * (n - 1) * args.rounds
        full = alone = wrong = verdicts = 0
        started = time.perf_counter()
        for seed in range(args.seeds):
            elo = np.random.default_rng(seed).normal(0.0, args.sd, n)
            ref = int(np.argsort(elo)[n // 2])
            against = Rule(rule.confidence, rule.resolution, references=(f"bot{ref}",))
            full += adaptive(elo, rule, seed, args.draws, cap=cap).games
            run = adaptive(elo, against, seed, args.draws, cap=cap)
            alone += run.games
            judged = verdict(run.post, against, [f"bot{i}" for i in range(n)])
            wrong, verdicts = wrong + reference_errors(elo, judged, ref, rule.resolution), verdicts + n - 1
        print(
            f"{n} bots, {args.seeds} seeds ({time.perf_counter() - started:.0f} s): every bot against the "
            f"median bot alone took {alone / args.seeds:,.0f} games, the whole ranking "
            f"{full / args.seeds:,.0f} "
            f"({alone / full:.0%}); verdicts wrong by more than the resolution: {wrong}/{verdicts}",
            flush=True,
        )


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a share k/n."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, nargs="+", default=[30, 100])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--sd", type=float, default=250.0)
    parser.add_argument("--draws", type=float, default=0.06)
    parser.add_argument("--rounds", type=int, default=100, help="rounds of the round robin compared")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--resolution", type=float, default=30.0)
    parser.add_argument("--looks", type=float, default=settle.LOOKS, help="the rule's margin (settle.LOOKS)")
    parser.add_argument(
        "--fields", nargs="*", choices=FIELDS, help="coverage on these fields (all four if none named)"
    )
    parser.add_argument("--reference", action="store_true", help="every bot against the median bot only")
    args = parser.parse_args()
    settle.LOOKS = args.looks
    rule = Rule(args.confidence, args.resolution)
    print(rule.describe(), f"(risks summed to at most (1 - confidence) / {settle.LOOKS:g})")
    if args.fields is not None or args.reference:
        print(f"seeds 0-{args.seeds - 1}, {args.draws:.0%} draws", flush=True)
        if args.fields is not None:
            args.fields = args.fields or list(FIELDS)
            fields(args, rule)
        else:
            references(args, rule)
        return
    for n in args.bots:
        rr_games = n * (n - 1) * args.rounds
        rows = []
        started = time.perf_counter()
        for seed in range(args.seeds):
            elo = np.random.default_rng(seed).normal(0.0, args.sd, n)
            run = adaptive(elo, rule, seed, args.draws, cap=rr_games)
            rr = round_robin(elo, args.rounds, args.draws, np.random.default_rng(20_000 + seed))
            rows.append((run.games, run.settled, *judge(elo, run.post, rule.resolution),
                         *judge(elo, rr, rule.resolution), run.risk))  # fmt: skip
        took = time.perf_counter() - started
        t = np.array(rows, dtype=float)
        games, settled = t[:, 0], t[:, 1].astype(bool)
        print(f"\n{n} bots, {args.seeds} seeds, Elo SD {args.sd:g}, {args.draws:.0%} draws ({took:.0f} s)")
        print(f"  round robin of {args.rounds} rounds: {rr_games:,} games")
        print(
            f"  adaptive: games until settled mean {games.mean():,.0f} (median {np.median(games):,.0f}, "
            f"max {games.max():,.0f}) = {games.mean() / rr_games:.1%} of the round robin; "
            f"settled {settled.sum()}/{len(settled)}"
        )
        print(
            f"  pairs > {rule.resolution:g} Elo apart ordered wrong: adaptive {t[:, 2].mean():.3%} "
            f"(runs with any: {(t[:, 2] > 0).mean():.0%}), round robin {t[:, 5].mean():.3%} "
            f"(runs with any: {(t[:, 5] > 0).mean():.0%})"
        )
        print(f"  top 3 exact: adaptive {t[:, 3].mean():.0%}, round robin {t[:, 6].mean():.0%}")
        wrong, runs = int(t[settled, 4].sum()), int(settled.sum())
        lo, hi = wilson(wrong, runs)
        print(
            f"  calibration: settled runs with a neighbour pair reversed by > {rule.resolution:g} Elo: "
            f"{wrong}/{runs} = {wrong / max(1, runs):.1%} (95% interval {lo:.1%}-{hi:.1%}; must be <= "
            f"{1 - rule.confidence:.0%}); stated by the rule at the stop: {t[settled, 8].mean():.1%}; "
            f"round robin's ranking: {t[:, 7].mean():.1%}"
        )


if __name__ == "__main__":
    main()
