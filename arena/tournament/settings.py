"""A tournament's settings: one frozen object for the rules, the clock, the schedule seed and the limits.

The defaults live where the things they set live (`Limits` for the clock, `Confinement` for the limits);
this object gathers them, is stored with the tournament for its whole life, and hands the referee and the
warden their parts. Confinement is on unless turned off.
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
from arena.match.clock import Limits
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
    move_ms: int = _LIMITS.move_ms
    startup_ms: int = _LIMITS.startup_ms
    seed: int = 1
    memory_mb: int = _CONFINEMENT.memory_mb
    max_procs: int = _CONFINEMENT.max_procs
    ponder: bool = _LIMITS.ponder
    sandbox: bool = True  # asked for; whether the machine had it is in the store's meta 'confinement'
    bank_ms: int | None = _LIMITS.bank_ms  # time bank per bot per game (chess clock); None: move_ms only
    openings: int = (
        50  # openings generated from the seed (arena/game/openings.py); 0: every game from the start
    )
    book: str | None = None  # a file of openings instead (then `openings` is how many it holds)
    max_memory_mb: int | None = None  # the most memory a bot's bot.toml may ask for; None: memory_mb
    read_only: tuple[str, ...] = ()  # paths every bot may read (--read-only): the teacher's grant

    def __post_init__(self) -> None:
        object.__setattr__(self, "read_only", tuple(self.read_only))  # a stored list reads back as one

    def game_rules(self) -> Kalah | Relay:
        return parse_rules(self.rules)

    def limits(self) -> Limits:
        return Limits(
            move_ms=self.move_ms, startup_ms=self.startup_ms, ponder=self.ponder, bank_ms=self.bank_ms
        )

    def confinement(self) -> Confinement:
        """The limits as asked; `confine.capabilities` then says which of them this machine can enforce."""
        return Confinement(
            self.memory_mb,
            self.max_procs,
            self.sandbox,
            max_memory_mb=self.max_memory_mb,
            read_only=self.read_only,
        )


FIELDS = tuple(f.name for f in dataclasses.fields(Settings))


def resolve(base: Settings | None, asked: Mapping[str, object]) -> Settings:
    """`base` (a stored tournament's settings, or the defaults when None) with what was asked on top;
    None in `asked` means "not asked". For a new tournament: a time bank asked without a move time means no
    limit per move but the bank; the Manchester engine's rules without a time control asked bring that
    engine's clock (a bank of an hour per agent per game, no limit per move), as their agents expect."""
    changes: dict[str, Any] = {k: v for k, v in asked.items() if v is not None}
    unknown = set(changes) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown setting {sorted(unknown)[0]!r}; known: {', '.join(FIELDS)}")
    rules = parse_rules(str(changes.get("rules", (base or Settings()).rules)))  # RulesError now, not later
    if base is None and "move_ms" not in changes and "bank_ms" not in changes and rules == MANKALAH:
        changes["bank_ms"] = MANKALAH_BANK_MS
    if base is None and changes.get("bank_ms") is not None and "move_ms" not in changes:
        changes["move_ms"] = changes["bank_ms"]
    return dataclasses.replace(base or Settings(), **changes)


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
