"""`arena analyse`: where a game was lost, every move marked by what it cost (arena/game/analysis.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from arena.cli.options import echo, tournament_options
from arena.game.analysis import Budget, Searched
from arena.game.rules import IllegalMove
from arena.match.record import GameRecord


def _records_in(path: Path) -> list[dict[str, Any]]:
    """The game records of a replay file: JSON lines as `arena play --json` and `arena export` write them
    (or one JSON record)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise click.ClickException(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            GameRecord.from_dict(row)
        except (ValueError, TypeError, KeyError) as e:
            raise click.ClickException(
                f"{path} line {number} is not a game record as 'arena play --json' writes ({e})"
            ) from None
        rows.append(row)
    if not rows:
        raise click.ClickException(f"{path} holds no game record")
    return rows


@click.command("analyse")
@click.argument("game")
@tournament_options
@click.option(
    "--time-per-position",
    "per_position",
    type=click.FloatRange(0.01),
    default=Budget().position,
    show_default=True,
    help="Seconds the search may spend on one position.",
)
@click.option(
    "--time-per-game",
    "per_game",
    type=click.FloatRange(0.1),
    default=Budget().game,
    show_default=True,
    help="Seconds for the whole game, shared among its positions.",
)
@click.option(
    "--depth",
    type=click.IntRange(1),
    help="Also stop each search at this many moves deep: the same marks on any machine.",
)
@click.option("--again", is_flag=True, help="Analyse again, though the game was analysed before.")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as one JSON line a game.")
def analyse_cmd(game, name, out, per_position, per_game, depth, again, as_json):  # type: ignore[no-untyped-def]
    """Where was the game lost? Values every position of a game with the exact solver (an estimate, with its
    depth, where the search cannot finish in the budget) and marks every move: best, seeds lost, or a won
    (or drawn) game lost; then names the turning point.

    GAME is a stored game's number (its number on the page, `id` in `arena export`) in tournament NAME, or a
    replay file of game records (`arena play --json`, `arena export`). The analysis is kept beside the
    store (or the file): a game is analysed once. Every rule set is analysed: Kalah and its options,
    early, the pie rule and relay."""
    from arena.report.analysed import analysis_text, turning_words
    from arena.store.analyses import AnalysesError, kept_or_analysed

    budget = Budget(per_position, per_game, depth)
    if game.isdigit():
        folder, rows = Path(out) / name, [_stored(Path(out) / name, int(game), name)]
    else:
        path = Path(game)
        if not path.is_file():
            raise click.UsageError(f"GAME {game!r} is neither a game number nor a replay file")
        folder, rows = path.resolve().parent, _records_in(path)
    for row in rows:
        record = GameRecord.from_dict(row)
        ident = row.get("id")
        title = (
            f"game {ident}: " if ident is not None else "game: "
        ) + f"{record.south} (south) vs {record.north} (north), {record.rules}"
        try:
            analysis, kept = kept_or_analysed(
                folder, record, ident, budget, None if as_json else _progress(), again
            )
        except IllegalMove as e:
            raise click.ClickException(f"{title}: a stored move does not replay ({e})") from None
        except AnalysesError as e:
            raise click.ClickException(str(e)) from None
        if as_json:
            echo(
                json.dumps(
                    {"game": ident, **analysis.to_dict(), "turning_point": turning_words(record, analysis)}
                )
            )
        else:
            echo(analysis_text(record, analysis, title, kept))
    if game.isdigit():
        _onto_the_page(folder)


def _onto_the_page(folder: Path) -> None:
    """The report's replay shows the marks on its next load (games/analyses.js beside the page)."""
    from arena.api import Tournament
    from arena.report.marked import write_analyses

    with Tournament.open(folder) as cup:
        write_analyses(cup.store, folder)


def _stored(folder: Path, game: int, name: str) -> dict[str, Any]:
    from arena.api import Tournament
    from arena.store import queries

    with Tournament.open(folder) as cup:
        row = queries.game_record(cup.store, game)
    if row is None:
        raise click.ClickException(f"tournament {name!r} has no game {game} (see 'arena export' for the ids)")
    return row


def _progress():  # type: ignore[no-untyped-def]
    """A line on stderr at most once a second: how far the search back from the game's end has got."""
    last = [0.0]

    def told(s: Searched) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0 or s.done == s.total:
            last[0] = now
            echo(
                f"analysing: {s.done} of {s.total} positions (back from the end), {s.seconds:.0f} s; "
                f"after ply {s.index}: {s.value.words()}",
                err=True,
            )

    return told
