"""The game record: what one finished game was, defined once.

The referee returns it, `arena play --json` prints it, the store keeps one column per field
(arena/store/writer.py derives its table, its INSERT and its SELECT from `fields(GameRecord)`),
`arena export` writes those fields, and the report reads them back. A new field is added here and
nowhere else.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from arena.game.rules import SWAP, Move


class Reason(StrEnum):
    """How a game ended, as the record, the store, the export, the page and the END line word it."""

    NORMAL = "normal"  # the rules ended it: a side could not move
    EARLY = "early"  # a side had more than half the seeds: the result could no longer change
    TIMEOUT = "timeout"  # the faulty bot did not answer in time
    CRASH = "crash"  # its process ended, or broke a limit
    ILLEGAL = "illegal"  # it played a move the rules do not allow
    GARBLED = "garbled"  # it answered something that is not a move
    BENCHED = "benched"  # not played: the bot sat out the run after games without a first answer

    @property
    def forfeit(self) -> bool:
        """Whether a bot was at fault (every reason but the rules' own ends)."""
        return self not in (Reason.NORMAL, Reason.EARLY)


@dataclass(frozen=True, slots=True)
class GameRecord:
    """One finished game.

    `south`/`north` are the bots that started on each side; after a SWAP they own the other side, so
    `south_store`/`north_store` (the sides' final stores) belong to the bots the other way round: ask
    `store_of(name)` for a bot's own. `opening` holds the plies played before the bots took over (empty:
    the game began at the start position); `moves` are the bots' own, `move_ms` their times. `worker` says
    where it was played: "" on the machine that ran the tournament, else the cluster machine's name.
    """

    rules: str
    south: str
    north: str
    moves: tuple[Move, ...]
    south_store: int
    north_store: int
    winner: str | None
    reason: Reason
    faulty: str | None
    detail: str
    move_ms: tuple[float, ...]
    think_ms: dict[str, float] = field(default_factory=dict)  # total thinking time per bot
    moves_made: dict[str, int] = field(default_factory=dict)  # moves per bot (extra turns make them uneven)
    stderr: dict[str, str] = field(default_factory=dict)
    opening: tuple[Move, ...] = ()
    worker: str = ""  # the cluster machine that played it (its name); "" where the tournament ran
    sandboxed: bool | None = None  # whether its bots ran in the sandbox; None: not known (stored before)
    # What the faulty bot wrote that its fault quotes (its last stderr line, its answer), apart from
    # `detail`: a class's server shows another student the detail alone, never a byte of their bot's.
    said: str = ""
    # Positions a KGP agent gave no legal move for by `stop` (or `yield`), each played by a random legal move
    # as the course server plays them (arena/match/referee.py), per agent; {} for every other game.
    random_moves: dict[str, int] = field(default_factory=dict)

    @property
    def swapped(self) -> bool:
        return SWAP in self.moves

    @property
    def plies(self) -> tuple[Move, ...]:
        """Every ply of the game from the start position: the opening, then the bots' moves."""
        return self.opening + self.moves

    def told(self) -> str:
        """The fault's detail with the bot's own words: what its author and the teacher read."""
        return told(self.detail, self.said)

    def store_of(self, name: str) -> int:
        """The final store of bot `name`, whichever side it ended on: the one place the swap rule is read."""
        on_south = (name == self.south) != self.swapped
        return self.south_store if on_south else self.north_store

    def no_first_answer(self) -> str | None:
        """The bot that failed before its first move (a hang, a crash or a missing interpreter at start):
        what benches a bot for the rest of a run. None if the game had no such fault."""
        culprit = self.faulty
        if culprit and self.reason in (Reason.TIMEOUT, Reason.CRASH) and not self.moves_made.get(culprit, 0):
            return culprit
        return None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values: tuples become lists."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameRecord:
        """The inverse of `to_dict`; keys that are not record fields (a store's id, round) are ignored."""
        return cls(**{name: _typed(kind, data[name]) for name, kind in _fields() if name in data})


def told(detail: str, said: str) -> str:
    """A fault's detail in arena's words, then what the bot said that shows it."""
    return f"{detail}; {said}" if said else detail


def record_fields() -> list[tuple[str, Any]]:
    """(name, resolved type) of every field, in order: what the store and the export are built from."""
    return list(_fields())


@functools.cache
def _fields() -> tuple[tuple[str, Any], ...]:
    """Worked out once: typing.get_type_hints costs more than a game's replay (5.4 ms a game of a cluster
    run's audit, which rebuilt every record with it)."""
    hints = typing.get_type_hints(GameRecord)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(GameRecord))


def is_plain(kind: Any) -> bool:
    """Whether a field's type is one value (int, float, str, optionally None) rather than a JSON container."""
    args = set(typing.get_args(kind)) - {type(None)}
    union = typing.get_origin(kind) in (typing.Union, types.UnionType)
    return plain_type(kind) is not None or (union and all(plain_type(a) for a in args))


def plain_type(kind: Any) -> type | None:
    """int, float or str for a field of that type or of a subclass (`Reason`), else None."""
    if not isinstance(kind, type):
        return None
    return next((t for t in (int, float, str) if issubclass(kind, t)), None)


def encoder(kind: Any) -> Callable[[Any], Any]:
    """How a field of this type becomes one SQL/CSV cell: plain values as they are, containers as JSON
    text. Asked once per field, not once per game: working out a type costs more than encoding it."""
    return _same if is_plain(kind) else _json


def decoder(kind: Any) -> Callable[[Any], Any]:
    """The inverse of `encoder`, as plain values (lists, not tuples: `GameRecord.from_dict` types them)."""
    return _same if is_plain(kind) else json.loads


def _same(value: Any) -> Any:
    return value


def _json(value: Any) -> str:
    return json.dumps(_plain(value))


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _typed(kind: Any, value: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return kind(value)
    return tuple(value) if typing.get_origin(kind) is tuple else value
