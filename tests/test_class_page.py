"""The page for a class of thirty, in headless Chromium at a projector's 1280 px and a phone's 390 px: the
head-to-head matrix fits or keeps its names in view, its figures are there on hover and on the pairing's
games, and the leaderboard says shared places and why. The store is tests/classroom.py's (no bot runs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from classroom import NAMES, build
from test_browser import _board, _wait, browser  # noqa: F401  (the module's headless Chromium)

from arena.game.rules import parse_rules
from arena.match.record import GameRecord
from arena.report import page as report
from arena.stats import ratings
from arena.store import queries
from arena.store.writer import Store

pytestmark = pytest.mark.slow  # every test drives headless Chromium over a 30-bot class


@pytest.fixture(scope="module")
def klass(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("class")
    build(base / "arena.sqlite")
    with Store(base / "arena.sqlite", create=False) as store:
        return report.write_report(store, base)


def _size(driver: object, width: int, height: int = 1000) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)  # type: ignore[attr-defined]


def test_the_matrix_of_thirty_fits_a_projector_whole(browser, klass):  # noqa: F811
    _size(browser, 1280)
    try:
        browser.get(klass.as_uri() + "#head-to-head")
        table = "document.getElementById('h2h')"
        assert browser.execute_script(f"return {table}.tBodies[0].rows.length") == len(NAMES)
        right = browser.execute_script(f"return {table}.getBoundingClientRect().right")
        assert right <= 1280 and browser.execute_script("return document.documentElement.scrollWidth") <= 1280
        wrap = "document.querySelector('.h2h-wrap')"
        assert browser.execute_script(
            f"return {wrap}.scrollWidth <= {wrap}.clientWidth"
        )  # no sideways scroll
        # every column header names its bot (rotated, in full on hover)
        heads = browser.execute_script(f"return [...{table}.tHead.rows[0].cells].slice(1).map(c => c.title)")
        assert sorted(heads) == sorted(NAMES)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_on_a_phone_the_row_names_stay_in_view_when_the_matrix_scrolls(browser, klass):  # noqa: F811
    _size(browser, 390, 844)
    try:
        browser.get(klass.as_uri() + "#head-to-head")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
        wrap = "document.querySelector('.h2h-wrap')"
        assert browser.execute_script(f"return {wrap}.scrollWidth > {wrap}.clientWidth")  # it scrolls itself
        name = "document.querySelector('#h2h tbody th.name')"
        cell = "document.querySelector('#h2h tbody td')"
        left0 = browser.execute_script(f"return {name}.getBoundingClientRect().left")
        cell0 = browser.execute_script(f"return {cell}.getBoundingClientRect().left")
        browser.execute_script(f"{wrap}.scrollLeft = 600")
        assert browser.execute_script(f"return {wrap}.scrollLeft") > 300
        assert browser.execute_script(f"return {name}.getBoundingClientRect().left") == pytest.approx(
            left0, abs=1
        )
        assert browser.execute_script(f"return {cell}.getBoundingClientRect().left") < cell0 - 300
        # the name is drawn on top of the cells scrolled beneath it
        x, y = browser.execute_script(
            f"const r = {name}.getBoundingClientRect(); return [r.left + 5, r.top + r.height / 2]"
        )
        assert browser.execute_script(f"return document.elementFromPoint({x}, {y}).closest('th') === {name}")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_column_names_stay_in_view_down_the_matrix(browser, klass, width, height):  # noqa: F811
    """On a projector the page scrolls and the names stick to the window; on a phone the matrix's own box
    scrolls both ways and they stick to its top."""
    _size(browser, width, height)
    try:
        browser.get(klass.as_uri() + "#head-to-head")
        wrap = "document.querySelector('.h2h-wrap')"
        head = "document.querySelector('#h2h thead th.col:nth-child(5)')"
        last = "document.querySelector('#h2h tbody tr:last-child th')"
        top0 = browser.execute_script(f"return {head}.getBoundingClientRect().top")
        if width > 500:
            browser.execute_script("window.scrollBy(0, 600)")
            assert browser.execute_script("return window.scrollY") > top0 + 300
            at = 0.0
        else:
            browser.execute_script(f"{wrap}.scrollTop = {wrap}.scrollHeight")  # to its last row
            assert browser.execute_script(f"return {wrap}.scrollTop") > 100
            at = browser.execute_script(f"return {wrap}.getBoundingClientRect().top")
        top = browser.execute_script(f"return {head}.getBoundingClientRect().top")
        assert top == pytest.approx(at, abs=1)
        bottom = browser.execute_script(f"return {last}.getBoundingClientRect().bottom")
        assert bottom <= height  # scrolled down to the last row, and the names are still there
        # drawn on top of the rows scrolled beneath it
        x, y = browser.execute_script(
            f"const r = {head}.getBoundingClientRect(); return [r.left + r.width / 2, r.bottom - 10]"
        )
        assert browser.execute_script(f"return document.elementFromPoint({x}, {y}).closest('th') === {head}")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_matrix_is_measured_again_when_it_is_shown(browser, klass):  # noqa: F811
    """A window made narrow while a replay hides the matrix: back on the main page it scrolls in its box."""
    _size(browser, 1280, 800)
    try:
        browser.get("about:blank")
        browser.get(klass.as_uri() + "#game-1")
        _wait(browser, "document.getElementById('ply-counter').textContent.startsWith('start')")
        _size(browser, 390, 844)
        browser.execute_script("location.hash = '#head-to-head'")
        _wait(browser, "document.body.classList.contains('view-main')")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
        wrap = "document.querySelector('.h2h-wrap')"
        assert browser.execute_script(f"return {wrap}.scrollWidth > {wrap}.clientWidth")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_cells_exact_figures_are_on_hover_and_on_the_pairings_games(browser, klass):  # noqa: F811
    with Store(klass.parent / "arena.sqlite", create=False) as store:
        standings = ratings.standings(store)
    board = standings.board
    a, b = str(board["bot"][0]), str(board["bot"][5])
    ids = dict(zip(board["bot"], board["id"], strict=True))
    pair = standings.pairs[(standings.pairs["bot"] == ids[a]) & (standings.pairs["opp"] == ids[b])].iloc[0]
    wdl = f"{int(pair.wins)}-{int(pair.draws)}-{int(pair.losses)}"
    browser.get(klass.as_uri())
    link = browser.execute_script(
        "return [...document.querySelectorAll('a.h2h-link')].find(l => l.dataset.a === arguments[0] && "
        "l.dataset.b === arguments[1])", a, b)  # fmt: skip
    title = link.find_element("xpath", "..").get_attribute("title")
    assert f"{a} vs {b}: {wdl} (W-D-L) in {int(pair.games)} games" in title
    shown = f"{round(100 * (pair.wins + pair.draws / 2) / pair.games)}"
    assert link.text == shown
    link.click()
    _wait(browser, "!document.getElementById('pair-summary').hidden")
    assert browser.execute_script("return document.getElementById('pair-summary').textContent") == title
    count = browser.execute_script("return document.getElementById('games-count').textContent")
    assert count.startswith(f"{int(pair.games)} of ")


def test_places_are_shared_where_the_games_do_not_separate_bots_and_the_page_says_so(browser, klass):  # noqa: F811
    with Store(klass.parent / "arena.sqlite", create=False) as store:
        board = ratings.leaderboard(store)
    _size(browser, 390, 844)
    try:
        browser.get(klass.as_uri())
        cells = "document.querySelectorAll('#leaderboard-table tbody td.place')"
        places = browser.execute_script(f"return [...{cells}].map(c => c.textContent)")
        assert places == list(board["place"]) and any("-" in p for p in places)
        scores = [float(s) for s in board["score_pct"]]
        assert scores == sorted(scores, reverse=True)  # a higher score never ranks lower in a round robin
        rule = browser.execute_script("return document.getElementById('order-rule')")
        assert rule.is_displayed() and ratings.ORDER_RULE in rule.text  # said on a phone too
        glossary = browser.execute_script("return document.getElementById('glossary').textContent")
        for term in ("mu − 3σ", "Elo ±", "ply", "timeout", "crash", "illegal", "garbled"):
            assert term in glossary
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _game_with_capture_and_sweep(folder: Path) -> tuple[int, GameRecord, int]:
    """A game that ends by the rules with a capture on the way: its id, record and the capture's ply."""
    with Store(folder / "arena.sqlite", create=False) as store:
        rows = list(queries.records_between(store, 0, 200))
    rules = parse_rules("kalah")
    for row in rows:
        record = GameRecord.from_dict(row)
        if record.faulty:
            continue
        pos, capture = rules.initial(), None
        for k, move in enumerate(record.plies):
            trace = rules.trace(pos, move)
            if trace.captured and capture is None:
                capture = k
            pos = trace.after
        if capture is not None and trace.swept:
            return int(row["id"]), record, capture
    raise AssertionError("no finished game with a capture in the class store")


def _speed(driver: object, ms: int) -> None:
    """A speed the page does not offer, for the test's own pace."""
    driver.execute_script(  # type: ignore[attr-defined]
        "const s = document.getElementById('speed'); s.add(new Option('test', arguments[0])); "
        "s.value = arguments[0];",
        str(ms),
    )


def test_a_replay_sows_seed_by_seed_and_ends_on_the_records_stores(browser, klass):  # noqa: F811
    """Captures and the end sweep are steps of their own; the last board is the engine's."""
    gid, record, capture = _game_with_capture_and_sweep(klass.parent)
    rules = parse_rules(record.rules)
    browser.get(klass.as_uri() + f"#game-{gid}")
    _wait(browser, "document.getElementById('ply-counter').textContent.startsWith('start')")
    assert browser.execute_script("return document.getElementById('ply-counter').textContent") == (
        f"start · {len(record.plies)} moves"
    )
    # the stores say whose they are
    owners = browser.execute_script(
        "return [...document.querySelectorAll('#board .store .owner')].map(o => o.textContent)"
    )
    assert sorted(owners) == sorted([record.south, record.north])

    # one move sown slowly: the seeds leave the hand one at a time, the holes that got one are marked
    pos = rules.initial()
    first = rules.trace(pos, record.plies[0])
    _speed(browser, 150)
    browser.execute_script("document.getElementById('sow').click()")
    hands = set()
    end = time.monotonic() + 20
    while time.monotonic() < end:
        text = browser.execute_script("return document.getElementById('hand').textContent")
        if text:
            hands.add(text)
        if (
            browser.execute_script("return document.getElementById('ply-counter').textContent")
            == (f"move 1 of {len(record.plies)}")
            and not text
            and len(hands) > 1
        ):
            break
        time.sleep(0.02)
    seeds = first.steps[0][2]
    assert {f"in hand: {k}" for k in range(1, seeds + 1)} >= hands and len(hands) >= min(seeds, 3)
    _wait(browser, "document.getElementById('hand').textContent === ''")
    assert _board(browser) == first.after.board
    got = browser.execute_script(
        "return [...document.querySelectorAll('#board .hole.got')].map(h => Number(h.dataset.hole))"
    )
    assert sorted(got) == sorted({h for kind, h, _ in first.steps if kind == "sow"} - {first.steps[0][1]})

    # the whole game played seed by seed: captures and the sweep are steps of their own, and it ends on the
    # engine's board, whose stores are the record's
    _speed(browser, 2)
    browser.execute_script("document.getElementById('play').click()")
    said = set()
    end = time.monotonic() + 120
    while time.monotonic() < end:
        text = browser.execute_script("return document.getElementById('r-what').textContent")
        said |= {word for word in ("capture:", "game over:") if word in text}
        if browser.execute_script("return document.getElementById('play').textContent") == "▶ play":
            break
        time.sleep(0.005)
    assert browser.execute_script("return document.getElementById('ply-counter').textContent") == (
        f"move {len(record.plies)} of {len(record.plies)}"
    )
    assert browser.execute_script("return document.getElementById('r-error').textContent") == ""
    board = _board(browser)
    n = rules.pits
    assert (board[n], board[2 * n + 1]) == (record.south_store, record.north_store)
    assert "capture:" in said or "game over:" in said  # sampled at the page's pace: at least one seen

    # at a pace a person follows, the capture and the end sweep each stand as a step with its own words
    for ply, words in ((capture, "capture:"), (len(record.plies) - 1, "game over:")):
        browser.get(klass.as_uri() + f"#game-{gid}/{ply}")
        _wait(browser, f"document.getElementById('scrub').value === '{ply}'")
        _speed(browser, 120)
        browser.execute_script("document.getElementById('sow').click()")
        _wait(browser, f"document.getElementById('r-what').textContent.includes('{words}')", timeout=30)


def test_the_big_board_fills_a_projector_and_keys_drive_the_replay(browser, klass):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    gid, record, _ = _game_with_capture_and_sweep(klass.parent)
    _size(browser, 1280, 800)
    try:
        browser.get(klass.as_uri() + f"#game-{gid}")
        _wait(browser, "document.querySelectorAll('#board .hole').length > 0")
        width = "document.getElementById('board').getBoundingClientRect().width"
        small = browser.execute_script(f"return {width}")
        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("b")
        # a key's effect is drawn when the page gets to it: waited for, not read at once (a loaded machine
        # showed "move 1 of" just after the second arrow)
        big = _wait(browser, f"{width} > 1.5 * {small} && {width}")
        assert big <= 1280
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
        body.send_keys(Keys.ARROW_RIGHT)
        body.send_keys(Keys.ARROW_RIGHT)
        _wait(browser, "document.getElementById('ply-counter').textContent.startsWith('move 2 of')")
        body.send_keys(Keys.END)
        n = parse_rules(record.rules).pits
        board = _board(browser)
        assert (board[n], board[2 * n + 1]) == (record.south_store, record.north_store)
        body.send_keys("b")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_space_plays_and_pauses_and_plus_and_minus_change_the_speed(browser, klass):  # noqa: F811
    from selenium.webdriver.common.by import By

    gid, record, _ = _game_with_capture_and_sweep(klass.parent)
    browser.get("about:blank")  # a page of its own: an earlier test's hash change kept its speeds
    browser.get(klass.as_uri() + f"#game-{gid}")
    _wait(browser, "document.getElementById('ply-counter').textContent.startsWith('start')")
    body = browser.find_element(By.TAG_NAME, "body")
    speed = "document.getElementById('speed')"
    values = browser.execute_script(f"return [...{speed}.options].map(o => o.value)")
    normal = browser.execute_script(f"return {speed}.selectedIndex")
    body.send_keys("+")
    assert browser.execute_script(f"return {speed}.selectedIndex") == normal + 1  # faster: less time a seed
    body.send_keys("+" * len(values))
    assert browser.execute_script(f"return {speed}.value") == values[-1] == "0"  # whole moves, no further
    body.send_keys("-" * len(values))
    assert browser.execute_script(f"return {speed}.value") == values[0]  # the slowest, no further
    body.send_keys("+" * (len(values) - 1))  # whole moves: a game plays at a pace a test can watch
    counter = "document.getElementById('ply-counter').textContent"
    body.send_keys(" ")
    assert browser.execute_script("return document.getElementById('play').textContent") == "❚❚ pause"
    _wait(browser, f"{counter}.startsWith('move 2 ')")
    body.send_keys(" ")
    assert browser.execute_script("return document.getElementById('play').textContent") == "▶ play"
    paused = browser.execute_script(f"return {counter}")
    time.sleep(1.5)  # two moves' time at this speed
    assert browser.execute_script(f"return {counter}") == paused and paused != f"move {len(record.plies)} of"
    body.send_keys(" ")  # and on again from there
    _wait(browser, f"{counter} !== {paused!r}")
