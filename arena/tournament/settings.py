"""A tournament's settings: one frozen object for the rules, the clock, the schedule seed and the limits.

The defaults live where the things they set live (`TimeControl` for the clock, `Confinement` for the
limits); this object gathers them, is stored with the tournament for its whole life, and hands the referee
and the warden their parts. Confinement is on unless turned off. A setting is asked for by its name, the
clock's by theirs (`move_ms`, as the CLI's flags and `Tournament(..., move_ms=200)` ask).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.game.rules import MANKALAH, Kalah, Relay, parse_rules
from arena.match.bots import Bot
from arena.match.clock import Limits, TimeControl
from arena.match.record import GameRecord
from arena.sandbox import Capabilities, Confinement, capabilities, ungranted

if TYPE_CHECKING:
    from arena.tournament.backend import Backend

BENCH_AFTER = 3  # a run's default: games in a row without a first answer that bench a bot for the run
MANKALAH_BANK_MS = 3_600_000  # the Manchester engine's clock: an hour per agent per game (its agentTimeout)
CONFIDENCE = 0.95  # an adaptive run's stopping rule (settle.Rule): the ranking right at this confidence,
RESOLUTION = 30.0  # to within this many Elo
SPRT_ELO0, SPRT_ELO1 = 0.0, 10.0  # `arena sprt`'s hypotheses (sprt.Design): no better, better by 10 Elo
SPRT_ALPHA = SPRT_BETA = 0.05  # and its error rates
_LIMITS = Limits()
_CONFINEMENT = Confinement()
log = logging.getLogger("arena")

Progress = Callable[[int, int, GameRecord | None], None]  # (games done, games to play, the last record)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How one run plays, where `Settings` is what the tournament is for its whole life: declared once, from
    the CLI's flags (or a script) through `Tournament.run` and `sprt` to `scheduler.run`."""

    jobs: int | None = None  # games in parallel on this machine (default: one per core)
    fresh: bool = False  # a new bot process for every game
    bench_after: int = BENCH_AFTER  # games in a row without a first answer that bench a bot for the run
    progress: Progress | None = None  # told of every game as it is stored
    live: bool = False  # keep the page current while the games run
    on_page: Callable[[Path], None] | None = None  # called once the live page is first written (to open it)
    cluster: str | Backend | None = None  # a Dask scheduler's address or a back end; None: this machine


@dataclass(frozen=True, slots=True)
class Settings:
    """What a tournament (or a series of `arena play` games) is played under."""

    rules: str = "kalah"
    clock: TimeControl = TimeControl()
    seed: int = 1
    memory_mb: int = _CONFINEMENT.memory_mb
    max_procs: int = _CONFINEMENT.max_procs
    ponder: bool = _LIMITS.ponder
    sandbox: bool = True  # asked for; whether the machine had it is in the store's meta 'confinement'
    openings: int = (
        50  # openings generated from the seed (arena/game/openings.py); 0: every game from the start
    )
    book: str | None = None  # a file of openings instead (then `openings` is how many it holds)
    max_memory_mb: int | None = None  # the most memory a bot's bot.toml may ask for; None: memory_mb
    read_only: tuple[str, ...] = ()  # paths every bot may read (--read-only): the teacher's grant

    def __post_init__(self) -> None:
        object.__setattr__(self, "read_only", tuple(self.read_only))  # a stored list reads back as one
        if not isinstance(self.clock, TimeControl):  # a script's Settings("kalah", 1000) of before
            raise TypeError(
                f"the clock is a TimeControl, as in Settings(clock=TimeControl(move_ms=200)): {self.clock!r}"
            )

    def game_rules(self) -> Kalah | Relay:
        return parse_rules(self.rules)

    def limits(self) -> Limits:
        return Limits(self.clock, ponder=self.ponder)

    def named(self) -> dict[str, Any]:
        """Every setting by the name it is asked for (`NAMES`), the clock's beside the others."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "clock"}
        return {**own, **{name: getattr(self.clock, name) for name in CLOCK}}

    def to_dict(self) -> dict[str, Any]:
        """As the store keeps it (and the server is handed it): plain JSON values, the clock as one object."""
        return {**dataclasses.asdict(self), "read_only": list(self.read_only)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        """`to_dict`'s settings back. A store written before the clock was one record keeps the clock's
        fields beside the others (`move_ms` beside `seed`): read so too, so that its tournament reports,
        exports and resumes as it did."""
        own = {k: v for k, v in data.items() if k not in CLOCK and k != "clock"}
        clock = data.get("clock") or {k: v for k, v in data.items() if k in CLOCK}
        return cls(**own, clock=TimeControl(**clock))

    def confinement(self) -> Confinement:
        """The limits as asked; `confine.capabilities` then says which of them this machine can enforce."""
        return Confinement(
            self.memory_mb,
            self.max_procs,
            self.sandbox,
            max_memory_mb=self.max_memory_mb,
            read_only=self.read_only,
        )


CLOCK = tuple(f.name for f in dataclasses.fields(TimeControl))
NAMES = tuple(Settings().named())  # what may be asked for, by name


def resolve(base: Settings | None, asked: Mapping[str, object]) -> Settings:
    """`base` (a stored tournament's settings, or the defaults when None) with what was asked on top;
    None in `asked` means "not asked". For a new tournament: a time bank asked without a move time means no
    limit per move but the bank; the Manchester engine's rules without a time control asked bring that
    engine's clock (a bank of an hour per agent per game, no limit per move), as their agents expect."""
    changes: dict[str, Any] = {k: v for k, v in asked.items() if v is not None}
    unknown = set(changes) - set(NAMES)
    if unknown:
        raise TypeError(f"unknown setting {sorted(unknown)[0]!r}; known: {', '.join(NAMES)}")
    timed = {k: changes.pop(k) for k in CLOCK if k in changes}
    start = base or Settings()
    rules = parse_rules(str(changes.get("rules", start.rules)))  # RulesError now, not later
    if base is None and "move_ms" not in timed and "bank_ms" not in timed and rules == MANKALAH:
        timed["bank_ms"] = MANKALAH_BANK_MS
    if base is None and timed.get("bank_ms") is not None and "move_ms" not in timed:
        timed["move_ms"] = timed["bank_ms"]
    return dataclasses.replace(start, clock=dataclasses.replace(start.clock, **timed), **changes)


def confinement_here(settings: Settings) -> tuple[Confinement, Capabilities]:
    """The limits as this machine can enforce them; what it cannot is logged, never silently skipped."""
    conf, caps = capabilities(settings.confinement(), settings.sandbox)
    for note in caps.notes:
        log.warning(note)
    return conf, caps


def not_granted(bot: Bot, granted: Sequence[str]) -> str | None:
    """Why `bot` may not play under the teacher's read-only paths `granted` (None: it may): its bot.toml
    asks to read more. A bot's author asks; only the teacher grants."""
    missing = ungranted(bot.paths, granted)
    if not missing:
        return None
    flags = " ".join(f"--read-only {p}" for p in missing)
    return f"its bot.toml asks to read {', '.join(missing)}, which the teacher has not granted ({flags})"
