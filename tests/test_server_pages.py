"""What the pages say in a person's browser: the live ladder says when the server cannot be reached (it
showed 'playing: 7 bots' with the server down), and a time is shown in the reader's zone beside UTC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import Server, need_extra

need_extra()

from tests.test_server_e2e import PASSWORD, browser, click, fill, make_class, text, until  # noqa: E402, F401

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    made = Server(tmp_path / "class")
    try:
        yield made
    finally:
        made.stop()


def sign_in(driver: Any, server: Server, username: str) -> None:
    driver.delete_all_cookies()
    driver.get(server.url + "/signin")
    fill(driver, username=username, password=PASSWORD)
    click(driver, "signin")


def test_the_ladder_page_says_when_the_server_is_unreachable(browser: Any, server: Server) -> None:  # noqa: F811
    make_class(server, server.start(), ["ann"])
    sign_in(browser, server, "teach")
    browser.get(server.url + "/teacher")
    fill(browser, when="2030-12-01T17:00+02:00")
    click(browser, "set-deadline")
    shown = text(browser, "deadline")
    assert shown.startswith("Submissions close at 2030-12-01 15:00 UTC ("), shown  # then the reader's own
    assert shown != "Submissions close at 2030-12-01 15:00 UTC."

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
