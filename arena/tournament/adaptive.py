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
A settled pair is left alone: a bot that joins, changes or is withdrawn reopens only the pairs near it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena.tournament.posterior import Pairs, Posterior, posterior
from arena.tournament.ratings import ELO_PER_NAT
from arena.tournament.settle import Rule, Verdict, verdict

PLACEMENT = 4  # pairings of a new bot against a spread of opponents
EXPLORE = 0.1  # share of a batch on random pairs a few places apart
EXPLORE_REACH = 6  # how many places apart an exploring pair may be
WINDOW = 3  # pairings considered for information: bots at most this many places apart, and the open pairs


def batch_size(bots: int) -> int:
    """Pairings per batch (two games each): at least as many games as bots, so that with the next batch
    decided while this one plays, a machine with up to `bots` game slots stays busy."""
    return max(8, (bots + 1) // 2)


def plan(
    pairs: Pairs,
    rule: Rule,
    names: Sequence[str],
    seed: int,
    index: int,
    size: int,
    post: Posterior | None = None,
) -> tuple[tuple[int, int], ...]:
    """The pairings (a, b), a < b, of batch `index`: none when `pairs` already settle the ranking."""
    post = post or posterior(pairs)
    judged = verdict(post, rule, names)
    if judged.settled or pairs.n < 2:
        return ()
    rng = np.random.default_rng([seed, index])
    picks = _placement(pairs, judged, rng, size)
    explore = min(size - len(picks), int(EXPLORE * size + rng.random()))  # a tenth, rounded at random
    picks += _explore(judged, rng, explore)
    picks += _informative(post, judged, size - len(picks))
    return tuple((min(a, b), max(a, b)) for a, b in picks)


def _placement(pairs: Pairs, judged: Verdict, rng: np.random.Generator, size: int) -> list[tuple[int, int]]:
    """Pairings of the bots with fewer than PLACEMENT pairings, against opponents spread over the ranking
    (at evenly spaced places, from a seeded offset), fewest games first."""
    played = pairs.pairings().sum(axis=1)
    order = list(judged.order)
    picks: list[tuple[int, int]] = []
    extra = np.zeros_like(played)
    for bot in sorted(range(pairs.n), key=lambda b: (played[b], b)):
        others = [b for b in order if b != bot]
        needed = PLACEMENT - int(played[bot] + extra[bot])
        offset = rng.random()
        for k in range(max(0, needed)):
            if len(picks) >= size:
                return picks
            opponent = others[int((k + offset) * len(others) / PLACEMENT) % len(others)]
            picks.append((bot, opponent))
            extra[bot] += 1
            extra[opponent] += 1
    return picks


def _explore(judged: Verdict, rng: np.random.Generator, count: int) -> list[tuple[int, int]]:
    """Random pairs: a bot of an open pair against a bot at most EXPLORE_REACH places from it. Settled
    parts of the ranking are left alone."""
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
        picks.append((order[k], order[j]))
    return picks


def _informative(post: Posterior, judged: Verdict, count: int) -> list[tuple[int, int]]:
    """`count` pairings, greedily, each the one that most lowers the summed risk of the claims (the chance
    that each is the wrong way round by more than the resolution), to first order: a claim's risk
    Φ(-(m + r) / s) falls by φ(z) z / 2s² per unit of variance taken off its difference."""
    if count <= 0 or judged.settled:
        return []
    claims = [c for c in judged.claims if c.risk > 1e-12]
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
    order = judged.order
    candidates = {
        (min(order[k], order[j]), max(order[k], order[j]))
        for k in range(n)
        for j in range(k + 1, min(n, k + WINDOW + 1))
    }
    candidates |= {(min(c.upper, c.lower), max(c.upper, c.lower)) for c in judged.open}
    cand = np.array(sorted(candidates))
    a, b = cand[:, 0], cand[:, 1]
    p = 1.0 / (1.0 + np.exp(post.theta[b] - post.theta[a]))
    info = 2.0 * p * (1.0 - p) / post.dispersion  # of one pairing about theta[a] - theta[b]
    d = u @ cov  # (claims, n): Cov(claim's difference, each bot)
    picks = []
    for _ in range(count):
        denom = 1.0 / info + cov[a, a] + cov[b, b] - 2.0 * cov[a, b]
        gain = (weight[:, None] * (d[:, a] - d[:, b]) ** 2).sum(axis=0) / denom
        best = int(np.argmax(gain))
        x, y = int(a[best]), int(b[best])
        picks.append((x, y))
        cx = cov[:, x] - cov[:, y]
        dx = d[:, x] - d[:, y]
        cov = cov - np.outer(cx, cx) / denom[best]
        d = d - np.outer(dx, cx) / denom[best]
    return picks
