"""The real server (`arena serve`: gunicorn and its workers, on 127.0.0.1 at a free port) through a whole
class, on SQLite and on a real PostgreSQL started here where the machine has its binaries:

- in headless Chromium (Selenium): the teacher creates the class with the one-time link; three students
  join and upload (a Python bot, a compiled C bot zipped as a folder, a broken one); the checks pass and
  fail as they should; the ladder plays and each student opens their page and the ladder (the report's
  leaderboard and matrix); one replays a game in the report's viewer with her stderr, the other the same
  game without it, the teacher with it; she plays a scrimmage and replays it (her stderr, never the
  opponent's); her bot forfeits on the ladder (a bug its check missed), and bob opens her bot's page from the
  standings: her games and her faults' reasons, not what her bot said nor her source, which the teacher
  reads; the teacher freezes, the final
  runs, the gradebook CSV is downloaded and its rows checked, and the final's and a student's tables fit
  a 390 px phone;
- kill -9 of the server during games and a start again: no submission lost (one queued at the kill is
  checked after it), no game stored twice, the ladder goes on;
- a hostile bot uploaded through the page reads nothing of another student's, nor the server's secrets:
  its check runs it confined as `arena run` does, and so do its games on the ladder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sqlite3
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import ROOT, Server, need_extra, pg_missing, postgres

need_extra()
requests = pytest.importorskip(
    "requests", reason="the tests' HTTP client is not installed: pip install requests"
)

from urllib3.util.retry import Retry  # noqa: E402 (requests' own)

pytestmark = pytest.mark.slow
PASSWORD = "kalah rules 6 by 6"
FIRST_LEGAL = """\
import sys
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        b = [int(x) for x in w[2:]]
        print("thinking about", b, file=sys.stderr, flush=True)
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""
# First legal, with a bug the check's positions miss: as North, from any start but the check's own North
# game's, its second answer is garbage. It passes its check (the pie game's forfeit is a warning where the
# class plays without the pie rule) and forfeits games on the ladder, saying what only its author (and the
# teacher) may read.
GARBLES_AS_NORTH = """\
import sys
CHECKED = {checked}
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "NEWGAME":
        north, moves, first = w[3] == "north", 0, None
    elif w and w[0] == "MOVE":
        b = [int(x) for x in w[2:]]
        moves += 1
        first = first or b
        print("thinking about", b, file=sys.stderr, flush=True)
        if north and moves == 2 and first != CHECKED:
            print("xyzzy-alice-said", flush=True)
        else:
            print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""


def garbles_as_north() -> str:
    """GARBLES_AS_NORTH, knowing the board the check's North game (a capture on offer) starts from."""
    from arena.game.rules import parse_rules
    from arena.student.check import opening_offering

    rules = parse_rules("kalah")  # the server's, as arena serve is started here
    pos = rules.initial()
    for move in opening_offering(rules, 1, "capture") or ():
        pos = rules.play(pos, move)
    return GARBLES_AS_NORTH.format(checked=list(pos.view(1)))


BROKEN = """\
import sys
for line in sys.stdin:
    if line.startswith("MOVE"):
        print("banana", flush=True)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "sqlite":
        yield None
        return
    if why := pg_missing():
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(f"PostgreSQL must be installed on CI: {why}")
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="arena-pg-"))  # not under pytest's 0700 folders: its user reads it
    try:
        with postgres(folder) as url:
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def server(tmp_path: Path, db: str | None) -> Iterator[Server]:
    made = Server(tmp_path / "class", db)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def on_sqlite(tmp_path: Path) -> Iterator[Server]:
    """A server on SQLite alone, for what does not depend on the database (the sandbox, the terminal's
    upload): a throwaway PostgreSQL cluster costs seconds of a CPU to make."""
    made = Server(tmp_path / "class")
    try:
        yield made
    finally:
        made.stop()


# --- a person's browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    found = (shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver"))
    if not all(found):
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(
                "chromium and chromium-driver must be installed on CI: apt-get install chromium-driver"
            )
        pytest.skip("chromium or chromium-driver is not installed (apt-get install chromium-driver)")
    options = Options()
    options.binary_location = str(found[0])
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000",
    ):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(str(found[1])))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _by() -> Any:
    from selenium.webdriver.common.by import By

    return By


def fill(driver: Any, **fields: str) -> None:
    for name, value in fields.items():
        box = driver.find_element(_by().ID, name)
        box.clear()
        box.send_keys(value)


def click(driver: Any, ident: str, navigates: bool = True) -> None:
    """Click; for a form's button, wait until the next page has replaced this one."""

    page = driver.find_element(_by().TAG_NAME, "html")
    driver.find_element(_by().ID, ident).click()
    if navigates:
        replaced(driver, page)


def replaced(driver: Any, page: Any) -> None:
    """Wait until a navigation has replaced `page` (the old document's html element).

    chromedriver may say so in two ways: a stale element, or, when the old node is asked mid-way
    through the swap, an "unknown error" that the node "does not belong to the document" (CI met it).
    """
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def gone(_: Any) -> bool:
        try:
            page.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise
        return False

    WebDriverWait(driver, 60).until(gone)


def text(driver: Any, ident: str) -> str:
    """The element's text, read again if the page replaced it in between (a pending scrimmage's page reloads
    itself, and a busy machine can put the reload between finding the element and reading it)."""
    from selenium.common.exceptions import StaleElementReferenceException

    for _ in range(10):
        try:
            return str(driver.find_element(_by().ID, ident).text)
        except StaleElementReferenceException:
            time.sleep(0.2)
    return str(driver.find_element(_by().ID, ident).text)


def until(what: str, check: Any, seconds: float = 180, every: float = 1.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"waited {seconds:.0f} s for {what}")


def sign_up(driver: Any, join: str, username: str) -> None:
    driver.delete_all_cookies()
    driver.get(join)
    fill(driver, username=username, password=PASSWORD, password2=PASSWORD)
    click(driver, "join")
    assert driver.current_url.endswith("/me"), driver.page_source[:2000]


def upload(driver: Any, server: Server, path: Path) -> None:
    driver.get(server.url + "/me")
    driver.find_element(_by().ID, "bot").send_keys(str(path))
    click(driver, "upload")
    said = [m.text for m in driver.find_elements(_by().CSS_SELECTOR, ".msg")]
    assert any("is stored and waits for its check" in m for m in said), said


def checked(driver: Any, server: Server) -> str:
    """The status of the student's latest version once its check is done."""

    def done() -> str | None:
        driver.get(server.url + "/me")
        rows = driver.find_elements(_by().CSS_SELECTOR, "tr.version")
        status = rows[0].get_attribute("data-status") if rows else None
        return status if status in ("passed", "failed") else None

    return str(until("a check", done, 300))


def c_bot_zip(folder: Path) -> Path:
    """`arena new --lang c`'s starter, as a student zips it: the folder with its bot.toml and bot.c."""
    starter = ROOT / "arena" / "student" / "starters" / "c"
    path = folder / "cbot.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name in ("bot.toml", "bot.c"):
            z.writestr(f"cbot/{name}", (starter / name).read_text().replace("{{NAME}}", "cbot"))
    return path


def test_a_whole_class_in_the_browser(browser: Any, server: Server, tmp_path: Path) -> None:

    driver = browser
    link = server.start().split()[2]
    driver.delete_all_cookies()
    driver.get(link)
    fill(driver, name="AI 101", username="teach", password=PASSWORD, password2=PASSWORD)
    for name in ("greedy", "random"):  # ticked for a new class; this one's ladder is its students' alone
        box = driver.find_element(_by().ID, f"setup-ref-{name}")
        assert box.is_selected(), name
        box.click()
    click(driver, "create")
    join = text(driver, "join-link")
    assert join.startswith(server.url + "/join/")

    files = {"alice": tmp_path / "alice.py", "bob": c_bot_zip(tmp_path), "carol": tmp_path / "carol.py"}
    files["alice"].write_text(garbles_as_north())
    files["carol"].write_text(BROKEN)
    for name, path in files.items():
        sign_up(driver, join, name)
        upload(driver, server, path)
        expected = "failed" if name == "carol" else "passed"
        status = checked(driver, server)
        assert status == expected, (name, driver.find_element(_by().TAG_NAME, "body").text[-3000:])
        if name == "carol":
            driver.get(driver.find_element(_by().CSS_SELECTOR, "tr.version a").get_attribute("href"))
            assert "FAIL" in text(driver, "checklist") and "banana" in driver.page_source
        else:
            assert "Playing on the ladder: version 1" in text(driver, "active")

    def ladder_rows() -> list[str] | None:
        driver.get(server.url + "/ladder")
        found = driver.find_elements(_by().CSS_SELECTOR, "#leaderboard-table tr[data-bot]")
        rows = [str(r.get_attribute("data-bot")) for r in found]
        return rows if {"alice", "bob"} <= set(rows) and int(text(driver, "games")) >= 8 else None

    for name in ("carol", "bob", "alice"):  # each student opens their page and the ladder
        driver.delete_all_cookies()
        driver.get(server.url + "/signin")
        fill(driver, username=name, password=PASSWORD)
        click(driver, "signin")
        assert driver.current_url.endswith("/me")
        rows = until("the ladder's games", ladder_rows)
        assert "carol" not in rows, "a failing version does not enter"
    # the ladder is the report's: its leaderboard (Elo in whole points) and its head-to-head matrix
    elos = [e.text for e in driver.find_elements(_by().CSS_SELECTOR, "#leaderboard-table td.elo")]
    # (a bot that won or lost every game so far shows the bound its games give: "≥ 1580")
    assert elos and all(re.fullmatch(r"\d+ ± \d+|[≤≥] \d+", e) for e in elos), elos
    assert driver.find_elements(_by().CSS_SELECTOR, "#h2h td[title^='alice vs bob']")
    polled = driver.execute_async_script(  # what the page's poll puts in place of them
        "const done = arguments[0]; fetch('/ladder.json').then(r => r.json()).then(d => done(d.standings))"
    )
    assert 'id="leaderboard-table"' in polled and 'data-bot="alice"' in polled
    page = driver.find_element(_by().TAG_NAME, "html")
    driver.find_element(_by().CSS_SELECTOR, "#recent a").click()  # alice opens a game: her stderr only
    replaced(driver, page)
    game_url = driver.current_url
    assert (
        "<h2>stderr of alice</h2>" in driver.page_source
        and "<h2>stderr of bob</h2>" not in driver.page_source
    )
    # the report's replay viewer: a labelled board with numbered pits, its controls and its moves
    assert len(driver.find_elements(_by().CSS_SELECTOR, "#board .hole")) == 14
    assert {text(driver, "r-south").split()[1], text(driver, "r-north").split()[1]} == {"alice", "bob"}
    click(driver, "step-first", navigates=False)
    assert text(driver, "ply-counter").startswith("start")
    click(driver, "step-last", navigates=False)
    assert re.fullmatch(r"move (\d+) of \1", text(driver, "ply-counter")) and "plays" in text(
        driver, "r-what"
    )
    assert driver.find_elements(_by().CSS_SELECTOR, "#moves li")

    driver.get(server.url + "/me")  # alice asks for a scrimmage against bob, and replays it
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(_by().ID, "scrimmage-opponent")).select_by_visible_text("bob")
    click(driver, "ask-scrimmage")
    scrimmage = driver.current_url

    def played() -> bool:
        driver.get(scrimmage)
        return text(driver, "scrimmage-status") == "played"

    until("the scrimmage", played, 120, 2)
    page = driver.find_element(_by().TAG_NAME, "html")
    driver.find_element(_by().CSS_SELECTOR, "tr.scrimmage-game a").click()
    replaced(driver, page)
    assert "<h2>stderr of alice</h2>" in driver.page_source
    assert "<h2>stderr of bob</h2>" not in driver.page_source

    sign_in(driver, server, "bob")  # the same game for bob: its replay, never alice's stderr
    driver.get(game_url)
    assert len(driver.find_elements(_by().CSS_SELECTOR, "#board .hole")) == 14
    assert "thinking about" not in driver.page_source and "<h2>stderr of alice</h2>" not in driver.page_source
    assert "alice" in text(driver, "hidden")

    # bob opens alice's page from her name in the standings: the report's bot page, with her games and her
    # faults' reasons, never what her bot said in them nor her source
    driver.get(server.url + "/ladder")
    page = driver.find_element(_by().TAG_NAME, "html")
    driver.find_element(_by().CSS_SELECTOR, "#leaderboard-table a[href='/ladder/bots/alice']").click()
    replaced(driver, page)
    alice_page = driver.current_url

    def faulted() -> bool:
        driver.get(alice_page)
        return "garbled" in text(driver, "bot-alice")

    until("a forfeit of alice's on her page", faulted, 180, 2)
    assert "answered what is not a move" in text(driver, "bot-alice")
    assert driver.find_elements(_by().CSS_SELECTOR, "tr.bot-game a[href^='/games/']")
    assert "xyzzy" not in driver.page_source and not driver.find_elements(_by().ID, "bot-source")

    sign_in(driver, server, "teach")  # and for the teacher: everything
    driver.get(alice_page)
    assert "its answer: 'xyzzy-alice-said'" in text(driver, "bot-alice")
    page = driver.find_element(_by().TAG_NAME, "html")
    driver.find_element(_by().CSS_SELECTOR, "#bot-alice .fault-kinds a[href^='/games/']").click()
    replaced(driver, page)  # the fault's lines, to run where alice keeps alice.py, at the class's move time
    cmd = until(
        "the fault box", lambda: driver.find_element(_by().ID, "fx-cmd").get_attribute("textContent"), 30
    )
    assert cmd.startswith("printf 'NEWGAME ") and cmd.endswith("| python3 -P -u alice.py"), cmd
    assert "MOVE 100 " in cmd and "bots/" not in cmd and "submissions" not in cmd, cmd
    driver.get(alice_page)
    page = driver.find_element(_by().TAG_NAME, "html")
    driver.find_element(_by().CSS_SELECTOR, "#bot-source a[href$='/source']").click()
    replaced(driver, page)
    assert "xyzzy-alice-said" in driver.find_element(_by().CSS_SELECTOR, "pre.file").text
    driver.get(game_url)
    assert "<h2>stderr of alice</h2>" in driver.page_source and "thinking about" in driver.page_source
    driver.get(server.url + "/teacher")
    fill(driver, undo_seconds="2")  # the freeze's undo window: a minute unless the teacher shortens it
    click(driver, "save-settings")
    click(driver, "freeze-now")
    assert "The final starts 2 seconds later" in text(driver, "confirm-text")
    click(driver, "confirm-freeze")  # asked again; the final starts after the undo window

    def final_done() -> bool:
        driver.get(server.url + "/teacher")
        return text(driver, "final-state") == "done"

    until("the final", final_done, 400, 2)
    cookies = {c["name"]: c["value"] for c in driver.get_cookies()}
    answer = requests.get(server.url + "/teacher/gradebook.csv", cookies=cookies, timeout=30)
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("text/csv")
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(answer.text))}
    assert set(rows) == {"alice", "bob", "carol"}
    assert rows["bob"]["place"] == "1" and rows["alice"]["place"] == "2", rows
    assert rows["bob"]["version"] == rows["alice"]["version"] == "1"
    assert rows["carol"]["version"] == "" and rows["carol"]["pass"] == "fail"
    for name in ("alice", "bob"):
        wins, draws, losses = map(int, rows[name]["vs_greedy"].split("-"))
        assert wins + draws + losses == 10, rows[name]
        assert rows[name]["pass"] == ("pass" if wins >= 8 else "fail")
        assert float(rows[name]["elo_lo"]) <= float(rows[name]["elo"]) <= float(rows[name]["elo_hi"])
    assert rows["alice"]["pass"] == "fail", "first-legal does not beat greedy 8 times in 10"

    driver.set_window_size(390, 844)  # a phone: the final's and a student's tables fit without scrolling
    try:
        driver.get(server.url + "/final")
        assert overflow(driver, "leaderboard-table", "recent") == [], "the final's tables fit 390 px"
        shown = "return [...document.querySelectorAll(arguments[0])].filter(e => e.offsetParent).length"
        heads = driver.execute_script(shown, "#leaderboard-table thead th")
        cells = driver.execute_script(shown, "#leaderboard-table tbody tr:first-child td")
        assert heads == cells, "a phone hides a column's head with its cells"
        driver.get(game_url)
        assert overflow(driver, "board", "replay") == [], "a replay's board fits 390 px"
        driver.delete_all_cookies()
        driver.get(server.url + "/signin")
        fill(driver, username="alice", password=PASSWORD)
        click(driver, "signin")
        assert overflow(driver, "versions", "my-games", "against") == [], "alice's tables fit 390 px"
    finally:
        driver.set_window_size(1280, 1000)


def sign_in(driver: Any, server: Server, username: str) -> None:
    driver.delete_all_cookies()
    driver.get(server.url + "/signin")
    fill(driver, username=username, password=PASSWORD)
    click(driver, "signin")


def overflow(driver: Any, *tables: str) -> list[str]:
    """The tables among `tables` on the page that reach past the window's right edge, with by how much."""
    script = """
      const width = document.documentElement.clientWidth;
      return arguments[0].map(id => [id, document.getElementById(id)])
        .filter(([id, t]) => t && t.getBoundingClientRect().right > width)
        .map(([id, t]) => `${id}: ${Math.round(t.getBoundingClientRect().right)} px of ${width}`);"""
    return list(driver.execute_script(script, list(tables)))


# --- without a browser: the faults -----------------------------------------------------------------------


class Student:
    """A student's session over HTTP (forms with their CSRF token, as the browser sends them)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.http = requests.Session()
        # As a browser does, a GET sent on a kept-alive connection just as the server drops it (gunicorn
        # closes idle ones after 2 s, and a close with the request unread resets it) is sent again on a new
        # one; a POST never is. CI once lost a page to that race after a test's wait.
        again = Retry(total=2, connect=2, read=2, status=0, allowed_methods={"GET", "HEAD"})
        self.http.mount("http://", requests.adapters.HTTPAdapter(max_retries=again))

    def _token(self, path: str) -> str:
        page = self.http.get(self.server.url + path, timeout=30).text
        return str(re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1))  # type: ignore[union-attr]

    def post(self, path: str, form: dict[str, str], files: Any = None, page: str | None = None) -> Any:
        form = {**form, "csrfmiddlewaretoken": self._token(page or path)}
        return self.http.post(self.server.url + path, data=form, files=files, timeout=60)

    def upload(self, name: str, data: bytes) -> None:
        answer = self.post("/me/upload", {}, files={"bot": (name, data)}, page="/me")
        assert "is stored and waits for its check" in answer.text, answer.text[-3000:]

    def versions(self) -> list[str]:
        page = self.http.get(self.server.url + "/me", timeout=30).text
        return re.findall(r'<tr class="version" data-number="\d+" data-status="(\w+)"', page)


def make_class(server: Server, link: str, students: list[str]) -> dict[str, Student]:
    teacher = Student(server)
    setup = link.split()[2].removeprefix(server.url)
    form = {"name": "K", "username": "teach", "password": PASSWORD, "password2": PASSWORD}
    page = teacher.post(setup, form)
    code = re.search(r'id="join-code">([^<]+)<', page.text).group(1)  # type: ignore[union-attr]
    out = {"teach": teacher}
    for name in students:
        s = Student(server)
        form = {"code": code, "username": name, "password": PASSWORD, "password2": PASSWORD}
        assert s.post("/join", form, page=f"/join/{code}").url.endswith("/me")
        out[name] = s
    return out


def store_games(class_dir: Path) -> tuple[int, int]:
    """(games stored, distinct games) in the ladder's store; none while the store is being made (its file
    comes before its tables). Both counts in one statement, so of one snapshot: the ladder goes on storing
    games, and a game stored between two statements once read as 104 games of which 105 distinct."""
    with sqlite3.connect(class_dir / "ladder" / "arena.sqlite") as db:
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'games'").fetchone()[0]:
            return 0, 0
        total, distinct = db.execute(
            "SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT round, south_id, north_id FROM games))"
            " FROM games"
        ).fetchone()
    return int(total), int(distinct)


RANDOM = (ROOT / "bots" / "random.py").read_bytes()


def test_kill_9_during_games_loses_nothing_and_the_ladder_goes_on(server: Server) -> None:
    people = make_class(server, server.start(), ["ann", "ben"])
    for name in ("ann", "ben"):  # two random bots: the ladder is far from settled, games go on
        people[name].upload(f"{name}.py", RANDOM)
    until("the checks", lambda: all(people[n].versions() == ["passed"] for n in ("ann", "ben")), 240)
    until(
        "games",
        lambda: (
            (server.class_dir / "ladder" / "arena.sqlite").exists() and store_games(server.class_dir)[0] >= 10
        ),
        240,
    )
    people["ann"].upload("ann2.py", RANDOM.replace(b"Random Kalah bot", b"Random Kalah bot, v2"))
    server.kill9()
    left = _children_of(server)
    assert not left, (
        f"arena serve's children die with it: {_described(left)}; {server.log.read_text()[-3000:]}"
    )
    before, distinct = store_games(server.class_dir)
    assert before == distinct
    assert (server.class_dir / "submissions" / "ann" / "2" / "ann" / "ann2.py").is_file()

    server.start()
    until("ann's second version checked", lambda: people["ann"].versions()[:1] == ["passed"], 240)
    assert people["ann"].versions() == ["passed", "passed"], "no submission lost"
    until("the ladder going on", lambda: store_games(server.class_dir)[0] >= before + 10, 240)
    total, distinct = store_games(server.class_dir)
    assert total == distinct, "no game stored twice"


def _children_of(server: Server) -> list[int]:
    """Processes still running from the killed server (its gunicorn and workers carry ARENA_CLASS_DIR)."""
    found = []
    mark = f"ARENA_CLASS_DIR={server.class_dir}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            continue
    return found


def _described(pids: list[int]) -> str:
    """Each process as `ps` would show it: which of arena serve's children outlived it, and in what state."""
    said = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:4]
        except OSError:
            argv, state = "(gone)", []
        said.append(f"{pid} {' '.join(state)} {argv.strip()}")
    return "; ".join(said)


HOSTILE = """\
import os, sys
targets = sys.argv[1:] or []
for path in {targets!r}:
    try:
        with open(path, "rb") as f:
            print("LEAK", path, f.read(200), file=sys.stderr, flush=True)
    except OSError as e:
        print("DENIED", path, type(e).__name__, file=sys.stderr, flush=True)
try:
    print("LISTED", os.listdir({folder!r}), file=sys.stderr, flush=True)
except OSError as e:
    print("DENIED", {folder!r}, type(e).__name__, file=sys.stderr, flush=True)
raise SystemExit("done looking")
"""


def victim_and_attacker(server: Server) -> tuple[dict[str, Any], Path]:
    """A class with vic, whose private bot has passed its check, and mal, still without a bot; and the
    class folder. Skips where there is no sandbox."""
    from arena.sandbox import sandbox_problem

    if sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {sandbox_problem()}")
    people = make_class(server, server.start(), ["vic", "mal"])
    people["vic"].upload("vic.py", b"# VIC-PRIVATE-STRATEGY\n" + RANDOM)
    until("vic's check", lambda: people["vic"].versions() == ["passed"], 240)
    return people, server.class_dir.absolute()


def test_a_hostile_bot_reads_nothing_of_anothers(on_sqlite: Server) -> None:
    server = on_sqlite
    people, root = victim_and_attacker(on_sqlite)
    targets = [
        str(root / "submissions" / "vic" / "1" / "vic" / "vic.py"),
        str(root / "bots" / "vic" / "vic.py"),
        str(root / "secret_key"),
        str(root / "server.sqlite3"),
    ]
    people["mal"].upload("mal.py", HOSTILE.format(targets=targets, folder=str(root / "submissions")).encode())
    until("mal's check", lambda: people["mal"].versions() == ["failed"], 240)
    page = people["mal"].http.get(server.url + "/me", timeout=30).text
    version = re.search(r'href="/versions/(\d+)"', page).group(1)  # type: ignore[union-attr]
    shown = people["mal"].http.get(f"{server.url}/versions/{version}", timeout=30).text
    assert "done looking" in shown, "the bot ran and its stderr is on its author's page"
    assert "LEAK" not in shown and "VIC-PRIVATE" not in shown
    # The bot's files are at /bot in its sandbox: the class's submissions folder is not there at all (or,
    # where a bot is shown from its own place, holds its own folder only)
    folder = str(root / "submissions")
    assert f"DENIED {folder} FileNotFoundError" in shown or "LISTED [&#x27;mal&#x27;]" in shown, shown
    for path in targets:
        assert f"DENIED {path}" in shown, path


# A bot that plays (random legal moves, so that its check passes and it enters the ladder) and looks, at
# the first move of every game, for what is not its own: it says on its stderr, which each game keeps.
PLAYS_AND_LOOKS = """\
import os, random, sys


def look():
    for path in {targets!r}:
        try:
            with open(path, "rb") as f:
                print("LEAK", path, f.read(200), file=sys.stderr, flush=True)
        except OSError as e:
            print("DENIED", path, type(e).__name__, file=sys.stderr, flush=True)
    for folder in {folders!r}:
        try:
            print("LISTED", folder, os.listdir(folder), file=sys.stderr, flush=True)
        except OSError as e:
            print("DENIED", folder, type(e).__name__, file=sys.stderr, flush=True)
    print("LOOKED", file=sys.stderr, flush=True)


looked = False
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        if not looked:
            look()
            looked = True
        b = [int(x) for x in w[2:]]
        print(random.choice([p for p in range(1, len(b) // 2) if b[p - 1]]), flush=True)
    elif w and w[0] == "END":
        looked = False
    elif w and w[0] == "QUIT":
        break
"""


def ladder_stderr(class_dir: Path, bot: str) -> list[str]:
    """What `bot` wrote in each of its ladder games, from the ladder's store."""
    path = class_dir / "ladder" / "arena.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'games'").fetchone()[0]:
            return []  # the store is being made: its file comes before its tables
        rows = db.execute("SELECT stderr FROM games").fetchall()
    return [text for (data,) in rows if (text := json.loads(data or "{}").get(bot))]


def test_a_hostile_bot_on_the_ladder_reads_nothing_of_anothers(on_sqlite: Server) -> None:
    """Confined in its ladder games as in its check, as `arena run` confines: not only when checked."""
    people, root = victim_and_attacker(on_sqlite)
    targets = [
        str(root / "submissions" / "vic" / "1" / "vic" / "vic.py"),
        str(root / "bots" / "vic" / "vic.py"),
        str(root / "secret_key"),
        str(root / "server.sqlite3"),
        str(root / "ladder" / "arena.sqlite"),
    ]
    folders = [str(root / "bots"), "/dev/shm"]
    people["mal"].upload("mal.py", PLAYS_AND_LOOKS.format(targets=targets, folders=folders).encode())
    until("mal's check", lambda: people["mal"].versions() == ["passed"], 240)

    def three_games() -> list[str] | None:
        found = ladder_stderr(root, "mal")
        return found[:3] if len(found) >= 3 else None

    seen = until("three ladder games of mal's", three_games, 240)
    for text in seen:
        assert "LOOKED" in text and "LEAK" not in text and "VIC-PRIVATE" not in text, text
        for path in targets:
            assert f"DENIED {path}" in text, (path, text)
        assert f"DENIED {root / 'bots'} FileNotFoundError" in text, text
        assert "arena-stage" not in text, "another bot's staged copy is not in its /dev/shm"


def test_arena_submit_from_a_terminal(on_sqlite: Server, tmp_path: Path) -> None:
    import subprocess
    import sys

    server = on_sqlite
    people = make_class(server, server.start(), ["tom"])
    page = people["tom"].http.get(server.url + "/me", timeout=30).text
    token = re.search(r'id="token">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_bytes(RANDOM)
    bad.write_text(BROKEN)

    def submit(path: Path, key: str) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-m", "arena", "submit", str(path), "--server", server.url]
        env = {**os.environ, "ARENA_TOKEN": key}  # not --token: every user reads a command line
        return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)

    ok = submit(good, token)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("version 1 stored; waiting for its check")
    assert "tom: ready to play" in ok.stdout
    failed = submit(bad, token)
    assert failed.returncode == 1 and "tom: FAIL" in failed.stdout
    refused = submit(good, "not-my-token")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "arena: error: no valid token: copy it from your page on the server"
    assert people["tom"].versions() == ["failed", "passed"]
