"""Golden playthroughs (as OpenSpiel's integration_tests/playthroughs): one game per variant, every state
written out in tests/playthroughs/, replayed by the rules engine and compared line by line. A change to
the rules that alters any state of these games shows up as a diff here, not as a surprise in a tournament.

A playthrough's moves were drawn at random from the legal ones (SWAP taken whenever offered, so the pie
rule is played); the test replays those moves and rebuilds every line. After a change meant to alter the
rules, write the files anew and read their diff:
    ARENA_SNAPSHOTS=write .venv/bin/python -m pytest -q tests/test_playthroughs.py
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from arena.game.rules import SIDE_NAMES, SWAP, Move, Position, Rules, parse_rules

FOLDER = Path(__file__).resolve().parent / "playthroughs"
VARIANTS = (
    "kalah",
    "kalah,pits=4,seeds=3,pie",
    "kalah,empty-capture",
    "kalah,end=mover-empty",
    "kalah,early",
    "kalah,no-first-extra",
    "mankalah",
    "relay",
    "relay,pie",
    "relay,chain",
)


def state(pos: Position) -> str:
    board = " ".join(map(str, pos.board))
    flags = f"to move {SIDE_NAMES[pos.to_move]}, turn {pos.turn}, can swap {pos.can_swap}, ended {pos.ended}"
    return f"board {board}; {flags}"


def playthrough(rules: Rules, moves: list[Move]) -> str:
    """The text of the game of `moves` under `rules`: every state, its legal moves and the move played."""
    lines = [f"rules {rules.spec}", ""]
    pos = rules.initial()
    for ply, move in enumerate(moves):
        lines += [f"ply {ply}", state(pos), "legal " + " ".join(map(str, rules.legal_moves(pos)))]
        lines.append(f"move {move}")
        pos = rules.play(pos, move)
    result = rules.result(pos)
    winner = "draw" if result.winner is None else SIDE_NAMES[result.winner]
    score = f"{result.south_store}-{result.north_store}"
    lines += ["end", state(pos), f"result {score} {winner} ({result.reason})"]
    return "\n".join(lines) + "\n"


def random_game(rules: Rules, seed: int) -> list[Move]:
    rng = random.Random(seed)
    pos, moves = rules.initial(), []
    while not rules.is_over(pos):
        legal = rules.legal_moves(pos)
        move = SWAP if SWAP in legal else rng.choice(legal)
        moves.append(move)
        pos = rules.play(pos, move)
    return moves


def recorded_moves(text: str) -> list[Move]:
    moves = [line.removeprefix("move ") for line in text.splitlines() if line.startswith("move ")]
    return [m if m == SWAP else int(m) for m in moves]


def path(spec: str) -> Path:
    return FOLDER / f"{spec.replace(',', '_').replace('=', '-')}.txt"


@pytest.mark.parametrize("spec", VARIANTS)
def test_the_rules_replay_the_golden_game(spec: str) -> None:
    rules = parse_rules(spec)
    if os.environ.get("ARENA_SNAPSHOTS") == "write":
        seed = 100 * VARIANTS.index(spec)
        while "early" in spec and "(early)" not in playthrough(rules, random_game(rules, seed)):
            seed += 1  # a game that ends early, for the option to be seen at work
        path(spec).write_text(playthrough(rules, random_game(rules, seed)), encoding="utf-8")
    golden = path(spec).read_text(encoding="utf-8")
    moves = recorded_moves(golden)
    assert len(moves) > 10 and rules.is_over(_final(rules, moves))
    for mine, theirs in zip(playthrough(rules, moves).splitlines(), golden.splitlines(), strict=True):
        assert mine == theirs


def test_the_playthroughs_cover_what_the_variants_do() -> None:
    """The golden games are worth keeping: together they take a swap, an extra turn, an early end and
    games won by each side."""
    texts = {spec: path(spec).read_text(encoding="utf-8") for spec in VARIANTS}
    assert "move SWAP" in texts["kalah,pits=4,seeds=3,pie"] and "move SWAP" in texts["relay,pie"]
    assert "(early)" in texts["kalah,early"]
    boards = [line for line in texts["kalah"].splitlines() if line.startswith("board")]
    movers = [line.split("to move ")[1][:5] for line in boards]
    assert any(a == b for a, b in zip(movers, movers[1:], strict=False))  # an extra turn
    winners = {t.splitlines()[-1].split()[2] for t in texts.values()}
    assert {"south", "north"} <= winners


def _final(rules: Rules, moves: list[Move]) -> Position:
    pos = rules.initial()
    for move in moves:
        pos = rules.play(pos, move)
    return pos
