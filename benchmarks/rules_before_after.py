"""Is `Rules.play` of this tree as fast as a revision's? Times both in one run, turn about, on the same
positions, and prints the ratio (this tree / the revision's): a change to the engine (such as the `trace`
that `explain` hands `play`) must not make the search bots' hot path slower.

Run from the project root: ``python3 benchmarks/rules_before_after.py [--against REV]`` (default: main).
The revision's arena/game/rules.py is read with git and loaded as a module of its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.game import rules as now  # noqa: E402
from benchmarks.rules_speed import record  # noqa: E402

SPECS = ("kalah", "kalah,pits=7,seeds=7,pie", "relay")
REPEATS = 25


def best_times(repeats: int, runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    """The least CPU time (this process's, so that other processes on a shared machine count less than
    in wall time) of `repeats` timings of each run, the runs taking turns."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - start)
    return best


def load_revision(rev: str):  # type: ignore[no-untyped-def]
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:arena/game/rules.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "rules_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rules_before", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["rules_before"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="main", help="the revision to compare with [default: main]")
    parser.add_argument("--positions", type=int, default=20_000)
    args = parser.parse_args(argv)
    before = load_revision(args.against)
    print(
        f"Python {sys.version.split()[0]}, {args.positions} positions per spec, least CPU time of {REPEATS}"
    )
    print(f"{'rules':28} {'ns/play here':>13} {f'ns/play {args.against}':>16} {'here / there':>13}")
    for spec in SPECS:
        mine, theirs = now.parse_rules(spec), before.parse_rules(spec)
        pairs, _ = record(mine, args.positions, 2024)
        their_pairs = [(before.Position(*_fields(pos)), move) for pos, move in pairs]

        best = compare(mine.play, pairs, theirs.play, their_pairs)
        here, there = (best[k] / len(pairs) * 1e9 for k in ("here", "there"))
        print(f"{spec:28} {here:13.0f} {there:16.0f} {here / there:13.3f}")
    return 0


def compare(mine: Callable, pairs: list, theirs: Callable, their_pairs: list) -> dict[str, float]:  # type: ignore[type-arg]
    def run_mine() -> None:
        for pos, move in pairs:
            mine(pos, move)

    def run_theirs() -> None:
        for pos, move in their_pairs:
            theirs(pos, move)

    return best_times(REPEATS, {"here": run_mine, "there": run_theirs})


def _fields(pos: now.Position) -> tuple[object, ...]:
    return (pos.board, pos.to_move, pos.turn, pos.ended, pos.can_swap)


if __name__ == "__main__":
    raise SystemExit(main())
