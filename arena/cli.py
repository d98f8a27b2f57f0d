"""The `arena` command: flags to library calls, nothing more. Every error a user can cause is one line."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from arena.game.openings import BookError
from arena.game.rules import Kalah, Relay, RulesError, parse_rules, rule_sets
from arena.match.bots import BotError, BuildError, find_bot
from arena.match.confine import GrantError
from arena.match.printable import printable
from arena.match.record import Reason
from arena.student.new import LANGUAGES
from arena.tournament.cluster import ClusterError
from arena.tournament.settings import (
    BENCH_AFTER,
    CONFIDENCE,
    MANKALAH_BANK_MS,
    RESOLUTION,
    SPRT_ALPHA,
    SPRT_BETA,
    SPRT_ELO0,
    SPRT_ELO1,
    Settings,
    resolve,
)
from arena.tournament.store import StoreError


def echo(message: str = "", *, err: bool = False, file: TextIO | None = None) -> None:
    """click.echo, with every control character shown as its escape (arena.match.printable): what arena
    prints holds what bots wrote (stderr, a build's output, their files' names), which must not drive the
    terminal (its title, its clipboard, its screen)."""
    click.echo(printable(message, lines=True), err=err, file=file)


class _Printable(logging.Formatter):
    """Warnings as one escaped block: they may name a bot's files or quote its output too."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), lines=True)


if TYPE_CHECKING:
    from arena.api import Match
    from arena.match.bots import Bot
    from arena.match.record import GameRecord
    from arena.match.referee import Seat

# The heavy parts (the scheduler's multiprocess, pandas and the ratings, jinja2 and the report, the solver)
# are imported inside the commands that use them: `arena --help` and `arena play` start in a blink.


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


def _confinement_options(f):  # type: ignore[no-untyped-def]
    """Limits on bots. Defaults are None so that a resumed tournament keeps its own."""
    f = click.option(
        "--read-only",
        "read_only",
        multiple=True,
        metavar="PATH",
        help="A folder (or file) every bot may read in the sandbox, e.g. a conda environment or a data set; "
        "repeatable. A bot whose bot.toml asks for paths plays only if they are granted here. Not /, /home, "
        "/tmp, /var, the bots or reports folder, nor a folder holding one.",
    )(f)
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


def _bots_option(text: str):  # type: ignore[no-untyped-def]
    """--bots DIR: the folder where bot names are looked up (default bots/)."""
    return click.option(
        "--bots", "bots_dir", type=click.Path(path_type=Path), default="bots", show_default=True, help=text
    )


TIME_BANK = click.FloatRange(0.001, 86_400)


def _openings_asked(openings: str | None) -> dict[str, object]:
    """`--openings N|FILE` as settings: a count of openings to generate, or a book file."""
    if openings is None:
        return {}
    if openings.startswith("-") and openings[1:].isdigit():
        raise click.BadParameter(
            f"{openings}: a number of openings (0 or more) or a book file", param_hint="'--openings'"
        )
    return {"openings": int(openings)} if openings.isdigit() else {"book": openings}


def _read_only(paths: tuple[str, ...]) -> tuple[str, ...] | None:
    """--read-only as a setting: absolute paths, as the tournament keeps them; None: not asked."""
    return tuple(os.path.abspath(p) for p in paths) or None


def _say_read_only(paths: tuple[str, ...]) -> None:
    """Name the teacher's grant at the start: what every bot may read besides its own files."""
    if paths:
        echo(f"arena: every bot may read (--read-only): {', '.join(paths)}", err=True)


def _bank_ms(seconds: float | None) -> int | None:
    return None if seconds is None else max(1, round(seconds * 1000))


def _time_options(tournament: bool):  # type: ignore[no-untyped-def]
    """--move-time, --startup-ms and --time-bank, declared once. For `arena run` (`tournament`) a flag not
    given keeps the stored tournament's setting, so none has a default filled in here: resolve() does it."""
    kept = ", or the tournament's" if tournament else ""
    default = Settings()
    bank_s = MANKALAH_BANK_MS // 1000

    def options(f):  # type: ignore[no-untyped-def]
        f = click.option(
            "--time-bank",
            type=TIME_BANK,
            metavar="S",
            help="Seconds each bot has for a whole game (chess clock); each move gets min(--move-time, what "
            f"is left) [default: none; {bank_s} and no --move-time under --rules mankalah{kept}].",
        )(f)
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


def _asked(
    rules: Kalah | Relay | None,
    move_ms: int | None,
    startup_ms: int | None,
    time_bank: float | None,
    read_only: tuple[str, ...],
    **more: object,
) -> dict[str, Any]:
    """The settings the rules, time and confinement flags ask for, as `resolve` takes them (None: not
    asked): one dict for play, run and check. `more` are further flags by their setting's name."""
    spec = rules.spec if rules is not None else None
    asked = {"rules": spec, "move_ms": move_ms, "startup_ms": startup_ms, "bank_ms": _bank_ms(time_bank)}
    return asked | {"read_only": _read_only(read_only)} | more


def _seed_option(text: str):  # type: ignore[no-untyped-def]
    """--seed, of one type wherever it is asked (`text` its help)."""
    return click.option("--seed", type=click.IntRange(0, 2**63), help=text)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(package_name="arena")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Arena: Kalah bot tournaments. Bots are programs speaking protocol v1 or the Manchester agents'
    protocol (see protocol.md).

    \b
    Start here:
      arena new mybot            a starter bot to improve, in bots/mybot/
      arena check mybot          does it follow the protocol?
      arena play mybot human     play against it yourself
      arena run --rounds 2       every bot in bots/ against every other;
                                 then open reports/default/index.html
    """
    if ctx.invoked_subcommand is None:  # bare `arena`: the help, which is no error
        click.echo(ctx.get_help())


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--rules", "rules", type=RULES, default="kalah", show_default=True, help=RULES_HELP)
@click.option("--games", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
@_time_options(tournament=False)
@_bots_option("Folder where bot names are looked up.")
@click.option(
    "--openings",
    metavar="N|FILE",
    help="Openings each pair of games plays, once from each side: N generated from --seed (0: every game "
    "from the start), or a book FILE [default: one per pair of games, at most 50; a single game, or one "
    "with you in it, from the start].",
)
@_seed_option(f"Seed of the generated openings [default: {Settings().seed}].")
@click.option("--json", "as_json", is_flag=True, help="Print each game record as one JSON line.")
@click.option("--show", is_flag=True, help="Draw the board after every move (always, when you play).")
@_confinement_options
def play(  # type: ignore[no-untyped-def]
    a,
    b,
    rules,
    games,
    move_ms,
    startup_ms,
    time_bank,
    bots_dir,
    openings,
    seed,
    as_json,
    show,
    memory_mb,
    max_memory_mb,
    max_procs,
    sandbox,
    ponder,
    read_only,
):
    """Play GAMES games between bots A and B (names in --bots, or paths), alternating sides.

    A or B may be `human`: you play that side at the terminal (q quits, ? for help). The name `human` always
    means you; a bot named human plays by its path (bots/human.py)."""
    from arena.api import Match
    from arena.student.human import Quit

    out = sys.stderr if as_json else sys.stdout
    seat_a, seat_b = _seats(a, b, bots_dir, out)
    limits = {"memory_mb": memory_mb, "max_memory_mb": max_memory_mb, "max_procs": max_procs}
    limits |= {"sandbox": sandbox, "ponder": ponder}
    asked = _asked(rules, move_ms, startup_ms, time_bank, read_only, seed=seed, **limits)
    asked |= _openings_asked(openings)
    if openings is None:  # two deterministic bots repeat one pair of games: a series goes through openings
        asked["openings"] = min(Settings().openings, (games + 1) // 2) if games > 1 else 0
    with Match(seat_a, seat_b, resolve(None, asked)) as match:
        _say_read_only(match.settings.read_only)
        first, second = (p.name for p in match.players)
        try:
            _play_games(match, games, show and HUMAN not in (a, b), as_json, out)
        except KeyboardInterrupt:
            played = f"{match.games} game{'s' * (match.games != 1)}"
            echo(f"arena: interrupted after {played}: {_so_far(match)}", err=True)
            sys.exit(130)
        except Quit as left:
            echo(f"arena: {left} in game {match.games + 1}, which is not counted: {_so_far(match)}", err=True)
            sys.exit(0)
    echo(
        f"{first} {match.score[first]:g} - {match.score[second]:g} {second} "
        f"after {games} game{'s' * (games != 1)} ({match.rules.spec})",
        file=out,
    )


def _so_far(match: Match) -> str:
    first, second = (p.name for p in match.players)
    return f"{first} {match.score[first]:g} - {match.score[second]:g} {second} so far"


HUMAN = "human"  # `arena play BOT human`: the person at the terminal plays that side


def _seats(a: str, b: str, bots_dir: Path, out: TextIO) -> tuple[Bot | Seat, Bot | Seat]:
    """The two sides named on the command line: bots, or the person (`human`) against a bot."""
    if a == HUMAN and b == HUMAN:
        raise click.UsageError("one side must be a bot: arena play BOT human")
    if HUMAN not in (a, b):
        return find_bot(a, bots_dir), find_bot(b, bots_dir)
    from arena.student.human import Human

    bot = find_bot(b if a == HUMAN else a, bots_dir)
    try:
        find_bot(HUMAN, bots_dir)
        echo(f"arena: 'human' is you; the bot named human in {bots_dir} plays by its path", err=True)
    except BotError:
        pass
    person = Human(bot.name, HUMAN if bot.name != HUMAN else f"{HUMAN}-2", output=out)
    return (person, bot) if a == HUMAN else (bot, person)


def _play_games(match: Match, games: int, show: bool, as_json: bool, out: TextIO) -> None:
    """`arena play`'s games, one line (or JSON record) each, the board after every move with `show`."""
    first, second = (p.name for p in match.players)
    for game in range(games):
        south, north = (first, second) if game % 2 == 0 else (second, first)
        watch = None
        if show:
            from arena.report.terminal import Watch

            watch = Watch(match.rules, south, north, lambda text: echo(text, file=out))
            watch.start()
        record = match.play(on_move=watch)
        if as_json:
            echo(json.dumps(record.to_dict()))
        else:
            echo(describe(game + 1, record))


def describe(number: int, r: GameRecord) -> str:
    """One human line per game."""
    head = f"game {number}: {r.south} (south) vs {r.north} (north)"
    head += f", opening {' '.join(map(str, r.opening))}: " if r.opening else ": "
    if r.faulty:
        return head + f"{r.winner} wins, {r.faulty} forfeits ({r.reason}: {printable(r.detail)})"
    score = f"{r.south_store}-{r.north_store}"
    if r.swapped:
        score += f", {r.north} swapped to south"
    if r.winner is None:
        return head + f"draw {score}"
    return head + f"{r.winner} wins {score}" + (" (early finish)" if r.reason == Reason.EARLY else "")


def _tournament_options(f):  # type: ignore[no-untyped-def]
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


@cli.command()
@click.option(
    "--rounds",
    type=click.IntRange(1, 100_000),
    help="Rounds of a round robin: in each, every pair meets twice, once on each side. Without it, the "
    "run plays adaptively until the ranking is settled.",
)
@click.option(
    "--confidence",
    type=float,
    help=f"Adaptive run: the confidence the ranking is settled at [default: {CONFIDENCE:g}].",
)
@click.option(
    "--resolution",
    type=float,
    metavar="ELO",
    help=f"Adaptive run: bots closer than this may share a place [default: {RESOLUTION:g}].",
)
@click.option(
    "--settle",
    nargs=2,
    type=(click.Choice(["top"]), int),
    metavar="top K",
    help="Adaptive run: settle only the first K places (and each bot against --reference bots).",
)
@click.option(
    "--reference",
    "references",
    multiple=True,
    metavar="BOT",
    help="Adaptive run: settle every bot against BOT (pass/fail); repeat for more.",
)
@click.option(
    "--max-games",
    type=click.IntRange(1),
    metavar="N",
    help="Adaptive run: stop when the field has N games stored, settled or not.",
)
@click.option("--gauntlet", "hero", metavar="BOT", help="Only games of BOT against every other bot.")
@click.option("--rules", "rules", type=RULES, help=f"{RULES_HELP} [default: kalah, or the tournament's].")
@_time_options(tournament=True)
@_seed_option(f"Schedule seed [default: {Settings().seed}, or the tournament's].")
@click.option(
    "--jobs",
    type=click.IntRange(1, 512),
    help="Games played in parallel [default: one per core].",
)
@click.option(
    "--openings",
    metavar="N|FILE",
    help="Openings the rounds go through, each played from both sides by every pair: N generated from the "
    "seed (0: every game from the start position), or a book FILE, one opening per line [default: 50, or the "
    "tournament's].",
)
@click.option(
    "--bench-after",
    type=click.IntRange(0, 1_000_000),
    default=BENCH_AFTER,
    show_default=True,
    help="Bench a bot for the rest of the run (its games forfeit unplayed) once it gave no first answer in "
    "this many games in a row; 0: never. The next run tries it again.",
)
@click.option("--fresh", is_flag=True, help="Start new bot processes for every game.")
@click.option(
    "--cluster",
    metavar="tls://HOST:8786",
    envvar="ARENA_CLUSTER",
    help="Play the games on the workers of this Dask cluster's scheduler, not on this machine's cores "
    '(--jobs); needs pip install "arena[cluster]" [env: ARENA_CLUSTER].',
)
@click.option(
    "--cluster-certs",
    metavar="DIR",
    envvar="ARENA_CLUSTER_CERTS",
    type=click.Path(file_okay=False, path_type=Path),
    help="The class's certificates (made by 'arena cluster-certs DIR') that the cluster's TLS needs; "
    "without it, Dask's own TLS configuration [env: ARENA_CLUSTER_CERTS].",
)
@click.option(
    "--insecure-cluster",
    is_flag=True,
    help="Accept a plain tcp:// cluster, without TLS: whoever reaches its port can join as a worker.",
)
@click.option(
    "--require-sandbox/--no-require-sandbox",
    default=None,
    help="Drop cluster workers that have no sandbox [default: on when this machine has it].",
)
@_bots_option("Folder of the bots that play.")
@_tournament_options
@click.option("--quiet", is_flag=True, help="No progress bar and no table; print only the report's path.")
@click.option(
    "--open",
    "open_page",
    is_flag=True,
    help="Open the tournament's page in the default browser; it updates itself while the games run.",
)
@_confinement_options
def run(  # type: ignore[no-untyped-def]
    rounds,
    confidence,
    resolution,
    settle,
    references,
    max_games,
    hero,
    rules,
    move_ms,
    startup_ms,
    time_bank,
    seed,
    jobs,
    openings,
    bench_after,
    fresh,
    cluster,
    cluster_certs,
    insecure_cluster,
    require_sandbox,
    bots_dir,
    name,
    out,
    quiet,
    open_page,
    memory_mb,
    max_memory_mb,
    max_procs,
    sandbox,
    ponder,
    read_only,
):
    """Run a tournament over the bots folder, adaptively until its ranking is settled or --rounds round
    robins; resume it if it exists, then write its report."""
    from arena.api import Tournament, entrants

    rule = _stopping_rule(rounds, confidence, resolution, settle, references, max_games)
    # Before the store exists: a bad bots folder, or a grant of a private place, leaves nothing behind.
    found = entrants(bots_dir, hero, read_only=_read_only(read_only) or (), private=[out])
    names = {b.name for b in found.bots}
    for ref in references:
        if ref not in names:
            raise click.BadParameter(f"{ref!r} is not a bot in {bots_dir}", param_hint="--reference")
    if rounds is None and hero:
        raise click.UsageError("a gauntlet plays a number of rounds: give --rounds with --gauntlet")
    limits = {"memory_mb": memory_mb, "max_memory_mb": max_memory_mb, "max_procs": max_procs}
    limits |= {"sandbox": sandbox, "ponder": ponder}
    asked = _asked(rules, move_ms, startup_ms, time_bank, read_only, seed=seed, **limits)
    asked |= _openings_asked(openings)
    with Tournament(Path(out) / name, **asked) as cup:
        _say_read_only(cup.settings.read_only)
        building = None if quiet else lambda line: echo(f"arena: {line}", err=True)
        entered = cup.enter(bots_dir, hero, on_build=building)  # the folder surveyed once, for plan and run
        for entry, why in entered.broken:  # a failed build too
            echo(f"arena: not entered: {printable(entry)}: {printable(why)}", err=True)
        if not quiet:
            echo(cup.plan(entered, rounds, settle=rule, max_games=max_games).summary())
        from arena.report.terminal import Progress

        progress = Progress(quiet, sys.stderr)
        result = cup.run(
            entered,
            rounds,
            settle=rule,
            max_games=max_games,
            jobs=jobs,
            fresh=fresh,
            progress=progress,
            bench_after=bench_after,
            live=True,
            on_page=_open_in_browser if open_page else None,
            cluster=_cluster(cluster, cluster_certs, insecure_cluster, require_sandbox),
        )
        progress.close()
        standings = cup.standings()
        page = cup.report(standings)
        settled = cup.verdict() if rounds is None else None
    if result.interrupted:
        stored = result.before + result.played
        of = f"{stored} stored" if rounds is None else f"{stored} of {result.scheduled} stored"
        echo(
            f"arena: interrupted after {result.played} new games ({of}); run the same command again to "
            "resume",
            err=True,
        )
        if settled is not None:
            echo(f"arena: not settled yet: {settled.describe_open()}", err=True)
        echo(f"report so far: {page}", err=True)
        sys.exit(130)
    if not quiet:
        from arena.report import terminal

        if result.before:
            echo(f"resumed: {result.before} games were already stored, {result.played} played now")
        echo(terminal.format_table(standings.board))
    if settled is not None:
        if settled.settled:
            echo(f"settled after {result.before + result.played} games. {settled.rule.describe()}")
        else:
            why = "the cap of --max-games" if max_games is not None else "no more games could be played"
            echo(f"not settled ({why}): {settled.describe_open()}")
    echo(f"report: {page}")


def _cluster(address: str | None, certs: Path | None, insecure: bool, require_sandbox: bool | None):  # type: ignore[no-untyped-def]
    """The cluster back end the flags ask for, or None to play on this machine."""
    if not address:
        return None
    from arena.tournament import trust
    from arena.tournament.cluster import Cluster

    try:  # before the tournament's folder is made: a refused cluster leaves nothing behind
        trust.check_address(address, insecure)
        if not insecure:
            trust.security(certs)
    except trust.TrustError as e:
        raise ClusterError(str(e)) from None
    except ImportError:
        pass  # no Dask here: the back end says what to install
    if insecure:
        click.echo(f"arena: warning: {address} is played on without TLS (--insecure-cluster)", err=True)
    return Cluster(address, certs=certs, insecure=insecure, require_sandbox=require_sandbox)


def _stopping_rule(rounds, confidence, resolution, settle, references, max_games):  # type: ignore[no-untyped-def]
    """The adaptive run's rule from its options, refused in one line when it cannot be one, before anything
    is written; None for a run of --rounds, which takes none of them."""
    if rounds is not None:
        given = [
            flag
            for flag, value in (
                ("--confidence", confidence),
                ("--resolution", resolution),
                ("--settle", settle),
                ("--reference", references or None),
                ("--max-games", max_games),
            )
            if value is not None
        ]
        if given:
            raise click.UsageError(f"{given[0]} is for an adaptive run, without --rounds")
        return None
    from arena.tournament.settle import Rule

    try:
        return Rule(
            CONFIDENCE if confidence is None else confidence,
            RESOLUTION if resolution is None else resolution,
            None if settle is None else settle[1],
            tuple(references),
        )
    except ValueError as e:
        raise click.UsageError(str(e)) from None


def _open_in_browser(page: Path) -> None:
    """Open the page without waiting for the browser: the games go on meanwhile."""
    import threading
    import webbrowser

    threading.Thread(target=webbrowser.open, args=(page.as_uri(),), daemon=True).start()


@cli.command("cluster-certs")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def cluster_certs_cmd(folder):  # type: ignore[no-untyped-def]
    """Make a class's certificate authority and the certificates of its cluster in FOLDER: the scheduler's,
    the workers' and the coordinator's (the machine that runs arena run)."""
    from arena.tournament.trust import TrustError, make

    try:
        written = make(folder)
    except TrustError as e:
        raise click.ClickException(str(e)) from None
    for path in written:
        click.echo(str(path))
    click.echo(
        f"keep {folder / 'ca.key'} to yourself; copy ca.pem and scheduler.pem/.key to the scheduler's "
        "machine, ca.pem and worker.pem/.key to every lab machine",
        err=True,
    )


@cli.command("sprt")
@click.argument("new")
@click.argument("base")
@click.option(
    "--elo0", type=float, default=SPRT_ELO0, show_default=True, help="H0: NEW is no better than this."
)
@click.option("--elo1", type=float, default=SPRT_ELO1, show_default=True, help="H1: NEW is better by this.")
@click.option("--alpha", type=float, default=SPRT_ALPHA, show_default=True, help="False-positive rate.")
@click.option("--beta", type=float, default=SPRT_BETA, show_default=True, help="False-negative rate.")
@click.option("--max-games", type=click.IntRange(2), metavar="N", help="Stop after N games, decided or not.")
@click.option("--rules", "rules", type=RULES, help=f"{RULES_HELP} [default: kalah, or the test's].")
@_time_options(tournament=True)
@click.option(
    "--openings",
    metavar="N|FILE",
    help="Openings the pairs go through, once from each side: N generated from --seed, or a book FILE "
    f"[default: {Settings().openings}, or the test's].",
)
@_seed_option(f"Seed of the openings [default: {Settings().seed}, or the test's].")
@click.option("--jobs", type=click.IntRange(1, 512), help="Games played in parallel [default: one per core].")
@_bots_option("Folder where NEW and BASE are looked up.")
@click.option("--out", type=click.Path(path_type=Path), default="reports", show_default=True)
@click.option("--name", help="Where the test is stored: OUT/NAME [default: sprt-NEW-BASE].")
@click.option("--quiet", is_flag=True, help="Print only the result.")
@_confinement_options
def sprt_cmd(  # type: ignore[no-untyped-def]
    new,
    base,
    elo0,
    elo1,
    alpha,
    beta,
    max_games,
    rules,
    move_ms,
    startup_ms,
    time_bank,
    openings,
    seed,
    jobs,
    bots_dir,
    out,
    name,
    quiet,
    memory_mb,
    max_memory_mb,
    max_procs,
    sandbox,
    ponder,
    read_only,
):
    """Test NEW against BASE (bot names) in pairs of games until a sequential probability ratio test
    decides: H1, NEW is better by --elo1, or H0, it is no better than --elo0. Prints the LLR, its bounds, the
    Elo with its 95% interval and the five pair counts as it runs; the same command resumes it."""
    from arena.api import Tournament, entrants
    from arena.tournament.sprt import Design

    try:
        design = Design(elo0, elo1, alpha, beta)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if new == base:
        raise click.UsageError(
            f"{new} and {base} are the same bot: an SPRT needs a new version and an old one"
        )
    # Before the store exists: a missing bot, or a grant of a private place, leaves nothing behind.
    found = {
        b.name for b in entrants(bots_dir, None, read_only=_read_only(read_only) or (), private=[out]).bots
    }
    for bot in (new, base):
        if bot not in found:
            raise click.UsageError(f"no bot {bot!r} in {bots_dir} (the bots: {', '.join(sorted(found))})")
    limits = {"memory_mb": memory_mb, "max_memory_mb": max_memory_mb, "max_procs": max_procs}
    limits |= {"sandbox": sandbox, "ponder": ponder}
    asked = _asked(rules, move_ms, startup_ms, time_bank, read_only, seed=seed, **limits)
    asked |= _openings_asked(openings)
    with Tournament(Path(out) / (name or f"sprt-{new}-{base}"), **asked) as cup:
        _say_read_only(cup.settings.read_only)
        building = None if quiet else lambda line: echo(f"arena: {line}", err=True)
        entered = cup.enter(bots_dir, on_build=building)  # surveyed once, for the test and its play
        match = cup.match(new, base, entered, design, max_games)
        if not quiet:
            echo(design.describe())

        def progress(done: int, total: int, record: object) -> None:
            if not quiet and total and done == total:  # a batch is complete: the test is judged again
                echo(match.status(cup.store.results()).line())

        result = cup.sprt(new, base, entered, design, max_games=max_games, jobs=jobs, progress=progress)
        final = match.status(cup.store.results())
        page = cup.report()
    if result.interrupted:
        echo(f"arena: interrupted: {final.line()}; run the same command again to resume", err=True)
        sys.exit(130)
    echo(final.line())
    if final.decision is None:
        echo("not decided: the cap of --max-games came first" if max_games else "not decided")
    echo(f"report: {page}")


@cli.command("report")
@_tournament_options
def report_cmd(name, out):  # type: ignore[no-untyped-def]
    """Write the tournament's HTML report again from its store alone."""
    from arena.api import Tournament

    with Tournament.open(Path(out) / name) as cup:
        echo(f"report: {cup.report()}")


@cli.command("replay")
@click.argument("game", type=click.IntRange(1))
@_tournament_options
def replay_cmd(game, name, out):  # type: ignore[no-untyped-def]
    """Print stored game GAME (its number on the page, `id` in `arena export`) move by move with the board,
    marking extra turns, captures and swaps; a forfeit ends with the lines that reproduce it."""
    from arena.api import Tournament
    from arena.report.terminal import stored_game

    with Tournament.open(Path(out) / name) as cup:
        text = stored_game(cup.store, game)
    if text is None:
        raise click.ClickException(f"tournament {name!r} has no game {game} (see 'arena export' for the ids)")
    echo(text)


@cli.command()
@_tournament_options
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default="jsonl", show_default=True)
@click.option(
    "--standings",
    is_flag=True,
    help="The leaderboard instead: each bot's place, Elo with its 95% interval, chance of each place "
    "(rank_odds) and TrueSkill.",
)
def export(name, out, fmt, standings):  # type: ignore[no-untyped-def]
    """Write every stored game record to stdout, in schedule order (or the standings)."""
    from arena.api import Tournament

    with Tournament.open(Path(out) / name) as cup:
        write = cup.export_standings if standings else cup.export
        if not sys.stdout.isatty():  # a file or a pipe gets the records as stored
            write(sys.stdout, fmt)
            return
        # A person reads them: what bots wrote (a CSV's detail) is shown as echo shows it
        shown = io.StringIO()
        write(shown, fmt)
        click.echo(printable(shown.getvalue(), lines=True), nl=False)


SOLVE_SECONDS = 60.0  # `arena solve` gives up after this long unless told otherwise


@cli.command("solve")
@click.option("--rules", "rules", type=RULES, default="kalah", show_default=True, help=RULES_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option(
    "--time-limit",
    "seconds",
    type=click.FloatRange(0, min_open=True),
    default=SOLVE_SECONDS,
    show_default=True,
    metavar="S",
    help="Give up after S seconds.",
)
def solve_cmd(rules, as_json, seconds):  # type: ignore[no-untyped-def]
    """The perfect-play value of the start (the first player's final margin) and a best first move.

    Only small boards finish: in a minute on one core about Kalah(4,5), Kalah(5,3), Kalah(6,2) and
    Relay(4,4); Kalah(6,6) would take ages. Progress goes to stderr once a second."""

    from arena.game import solver

    if not as_json:
        echo(
            f"solving {rules.spec} for up to {seconds:g} s (boards that finish in a minute: up to about "
            "Kalah(4,5), Kalah(5,3), Kalah(6,2), Relay(4,4))",
            err=True,
        )

    def progress(p: solver.Progress) -> None:
        rate = p.nodes / max(p.seconds, 1e-9)
        echo(f"depth {p.depth}: {p.nodes:,} nodes, {rate:,.0f} nodes/s, {p.seconds:.0f} s", err=True)

    found = solver.solve(rules, seconds=seconds, progress=progress)
    if as_json:
        fields = {
            "rules": rules.spec,
            "value": found.value if found.exact else None,
            "best_move": found.best_move,
            "exact": found.exact,
            "depth": found.depth,
            "nodes": found.nodes,
            "seconds": round(found.seconds, 3),
        }
        echo(json.dumps(fields))
    elif found.exact:
        value = int(found.value)
        outcome = f"a {'win' if value > 0 else 'loss'} by {abs(value)} for the first player"
        if value == 0:
            outcome = "a draw"
        echo(
            f"{rules.spec}: {outcome} with perfect play; a best first move is "
            f"{found.best_move} ({found.nodes:,} nodes, {found.seconds:.1f} s)"
        )
    if not found.exact:
        echo(
            f"arena: not solved within {seconds:g} s; the search reached depth {found.depth}, where "
            f"{found.best_move} looked best",
            err=True,
        )
        sys.exit(1)


@cli.command("new")
@click.argument("name")
@click.option(
    "--lang", type=click.Choice(LANGUAGES), default="python", show_default=True, help="The bot's language."
)
@_bots_option("Folder to put the bot in (made if missing).")
def new_cmd(name, lang, bots_dir):  # type: ignore[no-untyped-def]
    """Write a starter bot NAME into the bots folder: it plays greedily, watches its clock, and its
    comments say what each line of the protocol means and where your own strategy goes."""
    import tomllib

    from arena.match.bots import MANIFEST
    from arena.student.new import new_bot

    path = new_bot(name, lang, bots_dir)
    files = sorted((f.name for f in path.iterdir()), key=lambda f: (f != MANIFEST, f))
    echo(f"made {path}: a greedy {lang} bot for you to improve ({', '.join(files)})")
    build = tomllib.loads((path / MANIFEST).read_text(encoding="utf-8")).get("build")
    if build:
        echo(f"arena builds it ({build}) before its first game, and again when you change it")
    where = "" if bots_dir == Path("bots") else f" --bots {bots_dir}"
    rival = "greedy" if (bots_dir / "greedy.py").exists() else name  # the checkout's bots folder has greedy
    steps = (
        (f"arena check {name}{where}", "does it follow the protocol?"),
        (f"arena play {name} human{where}", "play against it yourself"),
        (f"arena play {name} {rival} --show{where}", f"watch it play {rival}"),
        (f"arena run{where}", f"a tournament of every bot in {bots_dir}"),
    )
    width = max(len(command) for command, _ in steps)
    echo("next:")
    for command, why in steps:
        echo(f"  {command:<{width}}   {why}")


@cli.command("check")
@click.argument("bot")
@click.option("--rules", "rules", type=RULES, default="kalah", show_default=True, help=RULES_HELP)
@_time_options(tournament=False)
@_bots_option("Folder where bot names are looked up (and greedy and random, if arena has none of its own).")
@click.option("--json", "as_json", is_flag=True, help="Print the checklist as one JSON object.")
@_confinement_options
def check_cmd(  # type: ignore[no-untyped-def]
    bot,
    rules,
    move_ms,
    startup_ms,
    time_bank,
    bots_dir,
    as_json,
    memory_mb,
    max_memory_mb,
    max_procs,
    sandbox,
    ponder,
    read_only,
):
    """Check BOT (a name in --bots, or a path) before a tournament: it plays a few short games against
    greedy and random, confined as in `arena run`, and prints a checklist of what the referee would hold
    against it (protocol, startup, think time, memory, processes, QUIT), each problem with the lines that
    reproduce it by hand. Exit status 1 if it would forfeit (or stays after QUIT), 0 with warnings only."""
    from arena.student.check import ARENA_BOTS, check, reference_bots, render

    found = find_bot(bot, bots_dir)
    limits = {"memory_mb": memory_mb, "max_memory_mb": max_memory_mb, "max_procs": max_procs}
    limits |= {"sandbox": sandbox, "ponder": ponder}
    asked = _asked(rules, move_ms, startup_ms, time_bank, read_only, **limits)
    references = reference_bots((ARENA_BOTS, Path(bots_dir)))
    report = check(found, resolve(None, asked), references, say=lambda text: echo(text, err=True))
    echo(json.dumps(report.to_dict()) if as_json else render(report))
    sys.exit(1 if report.fails else 0)


_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop(signum: int, frame: object) -> None:
    """Ctrl-C, `kill PID` and a closed terminal all stop arena as Ctrl-C does: a KeyboardInterrupt that
    unwinds through every clean-up, which ends the bots (one left frozen would stay frozen for good)."""
    if signum == signal.SIGHUP:  # the terminal is gone: what is still printed must not fail the clean-up
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            if os.isatty(fd):
                os.dup2(null, fd)
        os.close(null)
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """`_stop` for each stopping signal that arena was not started ignoring (`nohup arena run` goes on)."""
    for stop in _STOPS:
        if signal.getsignal(stop) is not signal.SIG_IGN:
            signal.signal(stop, _stop)


def main() -> None:
    """Entry point: click errors and our own become one line on stderr and exit status 2."""
    _stop_on_signals()
    warnings = logging.StreamHandler(sys.stderr)
    warnings.setFormatter(_Printable("arena: %(levelname)s: %(message)s"))
    log = logging.getLogger("arena")
    log.addHandler(warnings)
    log.propagate = False
    logging.addLevelName(logging.WARNING, "warning")
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        echo("arena: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        hint = ""
        if isinstance(e, click.UsageError) and e.ctx is not None:
            hint = f" (see '{e.ctx.command_path} --help')"
        echo(f"arena: error: {printable(e.format_message())}{hint}", err=True)
        sys.exit(e.exit_code)
    except BuildError as e:  # the bot's fault, not a usage error: the line, then what the compiler said
        echo(f"arena: error: {printable(str(e))}", err=True)
        for line in e.output.splitlines():
            echo(f"    {line}", err=True)
        sys.exit(1)
    except (BotError, BookError, ClusterError, GrantError, RulesError, StoreError) as e:
        echo(f"arena: error: {printable(str(e))}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        echo("arena: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
