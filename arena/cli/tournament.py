"""The tournament's commands: `arena run` (a round robin, or until the ranking is settled), `arena sprt`
(a new version against the old), `arena report`, `arena replay`, `arena export` and `arena cluster-certs`."""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import time
from pathlib import Path

import click

from arena.cli.options import (
    RULES,
    RULES_HELP,
    asked,
    bots_option,
    confinement_options,
    echo,
    openings_asked,
    read_only_paths,
    say_read_only,
    seed_option,
    time_options,
    tournament_options,
)
from arena.lab import ClusterError
from arena.match.bots import Bot, BotError, find_bot
from arena.match.printable import printable
from arena.match.record import GameRecord
from arena.tournament.settings import (
    BENCH_AFTER,
    CONFIDENCE,
    RESOLUTION,
    SPRT_ALPHA,
    SPRT_BETA,
    SPRT_ELO0,
    SPRT_ELO1,
    RunOptions,
    Settings,
)

JUDGED_SHARE = 10.0  # an adaptive run's progress judges what is left for at most a tenth of the run's time


@click.command()
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
@click.option(
    "--rules", "rules", type=RULES, help=f"{RULES_HELP} [default: {Settings().rules}, or the tournament's]."
)
@time_options(tournament=True)
@seed_option(f"Schedule seed [default: {Settings().seed}, or the tournament's].")
@click.option(
    "--jobs",
    type=click.IntRange(1, 512),
    help="Games played in parallel [default: one per core].",
)
@click.option(
    "--openings",
    metavar="N|FILE",
    help="Openings the rounds go through, each played from both sides by every pair: N generated from the "
    "seed (0: every game from the start position), or a book FILE, one opening per line [default: "
    f"{Settings().openings}, or the "
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
@bots_option("Folder of the bots that play.")
@tournament_options
@click.option("--quiet", is_flag=True, help="No progress bar and no table; print only the report's path.")
@click.option(
    "--open",
    "open_page",
    is_flag=True,
    help="Open the tournament's page in the default browser; it updates itself while the games run.",
)
@confinement_options
def run(  # type: ignore[no-untyped-def]
    rounds,
    confidence,
    resolution,
    settle,
    references,
    max_games,
    hero,
    rules,
    clock,
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
    limits,
    read_only,
):
    """Run a tournament over the bots folder, adaptively until its ranking is settled or --rounds round
    robins; resume it if it exists, then write its report."""
    from arena.api import Tournament, entrants

    rule = _stopping_rule(rounds, confidence, resolution, settle, references, max_games)
    # Before the store exists: a bad bots folder, or a grant of a private place, leaves nothing behind.
    found = entrants(bots_dir, hero, read_only=read_only_paths(read_only) or (), private=[out])
    names = {b.name for b in found.bots}
    for ref in references:
        if ref not in names:
            raise click.BadParameter(f"{ref!r} is not a bot in {bots_dir}", param_hint="--reference")
    if rounds is None and hero:
        raise click.UsageError("a gauntlet plays a number of rounds: give --rounds with --gauntlet")
    wanted = asked(rules, clock, limits, read_only, seed=seed)
    wanted |= openings_asked(openings)
    with Tournament(Path(out) / name, **wanted) as cup:
        say_read_only(cup.settings.read_only)
        building = None if quiet else lambda line: echo(f"arena: {line}", err=True)
        entered = cup.enter(found, hero, on_build=building)  # the folder surveyed once, for plan and run
        for entry, why in entered.broken:  # a failed build too
            echo(f"arena: not entered: {printable(entry)}: {printable(why)}", err=True)
        if not quiet:
            echo(cup.plan(entered, rounds, settle=rule, max_games=max_games).summary())
        from arena.report.terminal import Progress

        progress = Progress(
            quiet, sys.stderr, open_ended=rounds is None, bots=0 if hero else len(entered.bots)
        )
        judged_at = [float("-inf")]  # when what is left may be judged again

        def told(done: int, total: int, record: GameRecord | None) -> None:
            now = time.monotonic()
            if rounds is None and not quiet and total and done == total and now >= judged_at[0]:
                # A batch is complete: what is left, judged again once the table may be redrawn, and then
                # for at most a tenth of the time. A refit after every batch took as long as planning the
                # next one, in the pause between batches while every worker waits.
                progress.settling(cup.verdict(rule))
                judged_at[0] = now + max(Progress.REDRAW, JUDGED_SHARE * (time.monotonic() - now))
            progress(done, total, record)

        options = RunOptions(
            jobs=jobs,
            fresh=fresh,
            bench_after=bench_after,
            progress=told,
            live=True,
            on_page=_open_in_browser if open_page else None,
            cluster=_cluster(cluster, cluster_certs, insecure_cluster, require_sandbox),
        )
        result = cup.run(entered, rounds, settle=rule, max_games=max_games, options=options)
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
        if settled is not None and not settled.settled:
            echo(f"arena: not settled yet: {settled.describe_left()}", err=True)
        echo(f"report so far: {page}", err=True)
        sys.exit(130)
    games = result.before + result.played
    distinct = games - int((standings.board["games"] - standings.board["distinct"]).sum()) // 2
    if not quiet:
        from arena.report import terminal

        if result.before:
            echo(f"resumed: {result.before} games were already stored, {result.played} played now")
        echo(terminal.format_table(standings.board))
        for line in settled.describe_against() if settled is not None else ():
            echo(line)
    if distinct < games:  # said even when quiet: the run spent games that taught nothing
        echo(
            f"arena: {games - distinct} of {games} games repeated an earlier game exactly (the same bots on "
            f"the same sides, opening and moves): {distinct} distinct games, each counted once",
            err=True,
        )
    counted = f"{games} games" + (f", {distinct} distinct" if distinct < games else "")
    if settled is not None and settled.settled and not quiet:
        echo(f"settled after {counted}. {settled.rule.describe()}")
    elif settled is not None and not settled.settled:  # a warning even when quiet: the ranking is open
        why = result.stopped or "no more games could be played"
        say = f"arena: warning: not settled after {counted}" if quiet else f"not settled after {counted}"
        echo(f"{say} ({why}): {settled.describe_left()}", err=quiet)
    echo(f"report: {page}")


def _cluster(address: str | None, certs: Path | None, insecure: bool, require_sandbox: bool | None):  # type: ignore[no-untyped-def]
    """The cluster back end the flags ask for, or None to play on this machine."""
    if not address:
        return None
    from arena.lab import Cluster, trust

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
    # A scheduler without arena's guard is refused, unless the teacher says it runs somewhere only
    # trusted machines reach (docs/lab.md)
    guarded = not insecure and not os.environ.get(trust.UNGUARDED_ENV)
    return Cluster(address, certs=certs, insecure=insecure, require_sandbox=require_sandbox, guarded=guarded)


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
    from arena.stats.settle import Rule

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


@click.command("cluster-certs")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--machine",
    metavar="NAME",
    help="Add a worker certificate of that machine alone (worker-NAME.pem/.key), signed by FOLDER's "
    "authority; revoke it by writing NAME into the scheduler's FOLDER/revoked.",
)
def cluster_certs_cmd(folder, machine):  # type: ignore[no-untyped-def]
    """Make a class's certificate authority and the certificates of its cluster in FOLDER: the scheduler's,
    the workers' and the coordinator's (the machine that runs arena run); with --machine, one machine's own
    worker certificate."""
    from arena.lab.trust import TrustError, authority, make, make_machine

    try:
        written = make_machine(folder, machine) if machine else make(folder)
    except TrustError as e:
        raise click.ClickException(str(e)) from None
    for path in written:
        click.echo(str(path))
    if machine:
        click.echo(
            f"copy ca.pem and worker-{machine}.pem/.key to {machine} (as its worker.pem/.key)", err=True
        )
        return
    click.echo(
        f"keep {authority(folder) / 'ca.key'} to yourself (apart from {folder}, which the coordinator "
        "reads); copy ca.pem and scheduler.pem/.key to the scheduler's machine, ca.pem and worker.pem/.key "
        "to every lab machine (or one of its own: --machine NAME)",
        err=True,
    )


@click.command("sprt")
@click.argument("new")
@click.argument("base")
@click.option(
    "--elo0", type=float, default=SPRT_ELO0, show_default=True, help="H0: NEW is no better than this."
)
@click.option("--elo1", type=float, default=SPRT_ELO1, show_default=True, help="H1: NEW is better by this.")
@click.option("--alpha", type=float, default=SPRT_ALPHA, show_default=True, help="False-positive rate.")
@click.option("--beta", type=float, default=SPRT_BETA, show_default=True, help="False-negative rate.")
@click.option("--max-games", type=click.IntRange(2), metavar="N", help="Stop after N games, decided or not.")
@click.option(
    "--rules", "rules", type=RULES, help=f"{RULES_HELP} [default: {Settings().rules}, or the test's]."
)
@time_options(tournament=True)
@click.option(
    "--openings",
    metavar="N|FILE",
    help="Openings the pairs go through, once from each side: N generated from --seed, or a book FILE "
    f"[default: {Settings().openings}, or the test's].",
)
@seed_option(f"Seed of the openings [default: {Settings().seed}, or the test's].")
@click.option("--jobs", type=click.IntRange(1, 512), help="Games played in parallel [default: one per core].")
@bots_option("Folder where NEW and BASE are looked up.")
@click.option("--out", type=click.Path(path_type=Path), default="reports", show_default=True)
@click.option("--name", help="Where the test is stored: OUT/NAME [default: sprt-NEW-BASE].")
@click.option("--quiet", is_flag=True, help="Print only the result.")
@confinement_options
def sprt_cmd(  # type: ignore[no-untyped-def]
    new,
    base,
    elo0,
    elo1,
    alpha,
    beta,
    max_games,
    rules,
    clock,
    openings,
    seed,
    jobs,
    bots_dir,
    out,
    name,
    quiet,
    limits,
    read_only,
):
    """Test NEW against BASE (bot names in --bots, or paths to bots) in pairs of games until a sequential
    probability ratio test decides: H1, NEW is better by --elo1, or H0, it is no better than --elo0. Prints
    the LLR, its bounds, the Elo with its 95% interval and the five pair counts as it runs; the same command
    resumes it."""
    from arena.api import Tournament, entrants
    from arena.stats.sprt import Design

    try:
        design = Design(elo0, elo1, alpha, beta)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if new == base:
        raise click.UsageError(
            f"{new} and {base} are the same bot: an SPRT needs a new version and an old one"
        )
    # Before the store exists: a missing bot, or a grant of a private place, leaves nothing behind.
    grants = read_only_paths(read_only) or ()
    if _is_path(new) or _is_path(base):  # as `arena play` takes them: a path, or a name in --bots
        new, base, pair = _two_versions(new, base, bots_dir)
        found = entrants(pair, None, read_only=grants, private=[out])
    else:
        found = entrants(bots_dir, None, read_only=grants, private=[out])
    names = sorted(b.name for b in found.bots)
    for bot in (new, base):
        if bot not in names:
            raise click.UsageError(f"no bot {bot!r} in {bots_dir} (the bots: {', '.join(names)})")
    wanted = asked(rules, clock, limits, read_only, seed=seed)
    wanted |= openings_asked(openings)
    with Tournament(Path(out) / (name or f"sprt-{new}-{base}"), **wanted) as cup:
        say_read_only(cup.settings.read_only)
        building = None if quiet else lambda line: echo(f"arena: {line}", err=True)
        entered = cup.enter(found, on_build=building)  # the folder surveyed once, for the test and its play
        match = cup.match(new, base, entered, design, max_games)
        if not quiet:
            echo(design.describe())

        said: list[str] = []  # the last line printed: a line is printed once, also the last

        def progress(done: int, total: int, record: object) -> None:
            if not quiet and total and done == total:  # a batch is complete: the test is judged again
                line = match.status(cup.store.results()).line()
                if line not in said[-1:]:
                    echo(line)
                said.append(line)

        options = RunOptions(jobs=jobs, progress=progress)
        result = cup.sprt(new, base, entered, design, max_games=max_games, options=options)
        results = cup.store.results()
        final, played, repeats = match.status(results), match.played(results), match.repeats(results)
        why = (
            "the games repeat: more would teach nothing (give openings: --openings N)"
            if match.repeating(results)
            else "the cap of --max-games came first"
            if max_games
            else ""
        )
        page = cup.report()
    if result.interrupted:
        echo(f"arena: interrupted: {final.line()}; run the same command again to resume", err=True)
        sys.exit(130)
    if final.line() not in said[-1:] or quiet:
        echo(final.line())
    if repeats:
        echo(
            f"arena: warning: {repeats} of {played} games repeated an earlier game exactly (the same bots on "
            "the same sides, opening and moves: deterministic bots from one position); each counts once",
            err=True,
        )
    if final.decision is None:
        echo(f"not decided: {why}" if why else "not decided")
    echo(f"report: {page}")


def _is_path(given: str) -> bool:
    """Whether a bot named on the command line is a path to it rather than a name in --bots (find_bot)."""
    return "/" in given or given.endswith(".py") and Path(given).exists()


def _two_versions(new: str, base: str, bots_dir: Path) -> tuple[str, str, list[Bot]]:
    """NEW and BASE found as `arena play` finds them (a path, or a name in `bots_dir`), as bots of distinct
    names: two versions of one bot (v2/mybot.py against v1/mybot.py) play as mybot and mybot-base."""
    try:
        a, b = find_bot(new, bots_dir), find_bot(base, bots_dir)
    except BotError as e:
        raise click.UsageError(str(e)) from None
    if a.digest == b.digest:
        raise click.UsageError(
            f"{new} and {base} are the same code: an SPRT needs a new version and an old one"
        )
    if b.name == a.name:
        b = dataclasses.replace(b, name=f"{b.name}-base")
    return a.name, b.name, [a, b]


@click.command("report")
@tournament_options
def report_cmd(name, out):  # type: ignore[no-untyped-def]
    """Write the tournament's HTML report again from its store alone."""
    from arena.api import Tournament

    with Tournament.open(Path(out) / name) as cup:
        echo(f"report: {cup.report()}")


@click.command("replay")
@click.argument("game", type=click.IntRange(1))
@tournament_options
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


@click.command()
@tournament_options
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
