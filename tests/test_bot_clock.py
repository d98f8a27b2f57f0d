"""The bundled search bots keep their clocks on a busy machine.

At the README's settings (100 ms a move, and the referee's 50 ms of transport margin) a bot that overruns
forfeits on time. The bots plan a quarter of the move time; what they cannot see on their own clock (being
woken, the reply reaching the referee) is a few milliseconds, and tens on a loaded machine. Here the
referee (this process), both bots and a neighbour that spins without end share one CPU, so that the bots get
about half of it, and they play a few confined games through arena's referee, as `arena play` does: every
move must stay under the move time, and under three quarters of it (a margin for a busier machine than
this test's). A search notices its deadline only when it looks at the clock: once every few hundred nodes
was 4 ms of search alone, several times that on a shared core; that is checked on a clock made of nodes.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from arena.api import Match
from arena.game import solver as solver_module
from arena.game.rules import SWAP, parse_rules
from arena.match.bots import load_bot
from arena.match.clock import TimeControl
from arena.match.record import GameRecord, Reason
from arena.tournament.settings import Settings

BOTS = Path(__file__).resolve().parent.parent / "bots"
SEARCH_BOTS = ("alphabeta", "solver")
MOVE_MS = 100  # the README's tournament
GAMES = 4  # two with each bot as south: 6-10 s
MARGIN = 0.75  # of the move time: each move must leave a quarter of it unused


@contextmanager
def on_one_cpu_with_a_busy_neighbour() -> Iterator[subprocess.Popen[bytes]]:
    """This process (and every process it starts from now on) and a process spinning on the CPU, all on one
    CPU; yields the spinner. Everything is put back, and the spinner killed, on the way out."""
    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    os.sched_setaffinity(0, {cpu})
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield spinner
    finally:
        spinner.kill()
        spinner.wait()
        os.sched_setaffinity(0, allowed)


def moves_by_bot(record: GameRecord) -> list[tuple[str, float]]:
    """(bot, the move's time as the referee measured it) for every move of the game, in order (the opening's
    plies were the referee's)."""
    rules = parse_rules(record.rules)
    pos, owners, out = rules.initial(), [record.south, record.north], []
    for ply in record.opening:
        pos = rules.play(pos, ply)
    for move, ms in zip(record.moves, record.move_ms, strict=True):
        out.append((owners[pos.to_move], ms))
        pos = rules.play(pos, move)
        if move == SWAP:
            owners.reverse()
    return out


def play_beside_a_busy_neighbour() -> list[GameRecord]:
    """GAMES games of the search bots at MOVE_MS, on one CPU with a spinning neighbour."""
    bots = [load_bot(BOTS / f"{name}.py") for name in SEARCH_BOTS]
    with on_one_cpu_with_a_busy_neighbour() as spinner:
        with Match(*bots, Settings(clock=TimeControl(move_ms=MOVE_MS))) as match:
            records = [match.play() for _ in range(GAMES)]
        assert spinner.poll() is None, "the neighbour spun all along"
    return records


@pytest.mark.slow
def test_search_bots_keep_their_clock_beside_a_busy_neighbour() -> None:
    records = play_beside_a_busy_neighbour()
    # The suite's other workers share this CPU too, beyond the neighbour: in one CI run a burst of theirs
    # held a move to 238 ms (a time forfeit) where the bot had planned 25. A burst does not come back to
    # the same move of a second set of games; a bot that overruns its clock does, so after a time forfeit
    # the games are played again, once, and the second set must have none.
    if any(r.reason == Reason.TIMEOUT for r in records):
        records = play_beside_a_busy_neighbour()
    started: set[str] = set()
    times, slow = [], []
    for game, record in enumerate(records, 1):
        assert record.faulty is None, f"game {game}: {record.faulty} {record.reason}: {record.detail}"
        for bot, ms in moves_by_bot(record):
            if bot not in started:  # the first move of a process has the startup allowance (Python, imports)
                started.add(bot)
                continue
            times.append(ms)
            if ms >= MARGIN * MOVE_MS:
                slow.append(f"game {game}: {bot} {ms:.0f} ms")
        assert record.moves_made[SEARCH_BOTS[0]] > 5 and record.moves_made[SEARCH_BOTS[1]] > 5
    assert started == set(SEARCH_BOTS)
    # No move over the move time (no forfeit, above); and at most one in twenty over three quarters of it: the
    # suite's other tests share this CPU too, and one of their bursts can hold a single move (86 ms at load 5)
    assert len(slow) <= len(times) // 20, (
        f"moves over {MARGIN * MOVE_MS:.0f} ms of {MOVE_MS}: {slow} of {len(times)}\n{records[-1].stderr}"
    )


# Looking at the clock: time counted in nodes (10 us each), so that the machine's speed does not matter.

NODE = 1e-5
DEADLINE_NODES = 1100  # not a multiple of a power of two: a rarer look would pass it by a lot
DEADLINE = DEADLINE_NODES * NODE
CHECKED_EVERY = 32  # nodes, at most


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_bot", BOTS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_alphabeta_stops_within_a_few_nodes_of_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    alphabeta = load("alphabeta")
    rules = parse_rules("kalah")
    search = alphabeta.Search(rules, DEADLINE)
    monkeypatch.setattr(alphabeta, "time", SimpleNamespace(perf_counter=lambda: search.nodes * NODE))
    with pytest.raises(alphabeta.OutOfTime):
        search.negamax(rules.initial(), 30, -2 * alphabeta.WIN, 2 * alphabeta.WIN, rules.total_seeds)
    assert DEADLINE_NODES < search.nodes <= DEADLINE_NODES + CHECKED_EVERY


def test_solver_bot_stops_within_a_few_nodes_of_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    bot = load("solver")
    monkeypatch.setattr(solver_module, "TICK", solver_module.TICK)  # put back afterwards
    player = bot.Player()  # sets the solver's clock for the bot's process
    rules = parse_rules("kalah")
    solver = solver_module.Solver(rules, player.max_entries)
    clock = SimpleNamespace(perf_counter=lambda: solver.nodes * NODE)
    monkeypatch.setattr(solver_module, "time", clock)
    found = solver.search(rules.initial(), DEADLINE)
    assert not found.exact and found.depth > 0
    assert DEADLINE_NODES < found.nodes <= DEADLINE_NODES + CHECKED_EVERY
