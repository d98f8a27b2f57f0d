"""How fast is the rules engine against OpenSpiel's C++ mancala (Kalah(6,4))? Prints plies per second for
both on the same random playouts, and for this tree's engine against a revision's (default: the engine
before issue 43's speed-up), all in the same run, turn about, and the ratios.

Run from the project root: ``nice -n 10 python3 benchmarks/rules_openspiel.py [--games N] [--against REV]``
(needs ``pip install open_spiel``; without it, the arena figures alone are printed and it says so).

A ply is what a search does per node it expands: the legal moves of the position, then the move played.
For arena: `legal_moves` and `play(pos, move, None, True)` (a move `legal_moves` gave, not checked again,
as the solver plays it); for OpenSpiel: `legal_actions()` and `apply_action()` on one state, through its
Python bindings (pyspiel), as a Python search would call it. The playouts are recorded first (uniform
random moves from a fixed seed) and replayed, so the timed loops measure the engines, not the random
numbers; before timing, every playout is replayed in both and their legal moves, side to move and result
are checked to agree. Time is this process's CPU time, the best of a few repeats.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from analysis import load  # noqa: E402  (a revision's rules engine, as a module of its own)

from arena.game.rules import Move, parse_rules  # noqa: E402

SPEC = "kalah,seeds=4"  # OpenSpiel's mancala: six pits, four seeds, Kalah's captures and extra turns
BEFORE = "ce48ff7"  # the engine before this session's speed-up
REPEATS = 5


def playouts(rules: Any, count: int, seed: int) -> list[list[Move]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pos, plies = rules.initial(), []
        while pos.ended is None:
            move = rng.choice(rules.legal_moves(pos))
            plies.append(move)
            pos = rules.play(pos, move)
        out.append(plies)
    return out


def arena_loop(rules: Any, games: list[list[Move]]) -> Callable[[], int]:
    def run() -> int:
        plies = 0
        for game in games:
            pos = rules.initial()
            for move in game:
                rules.legal_moves(pos)
                pos = rules.play(pos, move, None, True)
            plies += len(game)
        return plies

    return run


def openspiel_loop(game: Any, games: list[list[int]]) -> Callable[[], int]:
    def run() -> int:
        plies = 0
        for actions in games:
            state = game.new_initial_state()
            for action in actions:
                state.legal_actions()
                state.apply_action(action)
            plies += len(actions)
        return plies

    return run


def as_actions(rules: Any, games: list[list[Move]], pyspiel_game: Any) -> list[list[int]]:
    """The playouts as OpenSpiel's actions (South's pit p is action p, North's 7 + p), each checked to
    replay alike: the same legal moves, the same side to move, the same result."""
    out = []
    for plies in games:
        pos, state, actions = rules.initial(), pyspiel_game.new_initial_state(), []
        for move in plies:
            side = pos.to_move
            assert state.current_player() == side, "the same side to move"
            assert sorted(state.legal_actions()) == [p + 7 * side for p in rules.legal_moves(pos)]
            actions.append(move + 7 * side)
            state.apply_action(actions[-1])
            pos = rules.play(pos, move)
        assert state.is_terminal() and pos.ended is not None
        margin = pos.store(0) - pos.store(1)
        assert (state.returns()[0] > 0) == (margin > 0) and (state.returns()[0] < 0) == (margin < 0)
        out.append(actions)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--against", default=BEFORE)
    args = parser.parse_args()

    rules = parse_rules(SPEC)
    games = playouts(rules, args.games, args.seed)
    before_rules = load(args.against)[0].parse_rules(SPEC)
    loops: dict[str, Callable[[], int]] = {
        "arena": arena_loop(rules, games),
        f"arena at {args.against}": arena_loop(before_rules, games),
    }
    try:
        import pyspiel
    except ImportError:
        print("OpenSpiel is not installed here (pip install open_spiel): arena's figures alone")
    else:
        mancala = pyspiel.load_game("mancala")
        actions = as_actions(rules, games, mancala)
        loops["OpenSpiel mancala (C++, via pyspiel)"] = openspiel_loop(mancala, actions)
    best = {name: float("inf") for name in loops}
    plies = 0
    for _ in range(REPEATS):
        for name, loop in loops.items():  # turn about: a slower spell of the machine falls on all alike
            start = time.process_time()
            plies = loop()
            best[name] = min(best[name], time.process_time() - start)
    print(f"{SPEC}: {len(games)} random playouts, {plies} plies; one core, CPU time, best of {REPEATS}")
    rate = {name: plies / seconds for name, seconds in best.items()}
    for name, r in rate.items():
        print(f"  {name:40} {r / 1e3:8.0f} k plies/s")
    now = rate["arena"]
    for name, r in rate.items():
        if name != "arena":
            print(f"  arena / {name}: {now / r:.2f}x")


if __name__ == "__main__":
    main()
