"""An adaptive run's wall time per game beside a round robin's, on the same field, measured side by side.

    python benchmarks/adaptive_overhead.py [--rules kalah,pits=4,seeds=3] [--move-time 2000] [--jobs N]
                                           [--pairs N] [--bots N]

The field of issue 30: 16 bots of graded strength, alphabeta at depths 1-5 and greedy playing a random pit
with probability 0.1-0.9 (g1 .. g9; seeded, so deterministic), with greedy itself and random; `--bots N`
takes the first N of them in name order (`SPREAD`: 6 are ab1-ab5 and g1). It runs the real command, as a
user does (with its progress, not --quiet): `arena run` until settled, then `arena run --rounds
R` of a fresh tournament with R rounds of about as many games; both write their pages. With --pairs N, N runs
of each, in the order A R R A A R ..., so that a load that drifts over the minutes weighs on both alike (other
work on this machine moved the ratio of a single pair from 0.8x to 1.3x). It prints each one's games, wall
times and time per game, each pair's ratio (the k-th adaptive run against the k-th round robin) and their
median, the ratio of the pooled times (the adaptive run's workers once ended every bot between batches:
2.0x), the bots' moves and thinking a game of each kind (an adaptive run plays its close pairs most, whose
games may be longer: a difference of the games, not of the run), and whether the settled order agrees with
the order by construction within each family (ab5 > ... > ab1, greedy > g1 > ... > g9, of those in the
field, where the ranking orders them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NOISY = """
import random as _random

_rng = _random.Random({seed})
_best_move = best_move


def best_move(board, rules, first_move=False, chain=0):
    # with probability {p}, a random non-empty pit instead of the greedy one (only the turn's first move)
    if chain == 0 and _rng.random() < {p}:
        n = len(board) // 2 - 1
        return 0, _rng.choice([pit for pit in range(1, n + 1) if board[pit - 1]])
    return _best_move(board, rules, first_move, chain)

"""


# The field's bots in name order, as `--bots N` takes the first N: 6 are ab1-ab5 and g1 (issue 42's field of
# 6, whose close pairs play past the 50 openings of the book), 12 add g2-g7.
SPREAD = (
    *(f"ab{depth}" for depth in range(1, 6)),
    *(f"g{k}" for k in range(1, 10)),
    "greedy",
    "random",
)


def field(folder: Path, count: int = len(SPREAD)) -> None:
    """The first `count` bots of `SPREAD` in `folder`."""
    folder.mkdir(parents=True)
    alphabeta = (ROOT / "bots" / "alphabeta.py").read_text(encoding="utf-8")
    greedy = (ROOT / "bots" / "greedy.py").read_text(encoding="utf-8")
    for depth in range(1, 6):
        (folder / f"ab{depth}.py").write_text(
            f"import os\nos.environ['ARENA_DEPTH'] = '{depth}'\n" + alphabeta
        )
    head, tail = greedy.split('\nif __name__ == "__main__":')
    for k in range(1, 10):
        noisy = head + NOISY.format(seed=k, p=k / 10) + '\nif __name__ == "__main__":' + tail
        (folder / f"g{k}.py").write_text(noisy, encoding="utf-8")
    (folder / "greedy.py").write_text(greedy, encoding="utf-8")
    (folder / "random.py").write_text(
        (ROOT / "bots" / "random.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    for name in SPREAD[count:]:
        (folder / f"{name}.py").unlink()


@dataclass(frozen=True)
class Ran:
    """One `arena run`: its wall time, its games, and what the bots did in them."""

    wall: float
    games: int
    moves: int  # the bots' moves in all its games
    think: float  # the bots' thinking in all its games, in seconds (as the referee timed each move)
    board: list[dict]  # the standings it left

    @property
    def per_game(self) -> float:
        return self.wall / self.games


def run(base: Path, name: str, *args: str) -> Ran:
    """`arena run` as a user types it, timed, and the games and standings it leaves."""
    command = [
        sys.executable,
        "-m",
        "arena",
        "run",
        "--bots",
        str(base / "bots"),
        "--out",
        str(base / "reports"),
    ]
    started = time.perf_counter()
    # Not --quiet: the user's command, whose progress says after each batch what is still open.
    done = subprocess.run([*command, "--name", name, *args], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    export = [sys.executable, "-m", "arena", "export", "--out", str(base / "reports"), "--name", name]
    rows = subprocess.run([*export, "--standings"], capture_output=True, text=True, check=True).stdout
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    games = [json.loads(line) for line in lines]
    return Ran(
        wall,
        len(games),
        sum(len(g["moves"]) for g in games),
        sum(sum(g["think_ms"].values()) for g in games) / 1000,
        [json.loads(line) for line in rows.splitlines()],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="kalah,pits=4,seeds=3")
    parser.add_argument("--move-time", default="2000")
    parser.add_argument("--jobs", default=str(os.cpu_count() or 1))
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="runs of each kind, in the order A R R A A R ...: a load that drifts meets both alike",
    )
    parser.add_argument("--bots", type=int, default=len(SPREAD), help=f"the first N of {', '.join(SPREAD)}")
    args = parser.parse_args()
    if not 2 <= args.bots <= len(SPREAD):
        parser.error(f"--bots: 2 to {len(SPREAD)}")
    common = ["--rules", args.rules, "--move-time", args.move_time, "--jobs", args.jobs]
    runs: dict[str, list[Ran]] = {"a": [], "r": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        field(base / "bots", args.bots)
        runs["a"].append(run(base, "adaptive0", *common))
        rounds = max(1, math.ceil(runs["a"][0].games / (args.bots * (args.bots - 1))))
        for k in range(2 * args.pairs - 1):
            kind = "ra"[(k // 2) % 2] if k else "r"
            extra = ("--rounds", str(rounds)) if kind == "r" else ()
            # the same seed, but the alphabeta bots' clock may cut a search short under load: games differ
            runs[kind].append(run(base, f"{kind}{k}", *common, *extra))
    board = runs["a"][0].board
    print(
        f"{args.bots} bots, {args.rules}, --move-time {args.move_time}, --jobs {args.jobs}, "
        f"{args.pairs} of each"
    )
    for kind, what in (("a", "adaptive until settled"), ("r", f"round robin of {rounds} rounds")):
        each = ", ".join(f"{r.games} games in {r.wall:.1f} s" for r in runs[kind])
        wall, games = sum(r.wall for r in runs[kind]), sum(r.games for r in runs[kind])
        moves, think = sum(r.moves for r in runs[kind]), sum(r.think for r in runs[kind])
        print(f"  {what}: {each} = {wall / games * 1000:.0f} ms a game")
        print(f"    {moves / games:.1f} moves and {think / games * 1000:.0f} ms of the bots' thinking a game")
    ratios = [a.per_game / r.per_game for a, r in zip(runs["a"], runs["r"], strict=True)]
    print(
        "  adaptive / round robin, wall time per game, each pair: " + ", ".join(f"{x:.2f}x" for x in ratios)
    )
    print(f"    median {statistics.median(ratios):.2f}x", end="")
    pooled = [sum(r.wall for r in runs[k]) / sum(r.games for r in runs[k]) for k in "ar"]
    print(f"; pooled {pooled[0] / pooled[1]:.2f}x")
    order = [r["bot"] for r in board]
    place = {r["bot"]: r["place"] for r in board}
    print("  settled order: " + ", ".join(f"{b} ({place[b]})" for b in order))
    for whole in (["ab5", "ab4", "ab3", "ab2", "ab1"], ["greedy", *(f"g{k}" for k in range(1, 10))]):
        family = [b for b in whole if place.get(b)]  # in the field, and placed
        firsts = [int(place[b].split("-")[0]) for b in family]
        lasts = [int(place[b].split("-")[-1]) for b in family]
        wrong = [
            f"{family[i]} below {family[j]}"
            for i in range(len(family))
            for j in range(i + 1, len(family))
            if firsts[i] > lasts[j]  # surely below a bot weaker by construction
        ]
        print(
            f"  {family[0]}..{family[-1]}: "
            + ("agrees with the construction" if not wrong else ", ".join(wrong))
        )


if __name__ == "__main__":
    main()
