"""What the pages say in a person's browser: the live ladder says when the server cannot be reached (it
showed 'playing: 7 bots' with the server down), and a time is shown in the reader's zone, UTC on hover."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import Server, need_extra

need_extra()

from tests.test_server_e2e import PASSWORD, _by, browser, click, fill, make_class, text, until  # noqa: E402, F401

pytestmark = pytest.mark.slow


def sign_in(driver: Any, server: Server, username: str) -> None:
    driver.delete_all_cookies()
    driver.get(server.url + "/signin")
    fill(driver, username=username, password=PASSWORD)
    click(driver, "signin")


def test_the_ladder_page_says_when_the_server_is_unreachable(browser: Any, server: Server) -> None:  # noqa: F811
    make_class(server, server.start(), ["ann"])
    sign_in(browser, server, "teach")
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Europe/Berlin"})
    browser.get(server.url + "/teacher")
    fill(browser, when="2030-12-01T17:00+02:00")
    click(browser, "set-deadline")
    shown = text(browser, "deadline")
    assert shown.startswith("Submissions close at ") and shown.endswith(")."), shown  # the reader's zone
    assert "UTC" not in shown and "(Europe/Berlin)" in shown, shown
    assert "16:00" in shown or "4:00 PM" in shown, shown  # the browser's own way of writing the hour
    hover = browser.find_element(_by().CSS_SELECTOR, "#deadline time").get_attribute("title")
    assert hover == "2030-12-01 15:00 UTC", hover

    sign_in(browser, server, "ann")
    browser.get(server.url + "/ladder")
    assert "cannot be reached" not in text(browser, "note")
    server.stop()
    said = until(
        "the page to notice",
        lambda: "cannot be reached" in text(browser, "note") and text(browser, "note"),
        30,
    )
    assert said.startswith("the server cannot be reached: these results are as they were at"), said


def test_the_ladder_and_the_final_fit_a_phone(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    """A class of thirty with long names, at 390 px: no table reaches past the screen's edge."""
    from arena.api import Tournament
    from arena.match.clock import TimeControl
    from arena.server.classdir import ClassDir
    from arena.server.standings import ladder
    from arena.tournament.settings import Settings
    from tests import classroom
    from tests.test_server_e2e import overflow

    where = ClassDir(tmp_path / "class")
    where.make()
    for folder, pages in ((where.ladder, "ladder"), (where.final / "ranking", "final")):
        folder.mkdir(parents=True, exist_ok=True)
        classroom.build(folder / "arena.sqlite", rounds=1)
        with Tournament(folder, Settings("kalah", TimeControl(1000, 10_000), 3)) as cup:
            ladder.write_snapshot(cup, "a class of thirty", True, pages)
    made = Server(where.root)
    try:
        make_class(made, made.start(), ["ann"])
        sign_in(browser, made, "teach")
        browser.set_window_size(390, 844)
        try:
            for path in ("/ladder", "/final"):
                browser.get(made.url + path)
                assert len(browser.find_elements(_by().CSS_SELECTOR, "#leaderboard-table tbody tr")) == 30
                width = browser.execute_script("return document.documentElement.clientWidth")
                assert width <= 400, f"the window is a phone's, not {width} px"
                assert overflow(browser, "leaderboard-table", "recent") == [], (
                    path
                )  # the matrix scrolls in its box
            # a bot's page, opened from its name in the standings: the report's, and no wider than a phone
            long = "minimax_depth4_with_pruning"
            browser.find_element(_by().LINK_TEXT, long).click()
            until("the bot's page", lambda: browser.find_elements(_by().ID, f"bot-{long}"), 30, 0.2)
            for width in (390, 1280):
                browser.set_window_size(width, 844)
                assert browser.current_url == f"{made.url}/final/bots/{long}"
                assert "Results by opponent" in text(browser, f"bot-{long}")
                sideways = "const e = document.documentElement; return e.scrollWidth - e.clientWidth"
                assert browser.execute_script(sideways) <= 0, f"the bot's page scrolls sideways at {width} px"
        finally:
            browser.set_window_size(1280, 1000)
    finally:
        made.stop()
