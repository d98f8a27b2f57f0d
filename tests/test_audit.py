"""A game a cluster worker returns is replayed by the rules engine against its slot before it is stored:
every way of forging one that the record can show is rejected, with what is wrong in words, and every game
the referee really plays passes (normal ends, forfeits, pie-rule swaps, openings)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.match.bots import Bot
from arena.match.record import GameRecord
from arena.tournament.audit import Forged, check, rebuild
from arena.tournament.schedule import Slot

SPEC = "kalah,pits=4,seeds=3"
PIE = "kalah,pits=4,seeds=3,pie"


def slot(tmp_path: Path, opening: tuple = ()) -> Slot:
    ann, bob = (Bot(n, ("true",), tmp_path, tmp_path / n, n * 8) for n in ("ann", "bob"))
    return Slot(1, "00", ann, bob, opening)


def random_game(spec: str, seed: int, opening: tuple = (), swap: bool = False) -> GameRecord:
    """A whole legal game of random moves, as the referee would record it."""
    rules = parse_rules(spec)
    rng = random.Random(seed)
    pos = rules.initial()
    for ply in opening:
        pos = rules.play(pos, ply)
    by_side, made, moves = ["ann", "bob"], {"ann": 0, "bob": 0}, []
    while not rules.is_over(pos):
        legal = rules.legal_moves(pos)
        move = SWAP if swap and SWAP in legal else rng.choice(legal)
        made[by_side[pos.to_move]] += 1
        pos = rules.play(pos, move)
        moves.append(move)
        if move == SWAP:
            by_side.reverse()
    outcome = rules.result(pos)
    winner = None if outcome.winner is None else by_side[outcome.winner]
    return GameRecord(
        rules=rules.spec,
        south="ann",
        north="bob",
        moves=tuple(moves),
        south_store=pos.store(SOUTH),
        north_store=pos.store(NORTH),
        winner=winner,
        reason=outcome.reason,
        faulty=None,
        detail="",
        move_ms=(1.0,) * len(moves),
        think_ms={"ann": 1.0, "bob": 1.0},
        moves_made=made,
        stderr={"ann": "", "bob": ""},
        opening=opening,
    )


@pytest.mark.parametrize("seed", range(20))
def test_real_games_pass(tmp_path: Path, seed: int) -> None:
    record = random_game(SPEC, seed)
    check(slot(tmp_path), parse_rules(SPEC).spec, rebuild(record.to_dict()))
    swapped = random_game(PIE, seed, swap=True)
    assert swapped.swapped
    check(slot(tmp_path), parse_rules(PIE).spec, rebuild(swapped.to_dict()))
    opened = random_game(SPEC, seed, opening=(1,))
    check(slot(tmp_path, (1,)), parse_rules(SPEC).spec, opened)


def test_a_forfeit_passes_when_its_position_is_the_moves(tmp_path: Path) -> None:
    record = random_game(SPEC, 1)
    cut = len(record.moves) // 2
    made = {"ann": 0, "bob": 0}
    truncated = dataclasses.replace(record, moves=record.moves[:cut], move_ms=record.move_ms[:cut])
    rules = parse_rules(SPEC)
    pos = rules.initial()
    for m in truncated.moves:
        made[("ann", "bob")[pos.to_move]] += 1
        pos = rules.play(pos, m)
    forfeit = dataclasses.replace(
        truncated,
        south_store=pos.store(SOUTH),
        north_store=pos.store(NORTH),
        winner="bob",
        reason="timeout",
        faulty="ann",
        detail="no answer",
        moves_made=made,
    )
    check(slot(tmp_path), rules.spec, forfeit)
    with pytest.raises(Forged, match="ann forfeits, yet the winner is 'ann'"):
        check(slot(tmp_path), rules.spec, dataclasses.replace(forfeit, winner="ann"))
    with pytest.raises(Forged, match="a timeout forfeit charged to 'carl'"):
        check(slot(tmp_path), rules.spec, dataclasses.replace(forfeit, faulty="carl"))


def forged(record: GameRecord) -> list[tuple[str, GameRecord]]:
    """(what the check must say, the record changed so)."""
    loser = "bob" if record.winner == "ann" else "ann"
    last = record.moves[-1]
    other_pit = next(p for p in range(1, 5) if p != last)
    replace = dataclasses.replace
    after_end = replace(record, moves=(*record.moves, 1), move_ms=(*record.move_ms, 1.0))
    other_last = replace(record, moves=(*record.moves[:-1], other_pit))
    nothing = {"moves": (), "move_ms": (), "south_store": 0, "north_store": 0}
    return [
        ("not those its moves give", replace(record, south_store=record.south_store + 1)),
        ("won by", replace(record, winner=loser)),
        ("is not one a game can end with", replace(record, reason="benched")),
        ("its bots are|one entry for each of its two bots", replace(record, north="carl")),
        ("played under", replace(record, rules="kalah")),
        ("opening", replace(record, opening=(2,))),
        ("moves but", replace(record, move_ms=record.move_ms[:-1])),
        ("comes after the game was over", after_end),
        ("illegal|not those its moves give|is not over", other_last),
        ("moves per bot", replace(record, moves_made={"ann": 0, "bob": 0})),
        ("not over", replace(record, moves_made={"ann": 0, "bob": 0}, **nothing)),
    ]


@pytest.mark.parametrize("case", range(11))
def test_forged_games_are_rejected(tmp_path: Path, case: int) -> None:
    record = random_game(SPEC, 3)
    assert record.winner is not None
    match, bad = forged(record)[case]
    with pytest.raises(Forged, match=match):
        check(slot(tmp_path), parse_rules(SPEC).spec, rebuild(bad.to_dict()))


@pytest.mark.parametrize(
    "change",
    [
        {"moves": ["1; import os"]},
        {"south_store": "7"},
        {"winner": 3},
        {"stderr": {"ann": ""}},
        {"think_ms": {"ann": "x", "bob": 1}},
        {"moves": {"__class__": 1}},
    ],
)
def test_data_that_is_not_a_record_is_rejected(change: dict) -> None:
    data = {**random_game(SPEC, 5).to_dict(), **change}
    with pytest.raises(Forged):
        rebuild(data)


def test_a_record_without_its_fields_is_rejected() -> None:
    with pytest.raises(Forged, match="not a game record"):
        rebuild({"rules": SPEC})
    with pytest.raises(Forged, match="an object of fields"):
        rebuild([1, 2])
