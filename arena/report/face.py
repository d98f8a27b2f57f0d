"""The report's parts for another page to show: its standings and head-to-head matrix, a bot's page, and its
replay viewer for one game, drawn by the report's own templates and script, for a viewer who may not read
everything.

The class server (arena/server/) shows its ladder and its games with these, so that a class sees the face
the report of `arena run` has, not a second one. What a viewer may read of the bots' own words (stderr, and
what a fault quotes of an answer) is the caller's to say, in a `Viewer`: the report reads only the store and
what it is given, and never knows who is signed in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

from arena.game.rules import parse_rules
from arena.match.record import GameRecord
from arena.report import charts, look
from arena.report.botpages import BotPage, FaultKind, Links, Opponent, Result, bot_pages
from arena.report.games import REASON_ORDER, Think, encode
from arena.report.page import RUN_FROM, bot_href, form, leaderboard_rows, matrix_rows
from arena.report.replay import Replay, replay
from arena.stats import ratings
from arena.store import queries
from arena.store.writer import Store


def _everyone(bot: str) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who a page is for: whose own words (stderr, the answer a fault quotes, the lines that reproduce it)
    it may show, where its replay's "back" link leads, and where its author runs a bot."""

    sees: Callable[[str], bool] = _everyone  # the owner of a tournament (a teacher) sees every bot's
    back: str = "#games"
    back_text: str = "games"
    run_from: str = RUN_FROM  # where a fault's reproduce command is run (a class's: the author's folder)
    titled: bool = False  # the page around a game's replay gives its title (the viewer's own is hidden)


@cache  # one environment, so that its templates are compiled once a process, not once a page
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("arena.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def standings(
    store: Store, standings: ratings.Standings | None = None, bots: Callable[[str], str] | None = None
) -> Markup:
    """The leaderboard and the head-to-head matrix as the report draws them, without the authors' names
    (what every member of a class may see) and without the report's links to its game list, which a page of
    its own does not have; `bots`: where a bot's name leads (its page, `bot_page`), if anywhere."""
    standings = standings or ratings.standings(store)
    board = standings.board
    ranked = board[board["unranked"] == ""].assign(author="")
    styles = {int(bot): charts.style(k) for k, bot in enumerate(board["id"])}
    variety = queries.pair_variety(store, standings.field)
    names = {int(bot): str(name) for bot, name in zip(board["id"], board["bot"], strict=True)}
    return Markup(
        _env()
        .get_template("parts.html")
        .render(
            places=leaderboard_rows(ranked, styles, form(store, standings.field, names)),
            matrix=matrix_rows(board, standings.pairs, variety, link=False),
            adaptive=store.stopping() is not None,
            links=bots is not None,
            bot_href=bots or bot_href,
        )
    )


def bot_page_data(
    store: Store,
    standings: ratings.Standings,
    history: ratings.History | None = None,
    think: dict[int, Think] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every bot's page of the report (botpages.py) as plain data, by name, for `bot_page` to draw: made
    where the games are rated (the class server's worker), drawn where a viewer asks. It holds the bots'
    own words: the viewer's privacy is applied when it is drawn. `history`: the ratings' as the caller
    rated them (a ladder's kept state), else a pass over the field's games; `think`: each bot version's
    think times (games.think_times), for its chart (none without)."""
    styles = {int(bot): charts.style(k) for k, bot in enumerate(standings.board["id"])}
    history = history or ratings.rating_history(store, standings.field)
    pages = bot_pages(store, standings, history, think, styles)
    return {page.name: dataclasses.asdict(page) for page in pages}


def bot_page(data: dict[str, Any], viewer: Viewer, links: Links) -> Markup:
    """A bot's page as the report draws it, from `bot_page_data`'s data, for `viewer`: every fault's reason
    and detail, and what the bot said in it only where `viewer.sees` the bot; its links lead where `links`
    say (the report's own lead within its page)."""
    faults = tuple(FaultKind(**k) for k in data["faults"])
    if not viewer.sees(str(data["name"])):
        faults = tuple(dataclasses.replace(k, said="") for k in faults)
    charts_ = {key: Markup(data[key]) for key in ("think", "margins", "rating_chart")}
    # a page made before KGP's random moves were counted has none, nor one made before analyses were
    data = {"random_moves": "", "analysed": (), **data}
    opponents = tuple(Opponent(**o) for o in data["opponents"])
    recent = tuple(Result(**r) for r in data.get("recent", ()))  # a page stored before had none
    # "distinct": a page's data stored before it was counted had no repeats counted apart
    page = BotPage(
        **{
            "distinct": data["games"],
            **data,
            **charts_,
            "opponents": opponents,
            "faults": faults,
            "recent": recent,
        }
    )
    return Markup(_env().get_template("botpage.html").render(b=page, to=links, alone=True))


def style() -> Markup:
    """The style the parts are drawn in: the site's one stylesheet (look.py), as CSS."""
    return look.stylesheet()


def game(
    record: GameRecord,
    game_id: int,
    viewer: Viewer,
    round_no: int = 0,
    shown: Replay | None = None,
    analysis: dict[str, Any] | None = None,
) -> Markup:
    """One game's replay in the report's viewer (its board, controls, moves and fault box), with the data it
    draws inline: the bots' words only where `viewer.sees` allows, a fault's reason and detail for all.
    `shown`: the game replayed by the caller, who knows where its bots are (for the reproduce command);
    `analysis`: its analysis as the report's viewer draws it (marked.encode), if it has one."""
    rules = parse_rules(record.rules)
    shown = shown or replay(record, rules=rules)
    data = encode(shown, record)
    fault = data.get("x")
    if fault and not viewer.sees(str(fault["bot"])):
        hidden = {"detail": record.detail, "stderr": "", "lines": [], "cmd": "", "note": "", "private": True}
        data["x"] = {**fault, **hidden}
    reason = str(record.reason)
    reasons = [str(r) for r in REASON_ORDER]
    if reason not in reasons:
        reasons.append(reason)
    listed = {
        "block": game_id + 1,  # one block of its own: the page holds it, the viewer never loads one
        "pits": rules.pits,
        "rules": rules.spec,
        "start": list(shown.start.board),
        "bots": [{"id": 0, "name": record.south, "label": record.south, "current": True},
                 {"id": 1, "name": record.north, "label": record.north, "current": True}],
        "reasons": reasons,
        "count": 1,
        "id": [game_id],
        "round": [round_no],
        "s": [0],
        "n": [1],
        "w": [2 if not record.winner else (0 if record.winner == record.south else 1)],
        "x": [0 if not record.faulty else (1 if record.faulty == record.south else 2)],
        "r": [reasons.index(reason)],
        "ss": [record.south_store],
        "ns": [record.north_store],
        "p": [len(record.moves)],
        "o": [len(record.opening)],
        "sw": [int(shown.swap_at >= 0)],
    }  # fmt: skip
    config: dict[str, Any] = {"list": "", "live": False, "stamp": "", "liveSrc": "", "game": game_id}
    config["analyses"] = {str(game_id): analysis} if analysis else {}
    return Markup(
        _env()
        .get_template("game.html")
        .render(config=config, listed=listed, block={str(game_id): data}, back=viewer.back,
                back_text=viewer.back_text, run_from=viewer.run_from, titled=viewer.titled)
    )  # fmt: skip
