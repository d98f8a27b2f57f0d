"""A settled ranking counts only what it saw: deterministic bots that meet again from the same position play
the same game again, and that game is no new evidence. An adaptive run and an SPRT never run out of openings
(a seeded, unbounded sequence of distinct ones after the book), and a game that repeats an earlier one
exactly counts once in the posterior, the stopping rule and the SPRT: a run's "settled" holds with the
repeats removed."""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

import pytest
from test_settled_run import LOOSE, STEADY, four
from test_tournament import GREEDY, RULES, arena, db_file, first_legal, records, tournament, write_bots

from arena.api import Tournament
from arena.game.openings import Book, generate, load_book, position_after, sequel
from arena.game.rules import parse_rules
from arena.match.clock import TimeControl
from arena.stats import posterior, settle
from arena.store.writer import Store
from arena.tournament.settings import Settings


def distinct(base: Path) -> list[dict]:
    """The stored games with every exact repeat of an earlier one (sides, opening, moves, end) removed:
    counted here from the records, independently of the store's query."""
    seen, kept = set(), []
    for r in records(base):
        game = (
            r["south"],
            r["north"],
            tuple(r["opening"]),
            tuple(map(str, r["moves"])),
            r["winner"],
            r["reason"],
        )
        if game not in seen:
            seen.add(game)
            kept.append(r)
    return kept


def verdict_without_repeats(base: Path, rule: settle.Rule) -> settle.Verdict:
    """The stopping rule applied to the distinct games alone, with arena's own posterior and verdict."""
    kept = distinct(base)
    names = sorted({r["south"] for r in kept} | {r["north"] for r in kept})
    index = {n: k for k, n in enumerate(names)}
    games = [
        (
            r["round"],
            index[r["south"]],
            index[r["north"]],
            None if r["winner"] is None else index[r["winner"]],
        )
        for r in kept
    ]
    post = posterior.posterior(posterior.from_games(games, range(len(names))))
    return settle.verdict(post, rule, names)


def test_a_settled_claim_of_deterministic_bots_holds_with_the_repeats_removed(tmp_path: Path) -> None:
    """One opening in the book: before, the run went round it again and again, and counted every replay of
    the same pair of games as new evidence until it called the ranking settled; with the repeats removed it
    was not. Now the rounds past the book start from new openings, and the claim holds on distinct games."""
    bots = four(tmp_path / "bots")
    with Tournament(
        db_file(tmp_path).parent, Settings(RULES, TimeControl(move_ms=2000), seed=3, openings=1)
    ) as cup:
        cup.run(bots, None, settle=LOOSE, jobs=2)
        said = cup.verdict()
    assert said.settled
    stored = records(tmp_path)
    assert len(distinct(tmp_path)) == len(stored)  # no opening was played twice by one pairing
    assert verdict_without_repeats(tmp_path, LOOSE).settled


def test_repeated_games_count_once_and_a_run_that_can_learn_nothing_new_stops(tmp_path: Path) -> None:
    """Every game from the start position (`--openings 0`, as asked): deterministic bots can only replay
    their first pair of games. The run stops when a whole batch repeated earlier games, and its verdict is
    the one the distinct games give; the posterior is fed each game once."""
    bots = four(tmp_path / "bots")
    with Tournament(
        db_file(tmp_path).parent, Settings(RULES, TimeControl(move_ms=2000), seed=3, openings=0)
    ) as cup:
        cup.run(bots, None, settle=LOOSE, jobs=2)
        said = cup.verdict()
        board = cup.standings().board
    stored, kept = records(tmp_path), distinct(tmp_path)
    assert len(kept) < len(stored) <= 4 * len(kept)  # it repeated, then stopped
    assert said.settled == verdict_without_repeats(tmp_path, LOOSE).settled
    assert not said.settled  # one game per pairing and side cannot settle four bots
    ours = {r.bot: (r.bt_elo, r.bt_pm) for r in board.itertuples()}
    again = verdict_without_repeats(tmp_path, LOOSE)
    assert set(ours) == set(again.names)
    with Store(db_file(tmp_path), create=False) as store:
        results = store.results()
    assert sum(r.repeat for r in results) == len(stored) - len(kept)


@pytest.mark.slow
def test_a_run_stopped_by_repeats_says_so_not_the_cap_and_counts_its_distinct_games(tmp_path: Path) -> None:
    """`--openings 0 --max-games 800`, four deterministic bots: every pairing from the start position can
    only replay its first pair of games. The run stopped at 160 games, 85 of them repeats, and printed "not
    settled (the cap of --max-games)", never said how many games repeated, and its W-D-L counted each replay
    again. Now the reason is the true one, the terminal, the page and the standings export say how many games
    were distinct, and W-D-L counts them as the Elo does; and no pair is asked again once it has replayed
    (a deterministic pair whose openings are used up is done), so far fewer games are spent."""
    import json

    bots = four(tmp_path / "bots")
    out = tournament(tmp_path, bots, *STEADY, "--openings", 0, "--max-games", 800)
    assert out.returncode == 0, out.stderr
    stored, kept = records(tmp_path), distinct(tmp_path)
    assert len(stored) < 800 and len(kept) < len(stored)
    line = next(x for x in out.stdout.splitlines() if x.startswith("not settled"))
    assert "--max-games" not in line, line
    assert line.startswith(f"not settled after {len(stored)} games, {len(kept)} distinct ("), line
    assert re.search(r"repeat(ed)? (an )?earlier (game|ones)", line) and "--openings N" in line, line
    repeated = len(stored) - len(kept)
    assert f"{repeated} of {len(stored)} games repeated an earlier game exactly" in out.stderr, out.stderr
    # the planner leaves a pair alone once it replayed a whole pairing: before, 160 games, 85 of them repeats
    assert len(stored) <= 48, (len(stored), repeated)
    # the standings export and the page count as the Elo does: W-D-L of the distinct games
    exported = arena("export", "--out", tmp_path / "reports", "--name", "t", "--standings", cwd=tmp_path)
    rows = [json.loads(x) for x in exported.stdout.splitlines()]
    mine = Counter(b for r in kept for b in (r["south"], r["north"]))
    assert {r["bot"]: r["distinct"] for r in rows} == dict(mine)
    assert all(r["wins"] + r["draws"] + r["losses"] == r["distinct"] for r in rows)
    assert sum(r["games"] for r in rows) == 2 * len(stored)
    page = (tmp_path / "reports" / "t" / "index.html").read_text(encoding="utf-8")
    assert f"{len(stored)} games between the current bots ({len(kept)} distinct" in page
    assert "look surer than they are" not in page and "count each distinct game once" in page
    table = out.stdout.split("not settled")[0]
    assert re.search(r"\b\d+ \(\d+ distinct\)", table), table


@pytest.mark.slow
def test_past_the_book_come_new_distinct_openings_the_same_from_the_seed_and_a_given_book_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rules = parse_rules("kalah")
    first = sequel(generate(rules, 3, seed=5), rules, 5, given=False)
    second = sequel(generate(rules, 3, seed=5), rules, 5, given=False)
    lines = [first.for_round(r) for r in range(1, 41)]
    assert lines == [second.for_round(r) for r in range(40, 0, -1)][::-1]  # the same, asked in any order
    assert len({position_after(rules, line) for line in lines}) == 40  # every one a new position
    file = tmp_path / "book.txt"
    file.write_text("3 1\n4\n", encoding="utf-8")
    given = sequel(load_book(file, rules), rules, 5, given=True)
    with caplog.at_level(logging.WARNING, logger="arena"):
        assert [given.for_round(r) for r in (1, 2)] == [(3, 1), (4,)]
        assert not caplog.records
        assert given.for_round(3) not in ((3, 1), (4,))
        given.for_round(4)
    assert [r.getMessage() for r in caplog.records] == [
        "the book's 2 openings are used up: further rounds start from new openings drawn from seed 5"
    ]
    assert sequel(Book((), "none"), rules, 5, given=False).for_round(9) == ()  # --openings 0 stays so


def test_under_the_pie_rule_the_openings_end_and_then_repeat_saying_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rules = parse_rules("kalah,pits=3,seeds=2,pie")
    book = sequel(generate(rules, 50, seed=1), rules, 1, given=False)
    with caplog.at_level(logging.WARNING, logger="arena"):
        lines = [book.for_round(r) for r in range(1, 30)]
    distinct_lines = set(lines)
    assert 1 < len(distinct_lines) < 29
    assert any(
        re.search(r"openings are used up: the rules allow no other", r.getMessage()) for r in caplog.records
    )


SPRT_ARGS = ["--rules", RULES, "--move-time", "2000", "--openings", "0", "--jobs", "2"]


@pytest.mark.slow
def test_sprt_counts_a_repeated_pair_once_stops_when_nothing_is_new_and_warns(tmp_path: Path) -> None:
    """Two deterministic bots from the start position play one pair of games for ever: before, the test
    counted 20 copies of it and decided; now it counts it once, stops after a batch of repeats, and says
    why on the terminal."""
    write_bots(tmp_path / "bots", greedy=GREEDY, first=first_legal())
    out = arena(
        "sprt",
        "greedy",
        "first",
        "--bots",
        tmp_path / "bots",
        "--out",
        tmp_path / "reports",
        *SPRT_ARGS,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "H1 accepted" not in out.stdout and "not decided" in out.stdout
    assert re.search(r"games repeated an earlier game exactly", out.stderr), out.stderr
    assert "2 games, pairs 0:0 ½:0 1:0 1½:0 2:1" in out.stdout  # the first pair, counted once
    assert "30 of 32 games repeated" in out.stderr  # a batch of 8 pairs repeated: then it stopped
