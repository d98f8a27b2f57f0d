"""The HTML report: written from a hand-made store, escaped, complete, and as a browser shows it."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from arena.match.bots import Bot
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.report import page as report
from arena.stats import ratings
from arena.store.writer import Store
from arena.tournament.schedule import Slot
from arena.tournament.settings import Settings

ATTACK = "<script>alert(1)</script>"
OUR_SCRIPTS = 3  # the leaderboard's performance mark, the page's settings, the viewer


def make_bot(name: str, version: str = "1") -> Bot:
    return Bot(name, ("true",), Path("/nowhere"), Path(f"/nowhere/{name}.py"), f"{name}-v{version}")


def record(south: Bot, north: Bot, winner: Bot | None, faulty: Bot | None = None, **kw: object) -> GameRecord:
    fields: dict[str, object] = dict(
        rules="kalah",
        south=south.name,
        north=north.name,
        moves=(1, 2),
        south_store=30,
        north_store=18,
        winner=winner.name if winner else None,
        reason="crash" if faulty else "normal",
        faulty=faulty.name if faulty else None,
        detail="exited with code 1" if faulty else "",
        move_ms=(1.0, 2.0),
        think_ms={south.name: 12.0, north.name: 8.0},
        moves_made={south.name: 3, north.name: 2},
        stderr={south.name: "", north.name: ""},
    )
    fields.update(kw)
    return GameRecord(**fields)  # type: ignore[arg-type]


BOTS = [make_bot("alpha"), make_bot("beta"), make_bot("gamma"), make_bot("delta")]
ALPHA, BETA, GAMMA, DELTA = BOTS


@pytest.fixture
def store(tmp_path: Path):
    """Four bots, alpha > beta > gamma > delta; delta crashes once with HTML on stderr, and an older
    version of beta is retired."""
    s = Store(tmp_path / "cup" / "arena.sqlite")
    s.fix_settings(Settings("kalah,pie", TimeControl(250, 3000), 42))
    old_beta = make_bot("beta", "0")
    s.add_game(Slot(1, "a", ALPHA, old_beta), record(ALPHA, old_beta, old_beta))
    order = {b.name: k for k, b in enumerate(BOTS)}
    rnd = 0
    for _ in range(3):
        for south in BOTS:
            for north in BOTS:
                if south is north:
                    continue
                rnd += 1
                better = south if order[south.name] < order[north.name] else north
                # a last ply of the round: every game distinct, as real bots from distinct openings play
                s.add_game(Slot(rnd, "x", south, north), record(south, north, better, moves=(1, 2, rnd)))
    tail = f"thinking...\n{ATTACK}\nTraceback (most recent call last):\nValueError: <b>bad</b> & worse\n"
    s.add_game(
        Slot(rnd + 1, "x", DELTA, ALPHA),
        record(DELTA, ALPHA, ALPHA, faulty=DELTA, stderr={"delta": tail, "alpha": "alpha's own noise"}),
    )
    s.set_current(BOTS)
    yield s
    s.close()


def test_report_is_escaped_and_complete(store, tmp_path):
    page = report.write_report(store, tmp_path / "out")
    assert page == (tmp_path / "out" / "index.html").absolute() and page.is_absolute()
    html = page.read_text(encoding="utf-8")
    assert html.lower().count("<script") == OUR_SCRIPTS  # ours only, never a bot's
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;bad&lt;/b&gt; &amp; worse" in html
    # only the faulty bot's tail is shown
    assert "alpha's own noise" not in html and "alpha&#39;s own noise" not in html
    for bot in BOTS:
        assert f'data-bot="{bot.name}"' in html
    assert "http://" not in html and "https://" not in html and "<link" not in html  # nothing fetched
    for fact in ("kalah,pie", "250 ms", "3000 ms", "42"):
        assert fact in html
    assert "beta-v0" in html  # the retired version, with its game count
    assert "exited with code 1" in html
    assert "Head to head" in html and "6-0-0" in html and "7-0-0" in html and "0-0-7" in html


def test_the_rating_chart_draws_the_elo_that_orders_the_table_with_its_interval(store):
    """The chart that leads the ratings is the Elo with its 95% interval, in the leaderboard's order; the
    TrueSkill history comes after it, named as TrueSkill; a bot's page gives its Elo before TrueSkill."""
    html = report.render(store)
    parser = Leaderboard()
    parser.feed(html)
    board = ratings.leaderboard(store)
    assert [e["data-bot"] for e in parser.elo] == list(board["bot"])
    rows = zip(parser.elo, board["bt_elo"], board["bt_pm"], board["score_pct"], strict=True)
    for e, elo, pm, score in rows:
        assert (float(e["data-elo"] or 0), float(e["data-pm"] or 0)) == pytest.approx((elo, pm), abs=1e-3)
        # what a pointer over the row says: the table's Elo (a bot that won every game, as alpha did: the
        # bound its games give, "≥ 1580"; delta lost every game: "≤ 1420")
        assert f"Elo {ratings.elo_text(elo, pm, score)}</title>" in html
    assert "Elo ≥ " in html and "Elo ≤ " in html
    top, bottom = (
        (float(e["data-elo"] or 0), float(e["data-pm"] or 0)) for e in parser.elo[:: len(BOTS) - 1]
    )
    # alpha plainly above delta: each dot outside the other's interval (13 distinct games: the intervals
    # themselves overlap once the uncertainty of the class's spread is counted)
    assert top[0] - bottom[0] > max(top[1], bottom[1])
    ratings_part = html[html.index('<section id="ratings">') : html.index('<section id="head-to-head">')]
    assert ratings_part.index("elo-chart") < ratings_part.index("TrueSkill over the games")
    assert "which decides the order" in ratings_part and "it does not decide the order" in ratings_part
    alpha = board[board["bot"] == "alpha"].iloc[0]
    assert f"Elo ≥ {alpha.bt_elo - alpha.bt_pm:.0f} (decides the place) · TrueSkill" in html


def test_fault_list_keeps_the_latest_and_collapses_long_tails(tmp_path):
    s = Store(tmp_path / "arena.sqlite")
    long_tail = "".join(f"line {k}\n" for k in range(40))
    for k in range(25):
        s.add_game(
            Slot(k + 1, "x", ALPHA, BETA),
            record(ALPHA, BETA, BETA, faulty=ALPHA, detail=f"fault number {k}", stderr={"alpha": long_tail}),
        )
    s.set_current([ALPHA, BETA])
    html = report.render(s)
    assert "Showing the latest 20 of 25" in html
    assert "fault number 24" in html and "fault number 5" in html and "fault number 4" not in html
    assert html.count("<details>") == 20 and "last: <code>line 39</code>" in html
    s.close()


def test_report_of_an_empty_store(tmp_path):
    s = Store(tmp_path / "arena.sqlite")
    html = report.render(s)
    assert "No bots in the current field yet." in html and "not fixed yet" in html
    s.set_current([ALPHA, BETA])
    page = report.write_report(s, tmp_path)
    html = page.read_text(encoding="utf-8")
    assert 'data-bot="alpha"' in html and 'data-bot="beta"' in html
    assert "No games between the current bots yet." in html and "No faults" in html
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    s.close()


# --- in a real browser -----------------------------------------------------------------------------------


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(
            "chromium is not installed, and CI must run the browser test: apt-get install -y chromium"
        )
    pytest.skip("chromium is not installed (apt-get install chromium); the browser test needs it")


def _browse(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *args,
        page.as_uri(),
    ]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


class Leaderboard(HTMLParser):
    """The text of every cell of the leaderboard table, row by row, as the browser laid out the DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.elo: list[dict[str, str | None]] = []  # the Elo chart's rows: data-bot, -elo, -lo, -hi
        self._in_table = self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "g" and ("class", "elo") in attrs:
            self.elo.append(dict(attrs))
        if tag == "table" and ("id", "leaderboard-table") in attrs:
            self._in_table = True
        elif self._in_table and tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self.rows.append([])
        elif self._in_body and tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._in_table = self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _png_size_and_rows(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct pixel rows of a PNG (stdlib only)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = len(raw) // height
    rows = {
        raw[k * stride + 1 : (k + 1) * stride] for k in range(height)
    }  # filtered rows, filter byte dropped
    return width, height, len(rows)


@pytest.mark.slow
def test_a_browser_shows_the_leaderboard_in_order(store, tmp_path):
    page = report.write_report(store, tmp_path / "out")
    dom = _browse(page, tmp_path, "--dump-dom").stdout
    parser = Leaderboard()
    parser.feed(dom)
    board = ratings.leaderboard(store)
    assert len(parser.rows) == len(BOTS)
    shown = [row[1] for row in parser.rows]
    assert shown == list(board["bot"]) == ["alpha", "beta", "gamma", "delta"]
    assert [row[0] for row in parser.rows] == list(board["place"])
    delta = parser.rows[shown.index("delta")]
    assert "1" in delta[10] and "crash" in delta[10]  # the forfeits column
    # the first number is the one that decides the order, the Elo with its interval; TrueSkill beside it
    assert [row[2] for row in parser.rows] == [
        ratings.elo_text(e, pm, score)
        for e, pm, score in zip(board["bt_elo"], board["bt_pm"], board["score_pct"], strict=True)
    ]
    assert [row[3] for row in parser.rows] == [f"{c:.1f}" for c in board["conservative"]]
    # the rating chart draws that Elo and its interval, in the table's order
    assert [e["data-bot"] for e in parser.elo] == shown
    assert [
        ratings.elo_text(float(e["data-elo"] or 0), float(e["data-pm"] or 0), score)
        for e, score in zip(parser.elo, board["score_pct"], strict=True)
    ] == [row[2] for row in parser.rows]
    assert "<script>alert(1)</script>" in dom.replace("&lt;", "<").replace("&gt;", ">")  # shown as text
    assert "<script>alert" not in dom  # never a live element

    shot = tmp_path / "report.png"
    _browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars")
    width, height, distinct = _png_size_and_rows(shot)
    assert (width, height) == (1280, 1600)
    assert shot.stat().st_size > 20_000 and distinct > 100  # a page with content, not a blank canvas


@pytest.mark.slow
def test_a_big_tournaments_page_comes_before_its_replays_and_workers_write_the_same_replays(
    tmp_path, monkeypatch
):
    from classroom import build

    from arena.report import games as games_mod

    build(tmp_path / "arena.sqlite", rounds=1)  # 870 games: 4 blocks
    with Store(tmp_path / "arena.sqlite", create=False) as store:
        first = games_mod.write_games(store, tmp_path / "early", within=-1.0)  # no time for any replay
        assert first.count == 870 and first.missing == 4
        early = tmp_path / "early" / games_mod.FOLDER
        assert (early / "list.js").exists() and not list(early.glob("b*.js"))
        html = report.render(store, games=first)
        assert 'id="replays-pending"' in html and '"live": true' in html  # it reloads itself when they are
        monkeypatch.setattr(games_mod, "POOL_FROM", 2)
        pooled = games_mod.write_games(store, tmp_path / "early", jobs=2)
        alone = games_mod.write_games(store, tmp_path / "alone")
    assert pooled.missing == alone.missing == 0
    names = sorted(p.name for p in early.glob("b*.js"))
    assert names == ["b0.js", "b1.js", "b2.js", "b3.js"]
    for name in names:
        assert (early / name).read_text() == (tmp_path / "alone" / games_mod.FOLDER / name).read_text()
    assert {b: t.plain() for b, t in pooled.think.items()} == {b: t.plain() for b, t in alone.think.items()}


def test_the_reports_parts_for_another_page_show_no_one_elses_words(store):
    """arena/report/face.py: the class server's ladder and game pages are drawn by the report's templates;
    the standings carry no author and no link to pages it does not have, and a game's replay carries a
    bot's stderr and the lines that reproduce its fault only for a viewer who may see them."""
    from arena.report import face

    parts = str(face.standings(store))
    rows = [line.split('data-bot="')[1].split('"')[0] for line in parts.splitlines() if "data-bot=" in line]
    assert rows == ["alpha", "beta", "gamma", "delta"]
    assert 'id="h2h"' in parts and "href=" not in parts
    assert ">100</td>" in parts and ">0</td>" in parts  # scores in the cells, the W-D-L in their titles
    assert 'title="alpha vs delta: 7-0-0 (W-D-L)' in parts

    crash = next(r for r in store.records() if r["faulty"] == "delta")
    game = GameRecord.from_dict(crash)
    others = str(face.game(game, crash["id"], face.Viewer(lambda bot: bot == "alpha", back="")))
    theirs = str(face.game(game, crash["id"], face.Viewer(lambda bot: bot == "delta", back="/ladder")))
    assert "exited with code 1" in others and "exited with code 1" in theirs  # the reason, for all
    assert "ValueError" not in others and "ValueError" in theirs
    assert '"lines": []' in others and '"lines": []' not in theirs
    assert '"private": true' in others and '"private"' not in theirs  # "only its author sees", not "none"
    assert "\\u003cscript\\u003ealert(1)" in theirs and ATTACK not in theirs  # inline data, never markup
    assert 'id="r-back"' not in others and 'href="/ladder" id="r-back"' in theirs


def test_a_bot_page_for_another_page_shows_what_the_bot_said_to_its_author_alone(store):
    """arena/report/face.py: the class server's bot page is the report's, drawn from the data its worker
    keeps (plain JSON): every viewer reads a fault's reason and detail, only the bot's author (and the
    teacher) what the bot said in it; its links lead to the server's pages."""
    import json

    from arena.report import face
    from arena.report.botpages import Links

    garbled = record(DELTA, BETA, BETA, faulty=DELTA, reason="garbled", detail="answered what is not a move",
                     said="its answer: '<b>HUSH</b>'")  # fmt: skip
    store.add_game(Slot(999, "x", DELTA, BETA), garbled)
    data = json.loads(json.dumps(face.bot_page_data(store, ratings.standings(store))))
    assert set(data) == {"alpha", "beta", "gamma", "delta"}
    links = Links("/ladder", "the ladder", lambda g: f"/games/{g}", lambda _: "#bot-games",
                  lambda _, opp: f"/ladder/bots/{opp}", lambda _, __: "")  # fmt: skip
    others = str(face.bot_page(data["delta"], face.Viewer(lambda bot: bot == "alpha"), links))
    theirs = str(face.bot_page(data["delta"], face.Viewer(lambda bot: bot == "delta"), links))
    for page in (others, theirs):
        assert 'id="bot-delta">' in page, "shown at once, not hidden for the report's script to open"
        assert "garbled" in page and "answered what is not a move" in page and "exited with code 1" in page
        assert 'href="/ladder/bots/alpha"' in page and 'href="/ladder">' in page
        assert 'href="#bot-games"' in page
        assert "<svg" in page and "<b>" not in page  # the report's charts; the bot's words as text
    assert "HUSH" not in others and "its answer: &#39;&lt;b&gt;HUSH&lt;/b&gt;&#39;" in theirs
    latest = max(r["id"] for r in store.records() if r["faulty"] == "delta")
    assert f'href="/games/{latest}"' in others
