"""Openings: a seeded, balanced book; book files; paired games from both sides; records that start from
their opening; and the page's warning when a pairing repeats itself.

The end-to-end tests run `arena run` for real (subprocesses, bots, SQLite) on a small board.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL
from conftest import said

from arena.api import Tournament
from arena.game.openings import (
    BALANCE_DEPTH,
    PLIES,
    Book,
    BookError,
    generate,
    load_book,
    order,
    parse_book,
    position_after,
    score,
    tolerance,
)
from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.store.writer import STORE_FILE, Store

ROOT = Path(__file__).resolve().parent.parent
SMALL = "kalah,pits=4,seeds=3"

# --- the generated book ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["kalah", SMALL, "relay", "kalah,pits=5,seeds=4,early"])
def test_a_generated_book_is_legal_distinct_balanced_and_seeded(spec: str) -> None:
    rules = parse_rules(spec)
    book = generate(rules, 12, seed=5)
    assert len(book.lines) == 12
    start = score(rules, rules.initial())
    positions = set()
    for opening in book.lines:
        assert len(opening) == PLIES and SWAP not in opening
        pos = position_after(rules, opening)
        assert not rules.is_over(pos)
        assert abs(score(rules, pos) - start) <= tolerance(rules)
        positions.add(pos)
    assert len(positions) == 12
    assert generate(rules, 12, seed=5) == book
    assert generate(rules, 12, seed=6).lines != book.lines
    assert f"{BALANCE_DEPTH}-move search" in book.source and "seed 5" in book.source


@pytest.mark.parametrize("spec", ["kalah,pie", "mankalah", "relay,pie"])
def test_under_the_pie_rule_an_opening_is_exactly_souths_first_turn(spec: str) -> None:
    rules = parse_rules(spec)
    book = generate(rules, 50, seed=1)
    assert 1 <= len(book.lines) < 50  # the first turns are all there are
    for opening in book.lines:
        pos = position_after(rules, opening)
        assert (pos.to_move, pos.turn, pos.can_swap) == (NORTH, 1, True), opening


def test_the_start_position_is_kept_out_of_a_generated_book() -> None:
    rules = parse_rules("kalah,pits=3,seeds=2")
    book = generate(rules, 100, seed=1)
    assert 0 < len(book.lines) < 100
    assert all(opening for opening in book.lines)


def test_order_is_a_seeded_permutation() -> None:
    book = Book(tuple((i,) for i in range(1, 7)), "test")
    shuffled = order(book, 3)
    assert sorted(shuffled.lines) == sorted(book.lines) and shuffled == order(book, 3)
    assert shuffled.lines != order(book, 4).lines
    assert [shuffled.for_round(r) for r in (1, 7, 2)] == [
        shuffled.lines[0],
        shuffled.lines[0],
        shuffled.lines[1],
    ]
    assert Book((), "none").for_round(5) == ()


# --- book files ------------------------------------------------------------------------------------------


def test_a_book_file_reads_comments_commas_and_blank_lines() -> None:
    text = "# course openings\n\n3 1 4   # a line with a comment\n2,1, 3\n"
    assert parse_book(text, parse_rules(SMALL)) == ((3, 1, 4), (2, 1, 3))


@pytest.mark.parametrize(
    ("text", "spec", "expected"),
    [
        ("1 2\nthree\n", SMALL, "line 2: 'three' is not a pit number"),
        ("4 4 4\n", SMALL, "line 1: 4 4 4 is not legal under kalah,pits=4,seeds=3"),
        ("9\n", SMALL, "line 1: 9 is not legal"),
        (
            "3 1\n",
            "kalah,pits=4,seeds=3,pie",
            "line 1: under the pie rule an opening is exactly South's first turn",
        ),
        ("# nothing\n\n", SMALL, "no openings in it"),
    ],
)
def test_a_bad_book_is_one_error_naming_the_line(text: str, spec: str, expected: str) -> None:
    with pytest.raises(BookError, match=expected):
        parse_book(text, parse_rules(spec), "course.txt")


def test_an_unreadable_book_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(BookError, match="missing.txt: cannot read the book of openings"):
        load_book(tmp_path / "missing.txt", parse_rules(SMALL))


def test_a_book_that_ends_the_game_is_refused() -> None:
    rules = parse_rules("kalah,pits=1,seeds=1")
    with pytest.raises(BookError, match="the game is over after 1"):
        parse_book("1\n", rules)


# --- end to end ------------------------------------------------------------------------------------------


def deterministic_bots(base: Path) -> Path:
    bots = base / "bots"
    bots.mkdir(parents=True)
    (bots / "first.py").write_text(FIRST_LEGAL, encoding="utf-8")
    (bots / "greedy.py").write_text(
        (ROOT / "bots" / "greedy.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return bots


def arena_run(base: Path, *args: object) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "arena", "run", "--bots", base / "bots", "--out", base / "reports"]
    argv += ["--rules", SMALL, "--move-time", "2000", "--quiet", *args]
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, cwd=base)


def stored(base: Path, name: str) -> list[dict]:
    with Store(base / "reports" / name / STORE_FILE, create=False) as store:
        return list(store.records())


@pytest.mark.slow
def test_deterministic_bots_play_a_distinct_game_for_every_opening_and_side(tmp_path: Path) -> None:
    bots = deterministic_bots(tmp_path)
    out = arena_run(tmp_path, "--rounds", 10, "--openings", 10, "--name", "varied")
    assert out.returncode == 0, out.stderr
    records = stored(tmp_path, "varied")
    assert len(records) == 20
    with Tournament.open(tmp_path / "reports" / "varied") as cup:
        book = cup.book
    assert len(book.lines) == 10
    by_round: dict[int, list[dict]] = defaultdict(list)
    for r in records:
        by_round[r["round"]].append(r)
        assert tuple(r["opening"]) == book.for_round(r["round"])
        rules = parse_rules(r["rules"])  # the record replays from its opening to its end
        pos = position_after(rules, tuple(r["opening"]))
        for move in r["moves"]:
            pos = rules.play(pos, move)
        assert rules.is_over(pos)
        assert (pos.store(SOUTH), pos.store(NORTH)) == (r["south_store"], r["north_store"])
    for games in by_round.values():  # each round's opening is played once from each side
        assert sorted((g["south"], g["north"]) for g in games) == [("first", "greedy"), ("greedy", "first")]
    assert len({(r["south"], tuple(r["opening"]), tuple(r["moves"])) for r in records}) == 20
    page = (tmp_path / "reports" / "varied" / "index.html").read_text(encoding="utf-8")
    assert "Repeated games" not in page
    assert "10 generated from seed 1" in page

    out = arena_run(tmp_path, "--rounds", 10, "--openings", 0, "--name", "start")
    assert out.returncode == 0, out.stderr
    records = stored(tmp_path, "start")
    assert all(r["opening"] == [] for r in records)
    assert len({(r["south"], tuple(r["moves"])) for r in records}) == 2  # the same two games, ten times
    page = (tmp_path / "reports" / "start" / "index.html").read_text(encoding="utf-8")
    assert "Repeated games" in page and "20 games, 2 distinct" in page
    assert bots.is_dir()


@pytest.mark.slow
def test_a_book_file_fixes_the_openings_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    deterministic_bots(tmp_path)
    (tmp_path / "course.txt").write_text("# two openings\n1 2\n3 1 4\n", encoding="utf-8")
    out = arena_run(tmp_path, "--rounds", 2, "--openings", "course.txt", "--name", "course")
    assert out.returncode == 0, out.stderr
    assert {tuple(r["opening"]) for r in stored(tmp_path, "course")} == {(1, 2), (3, 1, 4)}
    assert "2 from the book course.txt" in (tmp_path / "reports" / "course" / "index.html").read_text("utf-8")

    (tmp_path / "bad.txt").write_text("1 2\n4 4 4 4\n", encoding="utf-8")
    out = arena_run(tmp_path, "--openings", "bad.txt", "--name", "bad")
    assert out.returncode == 2
    (line,) = said(out.stderr.strip())
    assert line.startswith("arena: error: bad.txt, line 2: 4 4 4 4 is not legal under kalah,pits=4,seeds=3: ")
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "reports" / "bad" / STORE_FILE).exists()
