"""An adaptive run's wall time per game beside a round robin's, on the same field, measured side by side.

    python benchmarks/adaptive_overhead.py [--rules kalah,pits=4,seeds=3] [--move-time 2000] [--jobs N]
                                           [--pairs N]

The field of issue 30: 16 bots of graded strength, alphabeta at depths 1-5 and greedy playing a random pit
with probability 0.1-0.9 (g1 .. g9; seeded, so deterministic), with greedy itself and random. It runs the real
command, as a user does (with its progress, not --quiet): `arena run` until settled, then `arena run --rounds
R` of a fresh tournament with R rounds of about as many games; both write their pages. With --pairs N, N runs
of each, in the order A R R A A R ..., so that a load that drifts over the minutes weighs on both alike (other
work on this machine moved the ratio of a single pair from 0.8x to 1.3x). It prints each one's games, wall
times and time per game, and their ratio (the adaptive run's workers once ended every bot between batches:
2.0x), and whether the settled order agrees with the order by construction within each family (ab5 > ... >
ab1, greedy > g1 > ... > g9, where the ranking orders them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
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


def field(folder: Path) -> None:
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


def run(base: Path, name: str, *args: str) -> tuple[float, list[dict]]:
    """Wall time of `arena run` and the standings it leaves."""
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
    return wall, [json.loads(line) for line in rows.splitlines()]


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
    args = parser.parse_args()
    common = ["--rules", args.rules, "--move-time", args.move_time, "--jobs", args.jobs]
    walls: dict[str, list[float]] = {"a": [], "r": []}
    games: dict[str, list[int]] = {"a": [], "r": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        field(base / "bots")
        wall, board = run(base, "adaptive0", *common)
        walls["a"].append(wall)
        games["a"].append(sum(r["games"] for r in board) // 2)
        rounds = max(1, math.ceil(games["a"][0] / (16 * 15)))
        for k in range(2 * args.pairs - 1):
            kind = "ra"[(k // 2) % 2] if k else "r"
            extra = ("--rounds", str(rounds)) if kind == "r" else ()
            wall, again = run(base, f"{kind}{k}", *common, *extra)
            walls[kind].append(wall)
            # the same seed, but the alphabeta bots' clock may cut a search short under load: games differ
            games[kind].append(sum(r["games"] for r in again) // 2)
    per_a, per_r = sum(walls["a"]) / sum(games["a"]), sum(walls["r"]) / sum(games["r"])
    print(f"16 bots, {args.rules}, --move-time {args.move_time}, --jobs {args.jobs}, {args.pairs} of each")
    each = ", ".join(f"{g} games in {w:.0f} s" for g, w in zip(games["a"], walls["a"], strict=True))
    print(f"  adaptive until settled: {each} = {per_a * 1000:.0f} ms a game")
    each = ", ".join(f"{g} games in {w:.0f} s" for g, w in zip(games["r"], walls["r"], strict=True))
    print(f"  round robin of {rounds} rounds: {each} = {per_r * 1000:.0f} ms a game")
    print(f"  adaptive / round robin, wall time per game: {per_a / per_r:.2f}x")
    order = [r["bot"] for r in board]
    place = {r["bot"]: r["place"] for r in board}
    print("  settled order: " + ", ".join(f"{b} ({place[b]})" for b in order))
    for family in (["ab5", "ab4", "ab3", "ab2", "ab1"], ["greedy", *(f"g{k}" for k in range(1, 10))]):
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
