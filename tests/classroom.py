"""A class of thirty for the page's layout tests: a store of 30 bots with long, realistic names and two
rounds of random legal games of Kalah(6,6) played through the rules engine (a few forfeits), written by the
store's own writer. No bot runs: the page reads only the store, and a real run of 30 bots takes minutes."""

from __future__ import annotations

import random
from pathlib import Path

from arena.game.rules import parse_rules
from arena.match.bots import Bot
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.store.writer import Store
from arena.tournament.schedule import Slot
from arena.tournament.settings import Settings

NAMES = [
    "alphabeta_deep", "greedy", "random", "minimax_depth4_with_pruning", "mcts_1000_playouts",
    "stone_counter", "lisa_m", "bot_tom", "kalahkiller", "the_sower", "jonas_v3", "first_legal", "last_legal",
    "store_hugger", "capture_first", "extra_turn_lover", "negamax", "expectimax", "ida_star", "beam_search",
    "lucas_bot", "maria_final_FINAL", "n3ural", "heuristic_h2", "heuristic_h3", "monte", "sofia",
    "pit_picker", "edge_case", "zzz_sleepy",
]  # fmt: skip


def build(path: Path, rounds: int = 2, seed: int = 3, rules: str = "kalah") -> list[str]:
    """A store at `path` with the class's games; the names in order of strength (first strongest)."""
    rng = random.Random(seed)
    game = parse_rules(rules)
    field = [Bot(name, ("true",), path.parent, path.parent / f"{name}.py", f"{k:016x}") for k, name in
             enumerate(NAMES)]  # fmt: skip
    strength = {b.name: len(NAMES) - k for k, b in enumerate(field)}
    with Store(path) as store:
        store.fix_settings(Settings(rules, TimeControl(1000, 10_000), seed))
        store.set_current(field)
        for rnd in range(1, rounds + 1):
            for k, south in enumerate(field):
                for j, north in enumerate(field):
                    if south is north:
                        continue
                    store.add_game(
                        Slot(rnd, f"{k:03d}{j:03d}", south, north), _game(game, south, north, strength, rng)
                    )
    return list(NAMES)


def _game(rules, south: Bot, north: Bot, strength: dict[str, int], rng: random.Random) -> GameRecord:  # type: ignore[no-untyped-def]
    """A random legal game; the stronger bot picks its best-looking move more often. 3% end in a crash."""
    pos, moves = rules.initial(), []
    crash_at = rng.randint(3, 30) if rng.random() < 0.03 else None
    while not pos.ended and len(moves) != crash_at:
        side_bot = south if pos.to_move == 0 else north
        legal = rules.legal_moves(pos)
        if rng.random() < strength[side_bot.name] / 40:
            move = max(legal, key=lambda m: rules.play(pos, m).store(pos.to_move))
        else:
            move = rng.choice(legal)
        moves.append(move)
        pos = rules.play(pos, move)
    owners = (south.name, north.name)
    if not pos.ended:
        faulty, winner = owners[pos.to_move], owners[1 - pos.to_move]
        reason, detail, stderr = (
            "crash",
            "exited with status 1",
            {faulty: "Traceback ...\nIndexError: list index\n"},
        )
    else:
        outcome = rules.result(pos)
        faulty, reason, detail, stderr = None, "normal", "", {}
        winner = owners[outcome.winner] if outcome.winner is not None else None
    ms = tuple(round(rng.uniform(0.1, 30.0), 2) for _ in moves)
    return GameRecord(
        rules.spec, south.name, north.name, tuple(moves), pos.store(0), pos.store(1), winner, reason, faulty,
        detail, ms, {south.name: sum(ms[0::2]), north.name: sum(ms[1::2])},
        {south.name: (len(moves) + 1) // 2, north.name: len(moves) // 2}, stderr,
    )  # fmt: skip
