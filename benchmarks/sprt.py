"""The SPRT's error rates and games: pentanomial (game pairs) against trinomial (games), on the same results.

    python benchmarks/sprt.py [--runs 1000] [--elo0 0] [--elo1 10] [--alpha 0.05] [--beta 0.05]
                              [--bias 0 150] [--draws 0.06]

Simulated matches of a new version against the old, played as `arena sprt` plays them: pairs of games from
one opening, once from each side. An opening favours one side by an Elo drawn for it (SD `--bias`): in a
pair each bot gets that side once, so the bias cancels within the pair but not within a game; the games are
drawn from the Elo curve with `--draws` draws, at the Elo difference whose expected score over the openings
is the true Elo's (`game_elo`: the biases alone would pull it towards a half).
Each run's results are fed, pair by pair, to the real test
(`arena.stats.sprt.llr`) twice: as five pair counts and as three game counts, each stopping when its
LLR leaves the bounds. At true Elo = elo0, the share accepting H1 is the false-positive rate (must be <=
alpha); at elo1, the share accepting H1 is the power (must be >= 1 - beta). Average games of both tests
come from the same runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from arena.stats.sprt import MIN_COUNT, Design, llr

CHUNK = 256  # pairs simulated at once for every run still going


def game_odds(elo: np.ndarray, draws: float) -> np.ndarray:
    """(P(loss), P(draw), P(win)) of a game at these Elo differences, the expected score the curve's."""
    p = 1.0 / (1.0 + 10.0 ** (-elo / 400.0))
    d = np.minimum(draws, 2.0 * np.minimum(p, 1.0 - p))
    return np.stack([1.0 - p - d / 2.0, d, p - d / 2.0], axis=-1)


def outcome(odds: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Half points (0, 1, 2) drawn from `odds` (..., 3) by uniforms `u` (...)."""
    return (u[..., None] > np.cumsum(odds, axis=-1)[..., :-1]).sum(axis=-1)


def game_elo(elo: float, bias: float) -> float:
    """The Elo difference to give each game so that, over the openings' biases (SD `bias`), the expected
    score is that of `elo`: an opening's bias, once for each side, pulls a pair's score towards a half."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)  # for E over o ~ N(0, bias²)
    weights = weights / weights.sum()

    def mean_score(d: float) -> float:
        s = 1.0 / (1.0 + 10.0 ** (-(d + bias * nodes) / 400.0))
        return float((weights * s).sum())

    want = 1.0 / (1.0 + 10.0 ** (-elo / 400.0))
    lo, hi = -1000.0, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean_score(mid) < want else (lo, mid)
    return (lo + hi) / 2


def simulate(test: Design, elo: float, runs: int, bias: float, draws: float, seed: int, cap: int) -> dict:
    """Runs at true `elo`: per test kind, the decision (1 H1, 0 H0, -1 none by `cap` pairs) and games."""
    rng = np.random.default_rng(seed)
    elo = game_elo(elo, bias)
    penta = np.zeros((runs, 5))
    tri = np.zeros((runs, 3))
    result = {kind: np.full(runs, -1) for kind in ("penta", "tri")}
    games = {kind: np.zeros(runs, dtype=np.int64) for kind in ("penta", "tri")}
    done = 0
    while done < cap and ((result["penta"] < 0) | (result["tri"] < 0)).any():
        opening = rng.normal(0.0, bias, (runs, CHUNK)) if bias else np.zeros((runs, CHUNK))
        first = outcome(game_odds(elo + opening, draws), rng.random((runs, CHUNK)))  # new plays south
        second = outcome(game_odds(elo - opening, draws), rng.random((runs, CHUNK)))  # new plays north
        pairs = np.eye(5)[first + second].cumsum(axis=1) + penta[:, None, :]
        singles = (np.eye(3)[first] + np.eye(3)[second]).cumsum(axis=1) + tri[:, None, :]
        for kind, counts in (("penta", pairs), ("tri", singles)):
            ratio = llr(counts, test.elo0, test.elo1)  # (runs, CHUNK): after each pair
            crossed = (ratio >= test.upper) | (ratio <= test.lower)
            crossed &= counts.sum(axis=-1) >= MIN_COUNT  # as Status.decision
            first_cross = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
            fresh = (result[kind] < 0) & (first_cross >= 0)
            rows = np.flatnonzero(fresh)
            at = first_cross[rows]
            result[kind][rows] = (ratio[rows, at] >= test.upper).astype(int)
            games[kind][rows] = (done + at + 1) * 2
        penta, tri = pairs[:, -1, :], singles[:, -1, :]
        done += CHUNK
    return {"result": result, "games": games}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--elo0", type=float, default=0.0)
    parser.add_argument("--elo1", type=float, default=10.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--bias", type=float, nargs="+", default=[0.0, 150.0], help="opening bias SDs, Elo")
    parser.add_argument("--draws", type=float, default=0.06)
    parser.add_argument("--cap", type=int, default=200_000, help="pairs after which a run counts undecided")
    args = parser.parse_args()
    test = Design(args.elo0, args.elo1, args.alpha, args.beta)
    print(test.describe())
    for bias in args.bias:
        print(f"\nopening bias SD {bias:g} Elo, {args.draws:.0%} draws, {args.runs} runs at each true Elo")
        for elo, what in ((args.elo0, "false positives"), (args.elo1, "power")):
            started = time.perf_counter()
            sim = simulate(test, elo, args.runs, bias, args.draws, seed=int(1000 * bias + elo), cap=args.cap)
            took = time.perf_counter() - started
            limit = f"<= {test.alpha:.0%}" if elo == args.elo0 else f">= {1 - test.beta:.0%}"
            line = [f"  true Elo {elo:+g} ({took:.0f} s): {what} ({limit})"]
            for kind in ("penta", "tri"):
                res, games = sim["result"][kind], sim["games"][kind]
                share = (res == 1).mean()
                undecided = (res < 0).sum()
                se = np.sqrt(share * (1 - share) / len(res))
                line.append(
                    f"{kind}nomial {share:.1%} ± {1.96 * se:.1%}, {games[res >= 0].mean():,.0f} games on "
                    f"average" + (f" ({undecided} undecided)" if undecided else "")
                )
            ratio = sim["games"]["penta"].mean() / sim["games"]["tri"].mean()
            print(line[0])
            print("    " + "; ".join(line[1:]) + f"; pentanomial uses {ratio:.2f}x the trinomial's games")


if __name__ == "__main__":
    main()
