"""The student's commands: `arena new`, `arena check`, `arena play` (a bot against a bot, or against you)
and `arena solve`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from arena.cli.options import (
    RULES,
    RULES_HELP,
    asked,
    bots_option,
    confinement_options,
    echo,
    openings_asked,
    say_read_only,
    seed_option,
    time_options,
)
from arena.match.bots import BotError, find_bot
from arena.report.terminal import game_line
from arena.student.new import LANGUAGES
from arena.tournament.settings import Settings, resolve

if TYPE_CHECKING:
    from arena.api import Match
    from arena.match.bots import Bot
    from arena.match.referee import Seat


@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--rules", "rules", type=RULES, default=Settings().rules, show_default=True, help=RULES_HELP)
@click.option("--games", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
@time_options(tournament=False)
@bots_option("Folder where bot names are looked up.")
@click.option(
    "--openings",
    metavar="N|FILE",
    help="Openings each pair of games plays, once from each side: N generated from --seed (0: every game "
    "from the start), or a book FILE [default: one per pair of games, at most "
    f"{Settings().openings}; a single game, or one "
    "with you in it, from the start].",
)
@seed_option(f"Seed of the generated openings [default: {Settings().seed}].")
@click.option("--json", "as_json", is_flag=True, help="Print each game record as one JSON line.")
@click.option("--show", is_flag=True, help="Draw the board after every move (always, when you play).")
@confinement_options
def play(  # type: ignore[no-untyped-def]
    a,
    b,
    rules,
    games,
    clock,
    bots_dir,
    openings,
    seed,
    as_json,
    show,
    limits,
    read_only,
):
    """Play GAMES games between bots A and B (names in --bots, or paths), alternating sides.

    A or B may be `human`: you play that side at the terminal (q quits, ? for help). The name `human` always
    means you; a bot named human plays by its path (bots/human.py)."""
    from arena.api import Match
    from arena.student.human import Quit

    out = sys.stderr if as_json else sys.stdout
    seat_a, seat_b = _seats(a, b, bots_dir, out)
    wanted = asked(rules, clock, limits, read_only, seed=seed)
    wanted |= openings_asked(openings)
    if openings is None:  # two deterministic bots repeat one pair of games: a series goes through openings
        wanted["openings"] = min(Settings().openings, (games + 1) // 2) if games > 1 else 0
    with Match(seat_a, seat_b, resolve(None, wanted)) as match:
        say_read_only(match.settings.read_only)
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
            echo(game_line(game + 1, record))


SOLVE_SECONDS = 60.0  # `arena solve` gives up after this long unless told otherwise


@click.command("solve")
@click.option("--rules", "rules", type=RULES, default=Settings().rules, show_default=True, help=RULES_HELP)
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


@click.command("new")
@click.argument("name")
@click.option(
    "--lang", type=click.Choice(LANGUAGES), default="python", show_default=True, help="The bot's language."
)
@click.option(
    "--protocol",
    type=click.Choice(("v1", "kgp")),
    default="v1",
    show_default=True,
    help="v1: arena's own (stdin and stdout); kgp: an agent that connects (the Kalah Game Protocol).",
)
@bots_option("Folder to put the bot in (made if missing).")
def new_cmd(name, lang, protocol, bots_dir):  # type: ignore[no-untyped-def]
    """Write a starter bot NAME into the bots folder: it plays greedily, watches its clock, and its
    comments say what each line of the protocol means and where your own strategy goes."""
    import tomllib

    from arena.match.bots import MANIFEST
    from arena.student.new import new_bot

    path = new_bot(name, lang, bots_dir, protocol)
    files = sorted((f.name for f in path.iterdir()), key=lambda f: (f != MANIFEST, f))
    kind = "KGP agent" if protocol == "kgp" else "bot"
    echo(f"made {path}: a greedy {lang} {kind} for you to improve ({', '.join(files)})")
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


@click.command("check")
@click.argument("bot")
@click.option("--rules", "rules", type=RULES, default=Settings().rules, show_default=True, help=RULES_HELP)
@time_options(tournament=False)
@bots_option("Folder where bot names are looked up (and greedy and random, if arena has none of its own).")
@click.option("--json", "as_json", is_flag=True, help="Print the checklist as one JSON object.")
@confinement_options
def check_cmd(  # type: ignore[no-untyped-def]
    bot,
    rules,
    clock,
    bots_dir,
    as_json,
    limits,
    read_only,
):
    """Check BOT (a name in --bots, or a path) before a tournament: it plays a few short games against
    greedy and random, confined as in `arena run`, and prints a checklist of what the referee would hold
    against it (protocol, startup, think time, memory, processes, QUIT), each problem with the lines that
    reproduce it by hand. Exit status 1 if it would forfeit (or stays after QUIT), 0 with warnings only."""
    from arena.student.check import ARENA_BOTS, check, reference_bots, render

    found = find_bot(bot, bots_dir)
    wanted = asked(rules, clock, limits, read_only)
    references = reference_bots((ARENA_BOTS, Path(bots_dir)))
    report = check(found, resolve(None, wanted), references, say=lambda text: echo(text, err=True))
    echo(json.dumps(report.to_dict()) if as_json else render(report))
    sys.exit(1 if report.fails else 0)
