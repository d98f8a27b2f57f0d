"""The report's replay viewer with `arena analyse`'s marks, read in headless Chromium as a student reads it:
a game not yet analysed says how to analyse it; once analysed, the evaluation graph under the board, each
move's mark in the move list, the turning point, and the best move at a step ringed on the board."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from test_browser import _wait, browser  # noqa: F401  (the module's headless Chromium)

ROOT = Path(__file__).resolve().parent.parent


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_replay_shows_the_analysis_of_an_analysed_game(browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("greedy", "random"):
        shutil.copy(ROOT / "bots" / f"{name}.py", bots)
    run = arena(
        "run", "--rounds", "1", "--rules", "kalah,pits=3,seeds=3", "--quiet", "--no-sandbox", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    page = tmp_path / "reports" / "default" / "index.html"

    browser.get(page.as_uri() + "#game-1/0")
    _wait(browser, "document.getElementById('r-eval-note').textContent.length > 0")
    note = browser.find_element(By.ID, "r-eval-note").text
    assert note.startswith("Not analysed yet: arena analyse 1")
    assert not browser.find_elements(By.CSS_SELECTOR, "#moves .tag[data-mark]")
    assert not browser.find_element(By.ID, "r-eval-graph").is_displayed()

    done = arena("analyse", "1", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert all(exact for _, exact, *_ in result["values"]), "Kalah(3,3) solves from the start"
    browser.get(page.as_uri() + "#game-1/0")
    browser.refresh()
    _wait(browser, "document.querySelectorAll('#r-eval-graph circle').length > 0")
    assert browser.find_element(By.ID, "r-eval-graph").is_displayed()
    dots = browser.find_elements(By.CSS_SELECTOR, "#r-eval-graph circle")
    assert len(dots) == len(result["values"]), "a dot a position, the start and the end included"
    marked = {
        int(li.get_attribute("data-ply")): li.find_element(By.CSS_SELECTOR, ".tag[data-mark]").text
        for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")
        if li.find_elements(By.CSS_SELECTOR, ".tag[data-mark]")
    }
    costly = {m["ply"]: m["words"] for m in result["moves"] if m["mark"] != "BEST"}
    assert marked == costly, "the move list marks exactly the moves that cost something, in the same words"
    assert browser.find_element(By.ID, "r-turn").text == result["turning_point"]

    # At a step: the best move ringed on the board, for the side to move, said in words
    first = result["moves"][0]
    side, best = first["side"], first["best_move"]
    ringed = browser.execute_script(
        "return [...document.querySelectorAll('#board .hole.best')].map(h => Number(h.dataset.hole));"
    )
    assert ringed == [side * 4 + best - 1]
    assert f"pit {best}" in browser.find_element(By.ID, "r-best").text
    assert "exact" in browser.find_element(By.ID, "r-best").text


def test_the_class_servers_game_page_asks_for_no_analyses_file(browser, tmp_path):  # noqa: F811
    """The page that holds its one game (arena/report/face.py, the class server's) loads no games/analyses.js
    and does not tell a student to run a command on a server they cannot reach: it says the game is not
    analysed, and the board still replays."""
    from selenium.webdriver.common.by import By

    from arena.game.rules import parse_rules
    from arena.match.record import GameRecord
    from arena.report import face

    rules = parse_rules("kalah,pits=3,seeds=3")
    record = GameRecord(rules.spec, "a", "b", (1, 2, 3), 0, 0, None, "normal", None, "", ())  # type: ignore[arg-type]
    body = face.game(record, 7, face.Viewer())
    html = f"<!DOCTYPE html><html><head>{face.style()}</head><body>{body}</body></html>"
    page = tmp_path / "game.html"
    page.write_text(html, encoding="utf-8")
    browser.get(page.as_uri() + "#game-7/1")
    _wait(browser, "document.getElementById('r-eval-note').textContent.length > 0")
    assert browser.find_element(By.ID, "r-eval-note").text == "This game has not been analysed."
    asked = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => n.includes('analyses'));"
    )
    assert asked == []
    assert not browser.find_element(By.ID, "r-eval-graph").is_displayed()


def test_the_class_servers_game_page_draws_its_analysis_in_the_same_viewer(browser, tmp_path):  # noqa: F811
    """A game analysed on the class server (arena/server/analyses.py) is drawn by the report's own viewer
    from the page's inline data: the same graph, marks and turning point as the report's replay."""
    from selenium.webdriver.common.by import By

    from arena.game.analysis import Budget, analyse
    from arena.game.rules import parse_rules
    from arena.match.record import GameRecord
    from arena.report import face, marked

    rules = parse_rules("kalah,pits=3,seeds=3")
    plies = (1, 2, 3)
    record = GameRecord(rules.spec, "a", "b", plies, 0, 0, None, "normal", None, "", ())  # type: ignore[arg-type]
    analysis = analyse(rules, plies, budget=Budget(5, 30))
    data = marked.encode(record, analysis)
    body = face.game(record, 7, face.Viewer(), analysis=data)
    page = tmp_path / "game.html"
    page.write_text(f"<!DOCTYPE html><html><head>{face.style()}</head><body>{body}</body></html>", "utf-8")
    browser.get(page.as_uri() + "#game-7/1")
    _wait(browser, "document.querySelectorAll('#r-eval-graph circle').length > 0")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#r-eval-graph circle")) == len(analysis.values)
    assert browser.find_element(By.ID, "r-turn").text == data["t"][1]
    marks = {
        int(li.get_attribute("data-ply")): li.find_element(By.CSS_SELECTOR, ".tag[data-mark]").text
        for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")
        if li.find_elements(By.CSS_SELECTOR, ".tag[data-mark]")
    }
    assert marks == {m.ply: m.words() for m in analysis.moves if m.mark.name != "BEST"}
