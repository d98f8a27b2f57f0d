"""The page for a class of thirty, in headless Chromium at a projector's 1280 px and a phone's 390 px: the
head-to-head matrix fits or keeps its names in view, its figures are there on hover and on the pairing's
games, and the leaderboard says shared places and why. The store is tests/classroom.py's (no bot runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from classroom import NAMES, build
from test_browser import _wait, browser  # noqa: F401  (the module's headless Chromium)

from arena.report import page as report
from arena.tournament import ratings
from arena.tournament.store import Store


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
