"""A student's own page on a real `arena serve` through a day of the class: their place with its range and
odds, their record against each classmate and reference, their games by version; after the freeze the
frozen version and the final, with the upload form gone; after release their place and their pass or fail
by the teacher's rule, with their games against each reference."""

from __future__ import annotations

import html
import re
import sqlite3
import time

import pytest
import requests

from tests.server_kit import Server, need_extra
from tests.test_server_e2e import FIRST_LEGAL, Student, make_class, until

need_extra()
pytestmark = pytest.mark.slow


def page(student: Student, path: str = "/me") -> str:
    """The page's text; a GET sent on a kept-alive connection the server had just closed is sent again,
    as a browser does (gunicorn's threads close idle ones)."""
    for attempt in range(3):
        try:
            return html.unescape(student.http.get(student.server.url + path, timeout=30).text)
        except requests.ConnectionError:
            if attempt == 2:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def rows(text: str, version: str = "") -> list[str]:
    """The versions of the student's listed games."""
    return re.findall(r'<tr class="my-game" data-version="([^"]*)">', text)


def test_a_students_own_view_through_the_day(server: Server) -> None:
    people = make_class(server, server.start(), ["ann", "ben"])
    teach, ann, ben = people["teach"], people["ann"], people["ben"]
    settings = {"visibility": "open", "upload_kib": "1024", "per_day": "20", "undo_seconds": "1",
                "rule_wins": "1", "rule_games": "2", "rule_reference": "greedy",
                "scrimmages_per_day": "1"}  # fmt: skip
    teach.post("/teacher/settings", settings, page="/teacher")
    teach.post("/teacher/references", {"greedy": "on"}, page="/teacher")
    ann.upload("ann.py", FIRST_LEGAL.encode())
    ben.upload("ben.py", FIRST_LEGAL.replace("thinking about", "BEN-THINKS").encode())
    until("the checks", lambda: ann.versions() == ["passed"] and ben.versions() == ["passed"], 240)

    def placed() -> str | None:
        text = page(ann)
        met = "greedy (reference)" in text and "<td>ben</td>" in text  # both opponents, whichever came first
        return text if "Place <strong>" in text and met and rows(text) else None

    text = until("ann's place on the ladder", placed, 240)
    assert re.search(r"Elo -?\d+ \(95% between -?\d+ and -?\d+\)", text), "Elo in whole numbers"
    assert re.search(r'id="my-odds">Chances: place \d \d+%', text)
    against = text[text.index('id="against"') :]
    assert re.search(r"<td>ben</td><td>\d+-\d+-\d+</td>", against)
    assert set(rows(text)) == {"v1"}
    assert 'id="upload"' in text and "Playing on the ladder: version 1" in text

    ann.upload("ann2.py", (FIRST_LEGAL + "# the second\n").encode())
    until("ann's v2 checked", lambda: ann.versions() == ["passed", "passed"], 240)
    ann.post("/me/choose", {"version": _pk(page(ann), 2)}, page="/me")  # the newest may already play
    until("games of ann's v2", lambda: "v2" in rows(page(ann)), 240)
    # each version's games by its filter, however many of v2's have filled the latest thirty since
    assert set(rows(page(ann, "/me?version=v1"))) == {"v1"}
    assert set(rows(page(ann, "/me?version=v2"))) == {"v2"}
    assert re.search(r'id="version-filter">.*\?version=v2.*\?version=v1', page(ann)), "newest version first"

    asked = ann.post("/me/scrimmages", {"version": _pk(page(ann), 2), "opponent": "ben"}, page="/me")
    ident = re.search(r"/scrimmages/(\d+)$", asked.url).group(1)  # type: ignore[union-attr]

    def played() -> str | None:
        text = page(ann, f"/scrimmages/{ident}")
        return text if 'data-status="done"' in text else None

    text = until("the scrimmage", played, 240)
    games = re.findall(rf'<tr class="scrimmage-game"><td><a href="/scrimmages/{ident}/games/(\d+)">', text)
    assert len(games) == 2, "a game from each side"
    for game in games:
        replay = page(ann, f"/scrimmages/{ident}/games/{game}")
        assert "<h2>stderr of ann</h2>" in replay and "thinking about" in replay
        assert "BEN-THINKS" not in replay, "the opponent's stderr is its author's"
        assert "<h2>stderr of ben</h2>" not in replay
    store = server.class_dir / "scrimmages" / ident / "games" / "arena.sqlite"
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM games").fetchone()[0] == 2
    with sqlite3.connect(server.class_dir / "ladder" / "arena.sqlite") as db:
        paths = [p for (p,) in db.execute("SELECT path FROM bots")]
    assert paths and not any("scrimmages" in p for p in paths), "the ladder never saw the scrimmage"
    refused = ann.post("/me/scrimmages", {"version": _pk(page(ann), 1), "opponent": "ben"}, page="/me")
    assert "you have asked for 1 scrimmage in the last 24 hours, the class&#x27;s limit" in refused.text

    teach.post("/teacher/freeze", {"when": "now", "confirm": "yes"}, page="/teacher")
    text = page(ann)
    assert 'id="upload"' not in text and "Playing on the ladder" not in text
    assert "Your version 2 is frozen: it plays the final." in text
    assert re.search(r'id="final-phase">(The final starts at|The final is being played)', text)

    def final_done() -> bool:
        return '<span id="final-state">done</span>' in page(teach, "/teacher")

    until("the final", final_done, 400, 2)
    text = page(ann)
    assert "your result is shown here once the teacher releases it" in text
    assert 'id="grade"' not in text

    teach.post("/teacher/settings", {**settings, "visibility": "released"}, page="/teacher")
    for student, name in ((ann, "ann"), (ben, "ben")):
        text = page(student)
        grade = re.search(r'id="grade" class="\w+"><strong>(pass|fail)</strong>: the rule is that', text)
        assert grade and "a bot wins at least 1 of 2 against greedy" in text, name
        assert re.search(r'id="final-place">Place \d', text), name
        assert re.search(r"<td>greedy</td><td>\d+-\d+-\d+</td>", text), name
        played = re.findall(r'<tr class="reference-game"><td><a href="/final/references/games/(\d+)">', text)
        assert len(played) == 4, f"{name}: the rule's 2 games against each reference bot"
        replay = page(student, f"/final/references/games/{played[0]}")
        assert f"<h2>stderr of {name}</h2>" in replay and "stderr of greedy</h2>" not in replay


def _pk(text: str, number: int) -> str:
    found = re.search(rf'<a href="/versions/(\d+)">v{number}</a>', text)
    assert found, text[-2000:]
    return found.group(1)
