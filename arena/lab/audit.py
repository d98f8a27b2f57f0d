"""Checking a game a cluster worker returned before it is stored: the rules engine replays it on its slot.

A worker is another machine, perhaps not an honest one. What it returns is plain data (a record's fields);
the record is rebuilt here and replayed: the bots and the opening must be the slot's, every move legal in
turn, the final stores those the moves give, and the winner, the reason and the fault consistent with how
the game ended. What a replay cannot tell is whether the moves are the ones the bots chose: a machine that
plays a bot's moves for it is caught only by how its games disagree with the others' (the page's residual
per machine); nor whether a timeout, a crash or a garbled answer happened, nor whether the bot gave the
illegal answer an illegal-move forfeit keeps (the replay checks only that it is illegal where the game
stopped), which a second machine confirms before such a forfeit counts (arena/lab/confirm.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.game.rules import NORTH, SOUTH, SWAP, Rules, parse_rules
from arena.match.record import GameRecord, Reason
from arena.tournament.schedule import Slot

# What a worker's game can be forfeited for (a benched game is the coordinator's, never played).
_PLAYED_FORFEITS = (Reason.TIMEOUT, Reason.CRASH, Reason.ILLEGAL, Reason.GARBLED)


class Forged(ValueError):
    """A returned game that its slot and the rules do not allow; the message says what is wrong with it."""


def rebuild(data: Any, **ours: Any) -> GameRecord:
    """A GameRecord from a worker's plain data, every field of its type (Forged if it is not one); the
    fields `ours` are this side's, put in over the worker's (where it was played, as the machine was
    checked), rather than with a copy of the record after."""
    if not isinstance(data, Mapping):
        raise Forged(f"a record is an object of fields, not {type(data).__name__}")
    try:
        record = GameRecord.from_dict({**data, **ours})
    except (TypeError, ValueError) as e:
        raise Forged(f"not a game record: {e}") from None
    plain = {
        "rules": str,
        "south": str,
        "north": str,
        "south_store": int,
        "north_store": int,
        "reason": Reason,
        "detail": str,
        "said": str,
        "worker": str,
    }
    for name, kind in plain.items():
        if type(getattr(record, name)) is not kind:
            raise Forged(f"its {name} is not a {kind.__name__}")
    if record.winner is not None and type(record.winner) is not str:
        raise Forged("its winner is not a bot's name")
    if record.faulty is not None and type(record.faulty) is not str:
        raise Forged("its faulty is not a bot's name")
    if not all(type(m) is int or m == SWAP for m in record.moves + record.opening):
        raise Forged("a move is neither a pit number nor SWAP")
    if not all(type(ms) in (int, float) for ms in record.move_ms):
        raise Forged("a move time is not a number")
    for name in ("think_ms", "moves_made", "stderr"):
        value = getattr(record, name)
        if not isinstance(value, dict) or set(value) != {record.south, record.north}:
            raise Forged(f"its {name} is not one entry for each of its two bots")
    if record.sandboxed is not None and type(record.sandboxed) is not bool:
        raise Forged("its sandboxed is neither true nor false")
    if not all(type(v) is str for v in record.stderr.values()):
        raise Forged("a stderr is not text")
    if not all(type(v) in (int, float) for v in record.think_ms.values()):
        raise Forged("a thinking time is not a number")
    return record


def check(slot: Slot, spec: str, record: GameRecord, rules: Rules | None = None) -> None:
    """Raise Forged unless `record` is a game its slot could have had under the rules `spec` (`rules`, its
    parse, given by a caller that checks many games: one parse for all)."""
    if record.rules != spec:
        raise Forged(f"it was played under {record.rules!r}, not the tournament's {spec!r}")
    if (record.south, record.north) != (slot.south.name, slot.north.name):
        raise Forged(
            f"its bots are {record.south} (south) and {record.north}, not {slot.south.name} and "
            f"{slot.north.name}"
        )
    if record.opening != tuple(slot.opening):
        raise Forged(f"its opening {list(record.opening)} is not the slot's {list(slot.opening)}")
    if len(record.move_ms) != len(record.moves):
        raise Forged(f"{len(record.moves)} moves but {len(record.move_ms)} move times")
    rules = rules or parse_rules(spec)
    pos = rules.initial()
    for ply in record.opening:
        pos = rules.play(pos, ply)  # the slot's own opening: legal by construction
    by_side = [record.south, record.north]
    made = {record.south: 0, record.north: 0}
    for n, move in enumerate(record.moves, 1):
        if rules.is_over(pos):
            raise Forged(f"move {n} ({move}) comes after the game was over")
        mover = by_side[pos.to_move]
        try:
            pos = rules.play(pos, move)
        except ValueError as e:
            raise Forged(f"move {n} ({move}) by {mover} is illegal: {e}") from None
        made[mover] += 1
        if move == SWAP:
            by_side.reverse()
    if (record.south_store, record.north_store) != (pos.store(SOUTH), pos.store(NORTH)):
        raise Forged(
            f"its stores {record.south_store}-{record.north_store} are not those its moves give, "
            f"{pos.store(SOUTH)}-{pos.store(NORTH)}"
        )
    if dict(record.moves_made) != made:
        raise Forged(f"its moves per bot {dict(record.moves_made)} are not those its moves give, {made}")
    if record.reason in _PLAYED_FORFEITS:
        if record.faulty not in (record.south, record.north):
            raise Forged(f"a {record.reason} forfeit charged to {record.faulty!r}, not one of its bots")
        other = record.north if record.faulty == record.south else record.south
        if record.winner != other:
            raise Forged(f"{record.faulty} forfeits, yet the winner is {record.winner!r}")
        turn = None if rules.is_over(pos) else by_side[pos.to_move]
        bots = {slot.south.name: slot.south, slot.north.name: slot.north}
        if not _chargeable(record, turn, bots[record.faulty].protocol):
            raise Forged(_not_chargeable(record, turn))
        if record.reason == Reason.ILLEGAL and not _illegal(rules, pos, record.illegal):
            raise Forged(
                f"an illegal-move forfeit of {record.faulty} after move {len(record.moves)}, for "
                f"{record.illegal!r}: " + ("no answer" if not record.illegal else "a legal move there")
            )
        return
    if record.illegal:
        raise Forged(f"an illegal answer {record.illegal!r} in a game that ended {record.reason}")
    if record.reason not in (Reason.NORMAL, Reason.EARLY):
        raise Forged(f"its reason {record.reason!r} is not one a game can end with")
    if not rules.is_over(pos):
        raise Forged(f"it ended '{record.reason}' in a position that is not over")
    outcome = rules.result(pos)
    winner = None if outcome.winner is None else by_side[outcome.winner]
    if (record.reason, record.winner, record.faulty) != (outcome.reason, winner, None):
        raise Forged(
            f"it says {record.reason}, won by {record.winner!r}; its moves end {outcome.reason}, "
            f"won by {winner!r}"
        )


def _illegal(rules: Rules, pos: Any, answer: str) -> bool:
    """Whether `answer` (a record's `illegal`: a pit number, or a word) is a move the rules refuse in
    `pos`: the part of an illegal-move forfeit a replay can check (that the bot gave it, a second machine
    confirms, arena/lab/confirm.py)."""
    if not answer:
        return False
    move: int | str = int(answer) if answer.lstrip("-").isdigit() and len(answer) < 20 else answer
    try:
        rules.play(pos, move)
    except ValueError:
        return True
    return False


def _chargeable(record: GameRecord, mover: str | None, protocol: str) -> bool:
    """Whether the referee (arena/match/referee.py, play_game) can charge this forfeit to `record.faulty`,
    `mover` being the bot to move where the game stopped (None: the game was over). A bot is asked for a
    move only on its turn: an illegal move is the mover's, and so is a timeout or a garbled answer once the
    game is under way. Before the first move both bots are told of the game (either may time out, answer
    unasked or be gone). A crash of the bot waiting is charged only when its limits are checked, after
    the last move, or, for a bot of the Manchester protocol, which is told of every move, when that
    telling fails (a crash, or its input left unread: a timeout)."""
    if record.reason == Reason.ILLEGAL:
        return record.faulty == mover
    if not record.moves or record.faulty == mover:
        return True
    told = protocol == "mankalah" and record.reason in (Reason.CRASH, Reason.TIMEOUT)
    return told or (record.reason == Reason.CRASH and mover is None)


def _not_chargeable(record: GameRecord, mover: str | None) -> str:
    """Why a forfeit could not have been charged so, in words."""
    where = f"it was {mover}'s turn" if mover else "the game was over"
    return (
        f"a {record.reason} forfeit charged to {record.faulty} after move {len(record.moves)}, where "
        f"{where}: the referee charges that only to the bot to move"
    )
