"""The flags that several `arena` commands share, declared once, and how arena prints.

Each option group hands its command one typed value: `time_options` a `ClockAsked`, `confinement_options`
`LimitsAsked`, so that a command builds the settings it asks for with one call (`asked`). Every default a help
text names is read from where it lives (`Settings`, and through it `TimeControl` and `Confinement`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from arena.game.rules import Kalah, Relay, RulesError, parse_rules, rule_sets
from arena.match.clock import TimeControl
from arena.match.printable import printable
from arena.tournament.settings import MANKALAH_BANK_MS, Settings


def echo(message: str = "", *, err: bool = False, file: TextIO | None = None) -> None:
    """click.echo, with every control character shown as its escape (arena.match.printable): what arena
    prints holds what bots wrote (stderr, a build's output, their files' names), which must not drive the
    terminal (its title, its clipboard, its screen)."""
    click.echo(printable(message, lines=True), err=err, file=file)


class Printable(logging.Formatter):
    """Warnings as one escaped block: they may name a bot's files or quote its output too."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), lines=True)


class RulesParam(click.ParamType):
    name = "SPEC"

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        if not isinstance(value, str):
            return value
        try:
            return parse_rules(value)
        except RulesError as e:
            self.fail(str(e), param, ctx)


RULES = RulesParam()
RULES_HELP = (
    f"Rules: a rule set, then options joined by commas, e.g. kalah,pits=4,seeds=3,pie. {rule_sets()}."
)


@dataclass(frozen=True, slots=True)
class LimitsAsked:
    """The confinement flags as asked, by their setting's name; None: not asked, so that a resumed
    tournament keeps its own."""

    memory_mb: int | None = None
    max_memory_mb: int | None = None
    max_procs: int | None = None
    sandbox: bool | None = None
    ponder: bool | None = None


@dataclass(frozen=True, slots=True)
class ClockAsked:
    """The time flags as asked: the clock they make on the defaults, and which of its fields were given (the
    others keep the stored tournament's, or resolve()'s defaults)."""

    clock: TimeControl = TimeControl()
    given: frozenset[str] = frozenset()

    @classmethod
    def of(cls, **flags: int | None) -> ClockAsked:
        """The clock's fields given by name; None: not asked."""
        given = {name: value for name, value in flags.items() if value is not None}
        return cls(TimeControl(**given), frozenset(given))

    def changes(self) -> dict[str, object]:
        """What was asked of the clock, by its fields' names, as resolve() takes the settings."""
        return {name: getattr(self.clock, name) for name in sorted(self.given)}


def confinement_options(command):  # type: ignore[no-untyped-def]
    """Limits on bots, given to the command as `limits` (a `LimitsAsked`) and `read_only`."""

    @functools.wraps(command)
    def with_limits(*args: Any, **kwargs: Any) -> Any:
        limits = LimitsAsked(**{f.name: kwargs.pop(f.name) for f in dataclasses.fields(LimitsAsked)})
        return command(*args, limits=limits, **kwargs)

    f = click.option(
        "--read-only",
        "read_only",
        multiple=True,
        metavar="PATH",
        help="A folder (or file) every bot may read in the sandbox, e.g. a conda environment or a data set; "
        "repeatable. A bot whose bot.toml asks for paths plays only if they are granted here. Not /, /home, "
        "/tmp, /var, the bots or reports folder, nor a folder holding one.",
    )(with_limits)
    f = click.option(
        "--ponder/--no-ponder",
        default=None,
        help="Let bots think on the opponent's time [default: no: a bot is paused while the other thinks].",
    )(f)
    f = click.option(
        "--sandbox/--no-sandbox",
        default=None,
        help="Run bots in bubblewrap: no network, no other bots' files [default: on where available].",
    )(f)
    f = click.option(
        "--max-procs",
        type=click.IntRange(1, 10_000),
        help=f"Processes a bot may run at once [default: {Settings().max_procs}].",
    )(f)
    f = click.option(
        "--max-memory",
        "max_memory_mb",
        type=click.IntRange(16, 1_048_576),
        metavar="MIB",
        help="The most memory a bot's bot.toml may ask for, in MiB; a bot asking for more gets this much "
        "[default: --memory].",
    )(f)
    f = click.option(
        "--memory",
        "memory_mb",
        type=click.IntRange(16, 1_048_576),
        metavar="MIB",
        help=f"Memory per bot in MiB [default: {Settings().memory_mb}; a bot's bot.toml may ask for less, or "
        "more up to --max-memory].",
    )(f)
    return f


def bots_option(text: str):  # type: ignore[no-untyped-def]
    """--bots DIR: the folder where bot names are looked up (default bots/)."""
    return click.option(
        "--bots", "bots_dir", type=click.Path(path_type=Path), default="bots", show_default=True, help=text
    )


TIME_BANK = click.FloatRange(0.001, 86_400)


def openings_asked(openings: str | None) -> dict[str, object]:
    """`--openings N|FILE` as settings: a count of openings to generate, or a book file."""
    if openings is None:
        return {}
    if openings.startswith("-") and openings[1:].isdigit():
        raise click.BadParameter(
            f"{openings}: a number of openings (0 or more) or a book file", param_hint="'--openings'"
        )
    return {"openings": int(openings)} if openings.isdigit() else {"book": openings}


def read_only_paths(paths: tuple[str, ...]) -> tuple[str, ...] | None:
    """--read-only as a setting: absolute paths, as the tournament keeps them; None: not asked."""
    return tuple(os.path.abspath(p) for p in paths) or None


def say_read_only(paths: tuple[str, ...]) -> None:
    """Name the teacher's grant at the start: what every bot may read besides its own files."""
    if paths:
        echo(f"arena: every bot may read (--read-only): {', '.join(paths)}", err=True)


def _bank_ms(seconds: float | None) -> int | None:
    return None if seconds is None else max(1, round(seconds * 1000))


def time_options(tournament: bool):  # type: ignore[no-untyped-def]
    """--move-time, --startup-ms and --time-bank, declared once, given to the command as `clock` (a
    `ClockAsked`). For a tournament (`tournament`) a flag not given keeps the stored tournament's
    setting, so none has a default filled in here: resolve() does it."""
    kept = ", or the tournament's" if tournament else ""
    default = TimeControl()
    bank_s = MANKALAH_BANK_MS // 1000

    def options(command):  # type: ignore[no-untyped-def]
        @functools.wraps(command)
        def with_clock(
            *args: Any, move_ms: int | None, startup_ms: int | None, time_bank: float | None, **kw: Any
        ) -> Any:
            clock = ClockAsked.of(move_ms=move_ms, startup_ms=startup_ms, bank_ms=_bank_ms(time_bank))
            return command(*args, clock=clock, **kw)

        f = click.option(
            "--time-bank",
            type=TIME_BANK,
            metavar="S",
            help="Seconds each bot has for a whole game (chess clock); each move gets min(--move-time, what "
            f"is left) [default: none; {bank_s} and no --move-time under --rules mankalah{kept}].",
        )(with_clock)
        f = click.option(
            "--startup-ms",
            type=click.IntRange(0, 600_000),
            metavar="MS",
            help="Extra time for a bot's first move after its process starts (interpreters, JVMs) "
            f"[default: {default.startup_ms}{kept}].",
        )(f)
        return click.option(
            "--move-time",
            "move_ms",
            type=click.IntRange(1, 3_600_000),
            metavar="MS",
            help=f"Milliseconds a bot has for each move [default: {default.move_ms}; with --time-bank: no "
            f"limit but the bank{kept}].",
        )(f)

    return options


def asked(
    rules: Kalah | Relay | None,
    clock: ClockAsked,
    limits: LimitsAsked,
    read_only: tuple[str, ...],
    **more: object,
) -> dict[str, Any]:
    """The settings the rules, time and confinement flags ask for, as `resolve` takes them (None: not
    asked): one mapping for every command that plays. `more` are further flags by their setting's name."""
    spec = rules.spec if rules is not None else None
    return {
        "rules": spec,
        **clock.changes(),
        **dataclasses.asdict(limits),
        "read_only": read_only_paths(read_only),
        **more,
    }


def seed_option(text: str):  # type: ignore[no-untyped-def]
    """--seed, of one type wherever it is asked (`text` its help)."""
    return click.option("--seed", type=click.IntRange(0, 2**63), help=text)


def tournament_options(f):  # type: ignore[no-untyped-def]
    f = click.option(
        "--out",
        type=click.Path(path_type=Path),
        default="reports",
        show_default=True,
        help="Folder that holds the tournaments.",
    )(f)
    f = click.option(
        "--name",
        default="default",
        show_default=True,
        help="Tournament name: its store is OUT/NAME/arena.sqlite.",
    )(f)
    return f
