"""The `arena` command: flags to library calls, nothing more. Every error a user can cause is one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from arena.bots import BotError, find_bot
from arena.referee import GameRecord, Limits, Player, play_game
from arena.rules import RulesError, board_text, parse_rules


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


def _time_options(f):  # type: ignore[no-untyped-def]
    f = click.option(
        "--startup-ms",
        type=click.IntRange(0, 600_000),
        default=Limits().startup_ms,
        show_default=True,
        help="Extra time for the first move after a bot process starts (interpreters, JVMs).",
    )(f)
    f = click.option(
        "--move-time",
        "move_ms",
        type=click.IntRange(1, 3_600_000),
        default=Limits().move_ms,
        show_default=True,
        metavar="MS",
        help="Milliseconds a bot has for each move.",
    )(f)
    return f


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arena")
def cli() -> None:
    """Arena: Kalah bot tournaments. Bots are programs speaking protocol v1 (see protocol.md)."""


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--rules", "rules", type=RULES, default="kalah", show_default=True, help="Rules spec.")
@click.option("--games", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
@_time_options
@click.option(
    "--bots",
    "bots_dir",
    type=click.Path(path_type=Path),
    default="bots",
    show_default=True,
    help="Folder where bot names are looked up.",
)
@click.option("--json", "as_json", is_flag=True, help="Print each game record as one JSON line.")
@click.option("--show", is_flag=True, help="Draw the board after every move.")
def play(a, b, rules, games, move_ms, startup_ms, bots_dir, as_json, show):  # type: ignore[no-untyped-def]
    """Play GAMES games between bots A and B (names in --bots, or paths), alternating sides."""
    bot_a, bot_b = find_bot(a, bots_dir), find_bot(b, bots_dir)
    name_b = bot_b.name if bot_b.name != bot_a.name else f"{bot_b.name}-2"
    first, second = Player(bot_a), Player(bot_b, name_b)
    limits = Limits(move_ms=move_ms, startup_ms=startup_ms)
    score = {first.name: 0.0, second.name: 0.0}
    out = sys.stderr if as_json else sys.stdout

    def draw(pos, move, player) -> None:  # type: ignore[no-untyped-def]
        click.echo(f"{player.name} plays {move}", file=out)
        click.echo(board_text(pos, *names) + "\n", file=out)

    try:
        for game in range(games):
            south, north = (first, second) if game % 2 == 0 else (second, first)
            names = [f"South ({south.name})", f"North ({north.name})"]
            if show:
                click.echo(board_text(rules.initial(), *names) + "\n", file=out)
            record = play_game(rules, south, north, limits, on_move=draw if show else None)
            if record.winner is None:
                score[first.name] += 0.5
                score[second.name] += 0.5
            else:
                score[record.winner] += 1
            if as_json:
                click.echo(json.dumps(record.to_dict()))
            else:
                click.echo(describe(game + 1, record))
    finally:
        first.close()
        second.close()
    click.echo(
        f"{first.name} {score[first.name]:g} - {score[second.name]:g} {second.name} "
        f"after {games} game{'s' * (games != 1)} ({rules.spec})",
        file=out,
    )


def describe(number: int, r: GameRecord) -> str:
    """One human line per game."""
    head = f"game {number}: {r.south} (south) vs {r.north} (north): "
    if r.faulty:
        return head + f"{r.winner} wins, {r.faulty} forfeits ({r.reason}: {r.detail})"
    score = f"{r.south_store}-{r.north_store}"
    if r.swapped:
        score += f", {r.north} swapped to south"
    if r.winner is None:
        return head + f"draw {score}"
    return head + f"{r.winner} wins {score}" + (" (early finish)" if r.reason == "early" else "")


def main() -> None:
    """Entry point: click errors and our own become one line on stderr and exit status 2."""
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("arena: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        hint = ""
        if isinstance(e, click.UsageError) and e.ctx is not None:
            hint = f" (see '{e.ctx.command_path} --help')"
        click.echo(f"arena: error: {e.format_message()}{hint}", err=True)
        sys.exit(e.exit_code)
    except (BotError, RulesError) as e:
        click.echo(f"arena: error: {e}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("arena: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
