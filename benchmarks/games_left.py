"""How right the estimate of the games left is (`settle.Verdict.games_left`) that the live page and the
terminal show an adaptive run.

    python benchmarks/games_left.py [--bots 10 30] [--seeds 10] [--sd 250] [--draws 0.06]

Virtual bots of known Elo driven through the real plan, posterior and verdict, batch by batch as `arena run`
plays them (`schedule_efficiency.batches`: one batch in hand). At a tenth, a quarter, half and three
quarters of each run's games it takes the estimate the page showed then and the games the run still played,
and prints their ratio (played / estimated: 1 is right, 2 the estimate was half of what came) as median and
range over the seeds. The estimate is said as rough: it holds each open pair's margin as it stands.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from schedule_efficiency import batches  # noqa: E402

from arena.stats.settle import Rule, verdict  # noqa: E402

SHARES = (0.1, 0.25, 0.5, 0.75)


def trace(elo: np.ndarray, rule: Rule, seed: int, draws: float) -> tuple[int, list[tuple[int, int]]]:
    """The run's games, and (games so far, estimate of the games left) after each complete batch."""
    names = [f"bot{i}" for i in range(len(elo))]
    games, seen = 0, []
    for games, _, post in batches(elo, rule, seed, draws):
        seen.append((games, verdict(post, rule, names).games_left()))
    return games, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--sd", type=float, default=250.0)
    parser.add_argument("--draws", type=float, default=0.06)
    args = parser.parse_args()
    rule = Rule()
    for n in args.bots:
        ratios: dict[float, list[float]] = {share: [] for share in SHARES}
        totals = []
        for seed in range(args.seeds):
            elo = np.random.default_rng(seed).normal(0.0, args.sd, n)
            games, seen = trace(elo, rule, seed, args.draws)
            totals.append(games)
            for share in SHARES:
                at, estimate = min(seen, key=lambda t: abs(t[0] - share * games))
                if estimate:
                    ratios[share].append((games - at) / estimate)
        print(
            f"{n} bots, {args.seeds} seeds, Elo SD {args.sd:g}: "
            f"runs of {np.mean(totals):,.0f} games on average"
        )
        for share in SHARES:
            r = np.array(ratios[share])
            print(
                f"  at {share:.0%} of the run: games still played / estimated: median {np.median(r):.2f} "
                f"(range {r.min():.2f}-{r.max():.2f}, {len(r)} runs)"
            )


if __name__ == "__main__":
    main()
