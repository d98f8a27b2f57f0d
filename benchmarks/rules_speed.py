"""How fast is the rules engine? Prints positions per second for `Rules.play` and `Rules.legal_moves`.

Run from the project root: ``python3 benchmarks/rules_speed.py`` (about 10 s; ``--positions`` to change).

Absolute figures depend on the machine, so each one is also quoted as a ratio to a baseline measured in the
same run: building a tuple of the same size as the board (``tuple(list_of_2n+2_ints)``) in the same kind of
loop. "play ... 40.0 x tuple" reads: one move costs as much as building forty board tuples.

Positions come from random playouts (uniform over the legal moves, fixed seed), recorded first and then
replayed, so the timed loops measure the engine and not the random number generator. "playout" times the
whole loop a random bot runs: legal_moves, a random choice, play.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.game.rules import Kalah, Move, Position, parse_rules  # noqa: E402

SPECS = ("kalah", "kalah,pits=7,seeds=7,pie")
REPEATS = 5


def record(rules: Kalah, positions: int, seed: int) -> tuple[list[tuple[Position, Move]], int]:
    """`positions` (position, move) pairs from random playouts, and how many games that took."""
    rng = random.Random(seed)
    pairs: list[tuple[Position, Move]] = []
    games = 0
    while len(pairs) < positions:
        pos = rules.initial()
        games += 1
        while not pos.ended:
            move = rng.choice(rules.legal_moves(pos))
            pairs.append((pos, move))
            pos = rules.play(pos, move)
    return pairs[:positions], games


def best_times(repeats: int, runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    """The shortest of `repeats` timings of each run, in seconds (the least disturbed by the rest of the
    machine). The runs take turns, so a slow spell of the machine does not hit one figure only."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def measure(spec: str, positions: int, seed: int) -> dict[str, float]:
    rules = parse_rules(spec)
    pairs, games = record(rules, positions, seed)
    boards = [(list(pos.board), move) for pos, move in pairs]
    count = len(pairs)
    play = rules.play
    legal_moves = rules.legal_moves

    def run_play() -> None:
        for pos, move in pairs:
            play(pos, move)

    def run_legal() -> None:
        for pos, _move in pairs:
            legal_moves(pos)

    def run_tuple() -> None:
        make = tuple
        for board, _move in boards:
            make(board)

    def run_playout() -> None:
        rng = random.Random(seed)
        choice = rng.choice
        done = 0
        while done < count:
            pos = rules.initial()
            while not pos.ended:
                pos = play(pos, choice(legal_moves(pos)))
                done += 1

    runs = {"play": run_play, "legal_moves": run_legal, "playout": run_playout, "tuple": run_tuple}
    figures = {name: seconds / count for name, seconds in best_times(REPEATS, runs).items()}
    figures.update(games=games, positions=count)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=60_000, help="positions per rules spec")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)

    print(f"Python {sys.version.split()[0]}, {args.positions} positions per spec, best of {REPEATS}")
    header = f"{'rules':28} {'what':12} {'positions/s':>13} {'ns/position':>12} {'x tuple':>8}"
    print(header)
    print("-" * len(header))
    started = time.perf_counter()
    for spec in SPECS:
        figures = measure(spec, args.positions, args.seed)
        baseline = figures["tuple"]
        size = 2 * parse_rules(spec).pits + 2
        for what in ("play", "legal_moves", "playout", "tuple"):
            seconds = figures[what]
            label = f"tuple({size})" if what == "tuple" else what
            ratio = seconds / baseline
            print(f"{spec:28} {label:12} {1 / seconds:13,.0f} {seconds * 1e9:12.0f} {ratio:8.1f}")
        mean_length = figures["positions"] / figures["games"]
        print(f"{spec:28} (random games: {figures['games']:.0f}, {mean_length:.1f} moves each on average)")
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
