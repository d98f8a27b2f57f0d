"""The look the report and the class server share, read as a person reads it: one stylesheet (a file of the
package the report inlines and `arena serve` serves), each bot's latest results beside its place, and a
student's own page that says where they stand and what to do next. The expected figures are counted here
from the stores' own games with SQL, not by the code that draws them."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pagetext import findings, visible
from tests.server_kit import Server, need_extra, setup_django
from tests.test_server_sweep import BOTS, _version

ROOT = Path(__file__).resolve().parent.parent
SHEET = ROOT / "arena" / "report" / "static" / "arena.css"

# Every game's two sides, with the result from that side, in schedule order (the store's own columns).
SIDES = """
WITH sides AS (
  SELECT g.id, g.round, g.ordinal, s.name AS bot, n.name AS opp, g.winner_id = g.south_id AS won,
         g.winner_id IS NULL AS drew, g.reason FROM games g JOIN bots s ON s.id = g.south_id
         JOIN bots n ON n.id = g.north_id
  UNION ALL
  SELECT g.id, g.round, g.ordinal, n.name, s.name, g.winner_id = g.north_id, g.winner_id IS NULL, g.reason
         FROM games g JOIN bots s ON s.id = g.south_id JOIN bots n ON n.id = g.north_id)
SELECT id, bot, opp, CASE WHEN drew THEN 'D' WHEN won THEN 'W' ELSE 'L' END, reason FROM sides
ORDER BY round, ordinal, id
"""


def _sides(store: Path) -> list[tuple[int, str, str, str, str]]:
    with sqlite3.connect(store) as db:
        return [tuple(row) for row in db.execute(SIDES)]  # type: ignore[misc]


def _latest(store: Path, count: int) -> dict[str, str]:
    """Each bot's latest `count` results, oldest first, as letters."""
    found: dict[str, str] = {}
    for _, bot, _, result, _ in _sides(store):
        found[bot] = (found.get(bot, "") + result)[-count:]
    return found


def _forms(page: str) -> dict[str, str]:
    """The leaderboard's rows: bot name -> the letters of its "recent" cell."""
    rows = re.findall(r'<tr class="[^"]*" data-bot="([^"]+)">(.*?)</tr>', page, re.S)
    return {bot: "".join(re.findall(r'class="res ([WDL])"', row)) for bot, row in rows}


# --- the report and `arena serve`, as a user runs them ---------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`arena run` of three bundled bots, one round."""
    base = tmp_path_factory.mktemp("look")
    (base / "bots").mkdir()
    for name in ("greedy", "random", "alphabeta"):
        shutil.copy(ROOT / "bots" / f"{name}.py", base / "bots" / f"{name}.py")
    args = ["run", "--rounds", "2", "--move-time", "100", "--out", str(base / "reports"), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-m", "arena", *args, "--no-sandbox"], cwd=base, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return base


@pytest.mark.slow
def test_the_report_and_the_server_use_one_stylesheet(report: Path, tmp_path: Path) -> None:
    """The report inlines the package's arena.css; `arena serve` links the same file from every page and
    serves it; neither page carries style rules of its own beside it."""
    need_extra()
    sheet = SHEET.read_text(encoding="utf-8")
    page = (report / "reports" / "default" / "index.html").read_text()
    styles = re.findall(r"(?s)<style>\n?(.*?)\n?</style>", page)
    assert styles == [sheet], "the report's one <style> is the package's stylesheet"

    server = Server(tmp_path / "class")
    server.start()
    try:
        with urllib.request.urlopen(f"{server.url}/signin", timeout=30) as answer:
            signin = answer.read().decode()
        links = re.findall(r'<link rel="stylesheet" href="([^"]+)">', signin)
        assert links == ["/static/arena.css"] and "<style" not in signin, signin[:600]
        with urllib.request.urlopen(f"{server.url}{links[0]}", timeout=30) as answer:
            assert answer.headers.get_content_type() == "text/css"
            assert answer.read().decode() == sheet
    finally:
        server.stop()


@pytest.mark.slow
def test_the_leaderboard_shows_each_bots_latest_results(report: Path) -> None:
    """Each row's "recent" cell: the bot's last five results from its own side, oldest first."""
    folder = report / "reports" / "default"
    page = (folder / "index.html").read_text()
    expected = _latest(folder / "arena.sqlite", 5)
    assert _forms(page) == expected and len(expected) == 3
    assert all(len(letters) == 5 for letters in expected.values())
    # a bot's page: its last ten, each a link to that game's replay
    for bot, letters in _latest(folder / "arena.sqlite", 10).items():
        section = page[page.index(f'id="bot-{bot}"') :]
        section = section[: section.index("</section>")]
        shown = re.findall(r'<a class="res ([WDL])" href="#game-(\d+)/end"', section)
        assert "".join(r for r, _ in shown) == letters, bot
    assert findings(page, zoned=True) == []


# --- a student's own page on the class server -------------------------------------------------------------


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A class whose ladder has played one round: alice speaks, bob crashes, carol stalls (the sweep's
    bots), the greedy reference; dave has uploaded nothing and erin's only version failed its check."""
    need_extra()
    from django.core.management import call_command
    from django.test import Client

    setup_django(tmp_path_factory.mktemp("look") / "class")
    call_command("flush", interactive=False, verbosity=0)
    from django.conf import settings

    from arena.api import Tournament
    from arena.match.clock import TimeControl
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom, Status
    from arena.server.people import members as accounts
    from arena.server.standings import field as fields
    from arena.server.standings import ladder as ladders
    from arena.tournament.settings import Settings

    where = ClassDir(Path(settings.ARENA_CLASS_DIR))
    for folder in (where.bots, where.ladder, where.submissions):
        shutil.rmtree(folder, ignore_errors=True)
    where.make()
    classroom = Classroom.objects.create(name="Look", references=["greedy"])
    members = {n: accounts.add_member(n, f"a long password of {n}") for n in (*BOTS, "dave", "erin")}
    for name, source in BOTS.items():
        _version(where, classroom, members[name], source)
    failed = _version(where, classroom, members["erin"], "raise SystemExit(1)\n")
    failed.status = Status.FAILED
    failed.save()
    members["erin"].active = None
    members["erin"].save()
    fields.sync(where.bots, fields.wanted(where, classroom))
    with Tournament(where.ladder, Settings(clock=TimeControl(move_ms=150), openings=0)) as cup:
        entered = cup.enter(where.bots)
        ladders.remember_versions(
            where.ladder, {b.name: b.digest for b in entered.bots}, fields.versions(where.bots)
        )
        cup.run(where.bots, rounds=1)
        ladders.write_snapshot(cup, "settled: waiting for a new version", True)
    clients = {}
    for name, member in members.items():
        clients[name] = Client()
        clients[name].force_login(member.user)
    yield {"where": where, "clients": clients, "failed": failed, "classroom": classroom}
    for folder in (where.bots, where.ladder, where.submissions):
        shutil.rmtree(folder, ignore_errors=True)
    where.make()


def _next(client: Any) -> tuple[str, str]:
    """The "Next:" line of the member's own page as text, and where its link leads ('' if nowhere)."""
    page = client.get("/me").content.decode()
    assert findings(page, zoned=True) == []
    found = re.search(r'(?s)<p class="next" id="next">(.*?)</p>', page)
    assert found, "no next step on the page"
    href = re.search(r'href="([^"]+)"', found.group(1))
    return visible(found.group(1)).strip(), href.group(1) if href else ""


@pytest.mark.slow
def test_a_students_page_says_where_they_stand_and_what_to_do_next(ladder: dict[str, Any]) -> None:
    clients, store = ladder["clients"], ladder["where"].ladder / "arena.sqlite"
    said, href = _next(clients["dave"])
    assert said.startswith("Next: Upload your bot below") and href == ""
    said, href = _next(clients["erin"])
    assert said.startswith("Next: Version 1 failed its check") and href == f"/versions/{ladder['failed'].pk}"
    assert 'id="checklist"' in clients["erin"].get(href).content.decode()

    sides = [s for s in reversed(_sides(store))]  # newest first
    for name in ("alice", "bob", "carol"):
        mine = [s for s in sides if s[1] == name][:10]
        forfeits = [s for s in mine if s[3] == "L" and s[4] != "normal"]
        said, href = _next(clients[name])
        if forfeits:
            reasons = ", ".join(sorted({s[4] for s in forfeits}))
            assert said.startswith(
                f"Next: Your bot forfeited {len(forfeits)} of its latest {len(mine)} games ({reasons})"
            )
            assert href in {f"/games/{s[0]}" for s in forfeits}, said
            game = visible(clients[name].get(href).content.decode())
            assert re.search(f"{name} forfeited: ({'|'.join(reasons.split(', '))})", game), game[:400]
            continue
        tally: dict[str, list[int]] = {}
        for _, _, opp, result, _ in mine:
            tally.setdefault(opp, [0, 0, 0])["WDL".index(result)] += 1
        worst = max(tally.items(), key=lambda kv: kv[1][2] - kv[1][0])
        if worst[1][2] > worst[1][0]:
            assert said.startswith(
                f"Next: You lose most to {worst[0]} ({'-'.join(map(str, worst[1]))}, W-D-L)"
            )
        else:
            assert "You lead" in said or "No bot beats yours" in said, said
    assert any("forfeited" in _next(clients[n])[0] for n in ("bob", "carol")), "the field reaches forfeits"

    page = clients["alice"].get("/me").content.decode()
    tiles = visible(page[page.index('id="tiles"') : page.index('id="next"')])
    assert f"place of {len(_latest(store, 1))} on the ladder" in tiles
    played = {s[0]: s[3] for s in sides if s[1] == "alice"}
    assert f"won, drawn, lost in {len(played)} games" in tiles
    form = re.findall(r'class="res ([WDL])" href="/games/(\d+)"', page[page.index('id="my-form"') :])
    assert len(form) == min(10, len(played)) and all(played[int(game)] == r for r, game in form), form

    missing = clients["alice"].get("/versions/99999")  # a row that is not there reads as a page that is not
    assert missing.status_code == 404 and findings(missing.content.decode(), zoned=True) == []
    assert "no such page at this address" in visible(missing.content.decode())

    from django.utils import timezone

    from arena.server.models import Classroom

    Classroom.objects.update(freeze_at=timezone.now(), undo_seconds=3600)
    assert 'id="next"' not in clients["alice"].get("/me").content.decode(), "the deadline's lines speak"


@pytest.mark.slow
def test_the_class_ladder_shows_each_bots_latest_results(ladder: dict[str, Any]) -> None:
    from arena.server.models import Classroom

    Classroom.objects.update(freeze_at=None)
    page = ladder["clients"]["alice"].get("/ladder").content.decode()
    assert _forms(page) == _latest(ladder["where"].ladder / "arena.sqlite", 5)


# --- the colours ------------------------------------------------------------------------------------------

# Text colour on background colour, as the stylesheet sets them: each must read at WCAG AA (4.5:1).
READ_ON = (
    ("--ink", "--paper"), ("--ink", "--card"), ("--ink", "--head"), ("--muted", "--card"),
    ("--muted", "--paper"), ("--muted", "--head"), ("--accent", "--card"), ("--ok", "--card"),
    ("--bad", "--card"), ("--warn", "--card"), ("--on-bar", "--bar"), ("--on-bar-link", "--bar"),
    ("#fff", "--won"), ("#fff", "--drew"), ("#fff", "--lost"), ("#fff", "--bad"),
)  # fmt: skip


def _luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    digits = "".join(c * 2 for c in digits) if len(digits) == 3 else digits
    channels = [int(digits[k : k + 2], 16) / 255 for k in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_every_text_colour_reads_on_its_background() -> None:
    root = re.search(r"(?s):root \{(.*?)\}", SHEET.read_text()).group(1)  # type: ignore[union-attr]
    palette = dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-fA-F]{3,6})\s*;", root))

    def colour(name: str) -> str:
        return palette[name] if name.startswith("--") else name

    low = {}
    for text, back in READ_ON:
        light, dark = sorted((_luminance(colour(text)), _luminance(colour(back))), reverse=True)
        if (light + 0.05) / (dark + 0.05) < 4.5:
            low[(text, back)] = round((light + 0.05) / (dark + 0.05), 2)
    assert low == {}, f"below 4.5:1: {low}"
