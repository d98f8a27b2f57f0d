"""The bundled bots' ladder: random < greedy < alphabeta, each step's score with a 95% confidence interval.

    python benchmarks/strength.py [--games 40] [--move-time 100] [--rules kalah]

Games go through the real scheduler, referee and bot processes, half with each bot as south.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.game.rules import parse_rules  # noqa: E402
from arena.match.bots import load_bot  # noqa: E402
from arena.match.clock import TimeControl  # noqa: E402
from arena.match.record import GameRecord  # noqa: E402
from arena.match.referee import Limits  # noqa: E402
from arena.tournament.local import play_slots  # noqa: E402
from arena.tournament.schedule import Slot  # noqa: E402


def score_interval(points: float, games: int) -> tuple[float, float, float]:
    """Score fraction and its Wilson 95% interval (a draw counts half)."""
    z = 1.96
    p = points / games
    centre = (p + z * z / (2 * games)) / (1 + z * z / games)
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / (1 + z * z / games)
    return p, centre - half, centre + half


def match(weaker: str, stronger: str, games: int, spec: str, limits: Limits) -> tuple[float, int, int]:
    """Points of `stronger` against `weaker`, and how many games each side forfeited."""
    a, b = load_bot(ROOT / "bots" / f"{weaker}.py"), load_bot(ROOT / "bots" / f"{stronger}.py")
    slots = [Slot(1, str(i), a, b) if i % 2 else Slot(1, str(i), b, a) for i in range(games)]
    records: list[GameRecord] = []
    play_slots(slots, spec, limits, os.cpu_count() or 1, False, lambda slot, r: records.append(r))
    points = sum(1.0 if r.winner == stronger else 0.5 if r.winner is None else 0.0 for r in records)
    return points, sum(r.faulty == weaker for r in records), sum(r.faulty == stronger for r in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--move-time", type=int, default=100)
    parser.add_argument("--rules", default="kalah")
    args = parser.parse_args()
    spec = parse_rules(args.rules).spec
    limits = Limits(TimeControl(move_ms=args.move_time))
    print(f"{spec}, {args.games} games per step, {args.move_time} ms per move")
    for weaker, stronger in (("random", "greedy"), ("greedy", "alphabeta"), ("random", "alphabeta")):
        points, f_weak, f_strong = match(weaker, stronger, args.games, spec, limits)
        p, lo, hi = score_interval(points, args.games)
        print(
            f"{stronger:>9} vs {weaker:<9} {100 * p:5.1f}% (95% CI {100 * lo:5.1f}-{100 * hi:5.1f}%)"
            f"  forfeits: {f_weak}/{f_strong}"
        )


if __name__ == "__main__":
    main()
