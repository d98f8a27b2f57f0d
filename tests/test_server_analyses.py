"""A game's analysis asked for on its page of the real server (`arena serve` on 127.0.0.1, its workers): its
author asks, it is queued, the scrimmages worker analyses it, and the page then holds the report's viewer
with the evaluation and each move's mark; another student is refused, a second ask while queued is refused,
and a student over the class's daily limit is refused, each in one line on the page.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import Server, need_extra

need_extra()
pytest.importorskip("requests", reason="the tests' HTTP client is not installed: pip install requests")

from tests.test_server_e2e import RANDOM, make_class, store_games, until  # noqa: E402

pytestmark = pytest.mark.slow


def said(page: str) -> list[str]:
    """The page's one-line messages (the site's message boxes), as text."""
    return [html.unescape(m) for m in re.findall(r'<div class="msg [^"]*" role="status">([^<]*)</div>', page)]


def analysis_on(page: str) -> dict[str, Any] | None:
    """The analysis the page's viewer draws (its inline configuration), or None."""
    found = re.search(r"window\.ARENA = (\{.*?\});</script>", page)
    assert found, "the page holds the report's viewer"
    config = json.loads(found.group(1))
    return next(iter(config.get("analyses", {}).values()), None)


def plies_of(class_dir: Path, game: int) -> int:
    """How many plies the ladder's stored game has, the opening's included."""
    from arena.match.record import GameRecord
    from arena.store import queries
    from arena.store.writer import Store

    with Store(class_dir / "ladder" / "arena.sqlite", create=False) as store:
        return len(GameRecord.from_dict(queries.game_record(store, game) or {}).plies)


def test_an_author_asks_the_worker_analyses_others_are_refused(server: Server) -> None:
    people = make_class(server, server.start(), ["ann", "ben", "cat"])
    for name in ("ann", "ben"):
        people[name].upload(f"{name}.py", RANDOM)
    until("the checks", lambda: all(people[n].versions() == ["passed"] for n in ("ann", "ben")), 240)
    until(
        "two ladder games",
        lambda: (
            (server.class_dir / "ladder" / "arena.sqlite").exists() and store_games(server.class_dir)[0] >= 2
        ),
        240,
    )
    ann, cat = people["ann"], people["cat"]
    page = ann.http.get(server.url + "/games/1", timeout=30).text
    assert 'id="ask-analysis"' in page and analysis_on(page) is None, "not analysed: offered to its author"
    other = cat.http.get(server.url + "/games/1", timeout=30).text
    assert 'id="ask-analysis"' not in other, "not offered to another student"

    refused = cat.post("/games/1/analyse", {}, page="/games/1").text
    assert said(refused) in (
        [f"only the authors of {a} and {b} and the teacher may ask for its analysis"]
        for a, b in (("ann", "ben"), ("ben", "ann"))
    )
    asked = ann.post("/games/1/analyse", {}, page="/games/1").text
    assert said(asked) == ["game 1 is queued for analysis: its marks appear here when done"]
    again = people["ben"].post("/games/1/analyse", {}, page="/games/1").text
    finished = analysis_on(again) is not None  # the worker may have been quicker than the second ask
    assert said(again) == (
        ["game 1 is analysed already: its marks are on its page"]
        if finished
        else ["game 1 is queued for analysis already: its marks appear on its page when done"]
    )

    def analysed() -> dict[str, Any] | None:
        return analysis_on(ann.http.get(server.url + "/games/1", timeout=30).text)

    found = until("the worker's analysis", analysed, 240, 2)
    plies = plies_of(server.class_dir, 1)
    assert len(found["g"]) == plies + 1, "a value for every position, the start to the end"
    assert len(found["m"]) == plies, "a mark for every ply"
    assert found["x"][-1] == 1, "the game's end is exact"
    assert {m[0] for m in found["m"]} <= {"BEST", "SEEDS", "WIN_TO_DRAW", "WIN_TO_LOSS", "DRAW_TO_LOSS"}
    assert found["t"][1], "the turning point in words"
    assert (server.class_dir / "ladder" / "analyses.sqlite").is_file(), "kept beside the ladder's store"
    shown = ann.http.get(server.url + "/games/1", timeout=30).text
    assert 'id="ask-analysis"' not in shown, "an analysed game is not offered again"
    assert analysis_on(cat.http.get(server.url + "/games/1", timeout=30).text) == found, (
        "every reader sees it"
    )

    bot_page = html.unescape(cat.http.get(server.url + "/ladder/bots/ann", timeout=30).text)
    table = re.search(r'<table class="analysed" id="analysed-ann">(.*?)</table>', bot_page, re.S)
    assert table, "ann's bot page tells what her analysed game says, at once"
    first = re.findall(r"<td[^>]*>([^<]*)</td>", table.group(1))
    assert first[:2] == ["ann", "1"], "her row: one game analysed"

    teacher = people["teach"]
    teacher.post("/teacher/settings", {"analyses_per_day": "1"}, page="/teacher")
    over = ann.post("/games/2/analyse", {}, page="/games/2").text
    assert said(over) == [
        "you have asked for 1 analysis in the last 24 hours, the class's limit: the next one when the oldest "
        "of them is a day old"
    ]
    assert "At most 1 a day." in over
    mine = teacher.post("/games/2/analyse", {}, page="/games/2").text
    assert said(mine) == ["game 2 is queued for analysis: its marks appear here when done"], (
        "no limit for her"
    )
