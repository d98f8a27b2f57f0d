"""A bot's page tells what its analysed games say over many (arena/report/mistakes.py): seeds lost per move
and won games thrown, by phase, beside the reference bots' figures; read from the store and the analyses
kept beside it, and checked against the analyses' own marks move by move."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from arena.game.analysis import Budget, positions
from arena.game.rules import parse_rules
from arena.report.analysed import mover
from arena.report.mistakes import REFERENCE_BOTS, phase, tally

ROOT = Path(__file__).resolve().parent.parent
RULES = "kalah,pits=3,seeds=3"


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_phases_split_by_the_seeds_left_in_the_pits() -> None:
    rules = parse_rules(
        "kalah,pits=6,seeds=4"
    )  # 48 seeds: the opening above 32 in the pits, the endgame 16 or fewer
    start = rules.initial()
    assert phase(start, 48) == 0
    board = list(start.board)

    def with_in_pits(n: int) -> int:
        pits = [0] * 12
        for k in range(n):
            pits[k % 12] += 1
        b = [*pits[:6], 48 - n, *pits[6:], 0]
        assert len(b) == len(board) and sum(b) == 48
        return phase(start.__class__(tuple(b)), 48)

    assert [with_in_pits(n) for n in (33, 32, 17, 16, 1)] == [0, 1, 1, 2, 2]


def test_a_bots_page_shows_its_analysed_games_beside_the_reference_bots(tmp_path: Path) -> None:
    from arena.api import Tournament
    from arena.match.record import GameRecord
    from arena.store.analyses import kept_or_analysed

    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("greedy", "random"):
        shutil.copy(ROOT / "bots" / f"{name}.py", bots)
    shutil.copy(ROOT / "bots" / "random.py", bots / "mybot.py")
    run = arena(
        "run", "--rounds", "2", "--rules", RULES, "--quiet", "--no-sandbox", "--seed", "5", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    folder = tmp_path / "reports" / "default"  # the tournament's folder: its store, its report
    with Tournament.open(folder) as cup:
        rows = list(cup.records())
    records = [GameRecord.from_dict(row) for row in rows]
    ids = [int(row["id"]) for row in rows]
    analysed = []
    for ident, record in zip(ids, records, strict=True):
        analysis, _ = kept_or_analysed(folder, record, ident, Budget(10, 100))
        analysed.append((record, analysis))
    figures = tally(analysed)

    # move by move, from the analyses' own marks: each bot's moves, seeds lost and won games thrown
    rules = parse_rules(RULES)
    for bot, found in figures.items():
        moves = lost = thrown = 0.0
        games = threw = 0
        for record, analysis in analysed:
            if bot not in (record.south, record.north):
                continue
            games += 1
            mine = [m for m in analysis.moves if not m.opening and mover(record, m.ply, m.side) == bot]
            moves += len(mine)
            lost += sum(max(0.0, m.before - m.after) for m in mine if m.mark.name != "BEST")
            bad = [m for m in mine if m.mark.name in ("WIN_TO_LOSS", "WIN_TO_DRAW")]
            thrown += len(bad)
            threw += bool(bad)
        total = found.total()
        assert (found.games, total.moves, total.thrown, found.thrown_games) == (games, moves, thrown, threw)
        assert abs(total.lost - lost) < 1e-9
        assert total.exact == total.moves, "Kalah(3,3) is exact from the start"
    assert sum(f.total().moves for f in figures.values()) == sum(
        len(positions(rules, r.plies)) - 1 - len(r.opening) for r, _ in analysed
    ), "every ply of the bots' own is some bot's, the opening's none"
    assert sum(f.total().lost for f in figures.values()) > 0, "random bots lose seeds"

    report = arena("report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "reports" / "default" / "index.html").read_text()
    table = re.search(r'<table class="analysed" id="analysed-mybot">(.*?)</table>', page, re.S)
    assert table, "mybot's page has the table"
    rows = [
        re.findall(r"<td[^>]*>([^<]*)</td>", row)
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S)
    ]
    rows = [r for r in rows if r]
    assert [r[0] for r in rows] == ["mybot", "random (reference)", "greedy (reference)"]
    assert tuple(rows[0]) == figures["mybot"].row()
    assert tuple(rows[1][1:]) == figures["random"].row()[1:]
    assert "the opening: while more than two thirds of the seeds are still in the pits" in page
    assert set(REFERENCE_BOTS) >= {"greedy", "random"}


def test_two_games_played_alike_share_one_analysis_and_both_count(tmp_path: Path) -> None:
    """Kept by what was played, one analysis serves every game played move for move alike; each game asked
    for is listed under its own id, so each counts for the bots that played it."""
    from arena.match.record import GameRecord
    from arena.store.analyses import Analyses, kept_or_analysed

    plies = (1, 2, 3)
    first = GameRecord(RULES, "a", "b", plies, 0, 0, None, "normal", None, "", ())  # type: ignore[arg-type]
    second = GameRecord(RULES, "c", "d", plies, 0, 0, None, "normal", None, "", ())  # type: ignore[arg-type]
    one, kept = kept_or_analysed(tmp_path, first, 1, Budget(10, 60))
    assert not kept
    two, kept = kept_or_analysed(tmp_path, second, 2, Budget(10, 60))
    assert kept and two == one
    with Analyses(tmp_path) as analyses:
        assert analyses.games() == [1, 2]
    figures = tally([(first, one), (second, two)])
    assert {bot: f.games for bot, f in figures.items()} == {"a": 1, "b": 1, "c": 1, "d": 1}
