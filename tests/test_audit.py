"""A game a cluster worker returns is replayed by the rules engine against its slot before it is stored:
every way of forging one that the record can show is rejected, with what is wrong in words, and every game
the referee really plays passes (normal ends, forfeits, pie-rule swaps, openings)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.lab.audit import Forged, check, rebuild
from arena.match.bots import Bot
from arena.match.process import Fault
from arena.match.record import GameRecord, Reason
from arena.match.referee import Limits, play_game
from arena.tournament.schedule import Slot

SPEC = "kalah,pits=4,seeds=3"
PIE = "kalah,pits=4,seeds=3,pie"


def slot(tmp_path: Path, opening: tuple = (), protocol: str = "v1") -> Slot:
    ann, bob = (Bot(n, ("true",), tmp_path, tmp_path / n, n * 8, protocol=protocol) for n in ("ann", "bob"))
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
    mover, other = ("ann", "bob")[pos.to_move], ("bob", "ann")[pos.to_move]
    forfeit = dataclasses.replace(
        truncated,
        south_store=pos.store(SOUTH),
        north_store=pos.store(NORTH),
        winner=other,
        reason="timeout",
        faulty=mover,
        detail="no answer",
        moves_made=made,
    )
    check(slot(tmp_path), rules.spec, forfeit)
    with pytest.raises(Forged, match=f"{mover} forfeits, yet the winner is '{mover}'"):
        check(slot(tmp_path), rules.spec, dataclasses.replace(forfeit, winner=mover))
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


class Faulting:
    """A seat for the real referee (play_game) that plays random legal moves and fails where told: `when`
    is 'start' (told of the game), 'move' (asked for its `ply`-th move), 'told' (told of the game's
    `ply`-th move, as a Manchester agent is) or 'limits' (its limits checked after the last move), `how`
    the fault (ILLEGAL: it answers a pit the rules refuse)."""

    bot = None

    def __init__(
        self, name: str, seed: int, when: str = "", ply: int = 0, how: Reason = Reason.CRASH
    ) -> None:
        self.name, self.when, self.ply, self.how = name, when, ply, how
        self.rng = random.Random(seed)
        self.asked = self.told = 0

    def new_game(self, rules, side, limits) -> None:  # type: ignore[no-untyped-def]
        self.rules = rules
        if self.when == "start":
            raise Fault(self.how, "fails as it is told of the game")

    def move(self, pos, side, limits, opponent=None):  # type: ignore[no-untyped-def]
        self.asked += 1
        if self.when == "move" and self.asked == self.ply:
            if self.how == Reason.ILLEGAL:
                return 99, 1.0
            raise Fault(self.how, "fails on its turn")
        return self.rng.choice(self.rules.legal_moves(pos)), 1.0

    def observe(self, pos, move, mine, side) -> None:  # type: ignore[no-untyped-def]
        self.told += 1
        if self.when == "told" and self.told == self.ply:
            raise Fault(self.how, "fails as it is told of a move")

    def check_limits(self) -> None:
        if self.when == "limits":
            raise Fault(Reason.CRASH, "went over its memory limit")

    def diagnose(self, fault: Fault) -> Fault:
        return fault

    def end_game(self, *args: object) -> None: ...
    def stderr_tail(self) -> str:
        return ""

    def pause(self) -> None: ...
    def settle(self) -> None: ...
    def kill(self) -> None: ...
    def finish(self, limits: Limits) -> None: ...


# (which bot fails, when, at which ply, how, whether the referee could have charged the other bot instead)
REFEREED = [
    ("ann", "move", 2, Reason.TIMEOUT, False),
    ("bob", "move", 1, Reason.TIMEOUT, False),
    ("ann", "move", 1, Reason.TIMEOUT, True),  # no move made yet: as if it failed when told of the game
    ("ann", "move", 3, Reason.GARBLED, False),
    ("bob", "move", 2, Reason.ILLEGAL, False),
    ("ann", "move", 4, Reason.CRASH, False),
    ("ann", "start", 0, Reason.GARBLED, True),  # before the first move: both bots are told of the game
    ("bob", "start", 0, Reason.TIMEOUT, True),
    ("bob", "start", 0, Reason.CRASH, True),
    ("ann", "limits", 0, Reason.CRASH, True),  # its limits, checked for both after the last move
    ("bob", "told", 5, Reason.CRASH, True),  # a Manchester agent told of a move, whoever's turn is next
    ("ann", "told", 2, Reason.TIMEOUT, True),
]


@pytest.mark.parametrize(("faulty", "when", "ply", "how", "either"), REFEREED)
@pytest.mark.parametrize("seed", range(3))
def test_every_forfeit_the_referee_charges_passes_and_one_charged_to_the_other_bot_only_if_it_could_be(
    tmp_path: Path, seed: int, faulty: str, when: str, ply: int, how: Reason, either: bool
) -> None:
    rules = parse_rules(SPEC)
    seats = {n: Faulting(n, seed * 2 + i, *((when, ply, how) if n == faulty else ())) for i, n in
             enumerate(("ann", "bob"))}  # fmt: skip
    record = play_game(rules, seats["ann"], seats["bob"], Limits())
    assert (record.reason, record.faulty) == (how, faulty), record
    protocol = "mankalah" if when == "told" else "v1"
    check(slot(tmp_path, protocol=protocol), rules.spec, rebuild(record.to_dict()))
    other = "bob" if faulty == "ann" else "ann"
    blamed = dataclasses.replace(record, faulty=other, winner=faulty)
    if either:
        check(slot(tmp_path, protocol=protocol), rules.spec, blamed)
    else:
        with pytest.raises(Forged, match=f"charged to {other} after move \\d+, where it was {faulty}'s turn"):
            check(slot(tmp_path, protocol=protocol), rules.spec, blamed)
    if when == "told" and to_move(record) not in (faulty, None):
        # a bot of protocol v1 is never told of a move: its forfeit on the other's turn is forged
        with pytest.raises(Forged, match="the referee charges that only to the bot to move"):
            check(slot(tmp_path), rules.spec, record)


def to_move(record: GameRecord) -> str | None:
    """The bot to move where the game stopped (None: it was over)."""
    rules = parse_rules(record.rules)
    pos, by_side = rules.initial(), [record.south, record.north]
    for move in record.moves:
        pos = rules.play(pos, move)
        if move == SWAP:
            by_side.reverse()
    return None if rules.is_over(pos) else by_side[pos.to_move]


@pytest.mark.parametrize("reason", [Reason.TIMEOUT, Reason.GARBLED, Reason.ILLEGAL, Reason.CRASH])
@pytest.mark.parametrize("faulty", ["ann", "bob"])
def test_a_forfeit_after_the_game_was_over_is_only_a_crash(
    tmp_path: Path, reason: Reason, faulty: str
) -> None:
    """A finished game turned into a forfeit: only a crash found when the limits were checked can come after
    the last move; a timeout, a garbled or an illegal answer needs a move that was asked for."""
    record = random_game(SPEC, 7)
    other = "bob" if faulty == "ann" else "ann"
    forfeit = dataclasses.replace(record, reason=reason, faulty=faulty, winner=other, detail="late")
    if reason == Reason.CRASH:
        check(slot(tmp_path), parse_rules(SPEC).spec, forfeit)
    else:
        with pytest.raises(Forged, match=f"charged to {faulty} after move \\d+, where the game was over"):
            check(slot(tmp_path), parse_rules(SPEC).spec, forfeit)


@pytest.mark.parametrize("seed", range(3))
def test_an_illegal_move_forfeit_keeps_its_answer_and_one_the_rules_allow_there_is_forged(
    tmp_path: Path, seed: int
) -> None:
    """The record of an illegal move keeps the answer (`illegal`), which the replay finds illegal where the
    game stopped; a machine that says so of a legal move, or of none, or of a game that ended otherwise,
    forged it."""
    rules = parse_rules(SPEC)
    seats = {n: Faulting(n, seed * 2 + i, *(("move", 2, Reason.ILLEGAL) if n == "bob" else ())) for i, n in
             enumerate(("ann", "bob"))}  # fmt: skip
    record = play_game(rules, seats["ann"], seats["bob"], Limits())
    assert (record.reason, record.faulty, record.illegal) == (Reason.ILLEGAL, "bob", "99")
    check(slot(tmp_path), rules.spec, rebuild(record.to_dict()))
    pos = rules.initial()
    for move in record.plies:
        pos = rules.play(pos, move)
    for answer, why in ((str(rules.legal_moves(pos)[0]), "a legal move there"), ("", "no answer")):
        with pytest.raises(Forged, match=f"an illegal-move forfeit of bob after move \\d+, for .*{why}"):
            check(slot(tmp_path), rules.spec, dataclasses.replace(record, illegal=answer))
    with pytest.raises(Forged, match="an illegal answer '99' in a game that ended"):
        check(slot(tmp_path), rules.spec, dataclasses.replace(random_game(SPEC, 7), illegal="99"))
