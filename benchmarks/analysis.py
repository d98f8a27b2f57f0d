"""How fast is `arena analyse`? Prints the time to analyse a Kalah(6,4) game on one core under the default
budget (1 s a position, 10 s a game), and the number of seeds left in play up to which every value of
every game came out exact; then the same for a revision's solver and rules engine (default: the one
before issue 43), run in the same process, turn about, and the ratios.

Run from the project root: ``python3 benchmarks/analysis.py [--games N] [--against REV] [--profile]``.

The games are the same for both: moves chosen at random or (half the time) the one that banks most at
once, from a fixed seed. Time is this process's CPU time, so the other processes of a shared machine count
less than in wall time; the budget itself is wall time, as `arena analyse` has it. A second figure with no
clock in it: the CPU time of analysing the same games with every search cut at a fixed depth (the same
work for both), as a ratio. `--profile` prints where this tree's analysis spends its time.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
import random
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.game.analysis import Analysis, Budget, analyse, positions  # noqa: E402
from arena.game.rules import Move, Rules, parse_rules  # noqa: E402
from arena.game.solver import Solver  # noqa: E402

SPEC = "kalah,seeds=4"
BEFORE = "214c3d1"  # the rules engine and solver as they were before the analysis made them faster


def games(rules: Rules, count: int, seed: int) -> list[list[Move]]:
    rng = random.Random(seed)
    played = []
    for _ in range(count):
        pos, plies = rules.initial(), []
        while pos.ended is None:
            moves = rules.legal_moves(pos)
            if rng.random() < 0.5:
                side = pos.to_move
                move = max(moves, key=lambda m: (rules.play(pos, m).store(side), rng.random()))
            else:
                move = rng.choice(moves)
            plies.append(move)
            pos = rules.play(pos, move)
        played.append(plies)
    return played


def load(rev: str) -> tuple[types.ModuleType, types.ModuleType]:
    """The revision's rules engine and solver, as modules of their own (the solver reading that rules)."""
    folder = Path(tempfile.mkdtemp())
    modules = []
    for name in ("rules", "solver"):
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:arena/game/{name}.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        source = source.replace("from arena.game.rules import", "from rules_before import")
        path = folder / f"{name}_before.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"{name}_before", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"{name}_before"] = module
        spec.loader.exec_module(module)
        modules.append(module)
    return modules[0], modules[1]


def exact_up_to(rules: Rules, plies: list[Move], analysis: Analysis) -> int:
    """The most seeds in play such that every position with at most that many in play is exact."""
    worst = sum(rules.initial().board)
    for pos, value in zip(positions(rules, plies), analysis.values, strict=True):
        in_play = sum(pos.board) - pos.store(0) - pos.store(1)
        if not value.exact:
            worst = min(worst, in_play - 1)
    return worst


def run(
    make: Callable[[], Any], rules: Rules, played: list[list[Move]], budget: Budget
) -> tuple[float, list[int], float]:
    """(CPU seconds a game, each game's seeds in play up to which it is exact, wall seconds of the slowest
    game)."""
    cpu = 0.0
    exact = []
    slowest = 0.0
    for plies in played:
        start = time.process_time()
        analysis = analyse(rules, plies, 0, budget, solver=make())
        cpu += time.process_time() - start
        exact.append(exact_up_to(rules, plies, analysis))
        slowest = max(slowest, analysis.seconds)
    return cpu / len(played), exact, slowest


def solve_late(
    make: Callable[[], Any], rules: Rules, played: list[list[Move]], seeds: int
) -> tuple[float, float]:
    """(CPU seconds, nodes searched) a game to solve every position with at most `seeds` seeds in play, from
    the end back with one solver a game (as the analysis does), with no clock: the same work whatever the
    machine's load."""
    cpu = 0.0
    nodes = 0
    for plies in played:
        late = [
            p
            for p in positions(rules, plies)
            if p.ended is None and sum(p.board) - p.store(0) - p.store(1) <= seeds
        ]
        solver = make()
        start = time.process_time()
        for pos in reversed(late):
            found = solver.search(pos)
            assert found.exact
            nodes += found.nodes
        cpu += time.process_time() - start
    return cpu / len(played), nodes / len(played)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument(
        "--against",
        default=BEFORE,
        help=f"the revision to compare with (default: {BEFORE}, the engine and solver before issue 43)",
    )
    parser.add_argument("--seeds", type=int, default=22, help="seeds in play of the same-work comparison")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    rules = parse_rules(SPEC)
    played = games(rules, args.games, args.seed)
    rules_before, solver_before = load(args.against)
    old_rules = rules_before.parse_rules(SPEC)

    def now() -> Solver:
        return Solver(rules)

    def before() -> Any:
        return solver_before.Solver(old_rules)

    print(
        f"{SPEC}: {len(played)} games of {sum(map(len, played)) / len(played):.0f} plies on average; one core"
    )
    budget = Budget()
    results = {}
    for name, make in (("this tree", now), (args.against, before)):
        results[name] = run(make, rules, played, budget)
        cpu, exact, slowest = results[name]
        print(
            f"  {name:>10}: {cpu:5.2f} s CPU a game (slowest {slowest:.2f} s wall) under "
            f"{budget.position:g} s a position, {budget.game:g} s a game: every value exact up to "
            f"{min(exact)} seeds in play (each game: {', '.join(map(str, exact))})"
        )
    same = {
        name: solve_late(make, rules, played, args.seeds)
        for name, make in (("this tree", now), (args.against, before))
    }
    (cpu, nodes), (cpu_before, nodes_before) = same["this tree"], same[args.against]
    print(
        f"  same work (every position with at most {args.seeds} seeds in play solved exactly), a game: this "
        f"tree {cpu:.2f} s CPU and {nodes:,.0f} nodes, {args.against} {cpu_before:.2f} s and "
        f"{nodes_before:,.0f} nodes: {cpu_before / cpu:.2f} x as fast, {nodes_before / nodes:.2f} x fewer "
        f"nodes, {(nodes / cpu) / (nodes_before / cpu_before):.2f} x the nodes a second"
    )
    gained = min(results["this tree"][1]) - min(results[args.against][1])
    print(f"  exact within the budget: {gained:+d} seeds in play against {args.against}")

    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        solve_late(now, rules, played[:1], args.seeds)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
