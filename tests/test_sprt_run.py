"""`arena sprt NEW BASE` with real bots: it decides a clearly better version, prints the test as it goes, a
capped test resumed plays the games an uncapped one plays, and bad input is one line that writes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_tournament import ALPHABETA_2, RULES, arena, first_legal, write_bots

from arena.store.writer import Store

ARGS = ["--rules", RULES, "--move-time", "2000", "--elo1", "50", "--seed", "2"]
LINE = re.compile(
    r"^LLR [+-]\d+\.\d\d \[-2\.94, 2\.94\]  Elo .* (\d+) games, pairs 0:\d+ ½:\d+ 1:\d+ 1½:\d+ 2:\d+"
)


def field(folder: Path) -> Path:
    return write_bots(folder, alphabeta=ALPHABETA_2, first=first_legal())


def sprt(base: Path, *args: object):  # type: ignore[no-untyped-def]
    return arena("sprt", *args, "--bots", base / "bots", "--out", base / "reports", cwd=base)


def stored(base: Path) -> list[tuple]:
    with Store(base / "reports" / "sprt-alphabeta-first" / "arena.sqlite", create=False) as store:
        return [(r["round"], r["south"], r["north"], r["winner"], r["moves"]) for r in store.records()]


@pytest.mark.slow
def test_a_clearly_better_version_is_accepted_and_the_test_is_printed_as_it_goes(tmp_path: Path) -> None:
    field(tmp_path / "bots")
    out = sprt(tmp_path, "alphabeta", "first", *ARGS)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "SPRT elo0 0, elo1 50, alpha 0.05, beta 0.05: stops when the LLR leaves [-2.94, 2.94]"
    progress = [LINE.match(x) for x in lines[1:-1]]
    assert all(progress) and len(progress) >= 2, out.stdout  # one line per batch of 8 pairs, the last once
    assert [int(m[1]) for m in progress] == list(range(16, 16 * len(progress) + 1, 16))
    assert lines[-2].endswith("H1 accepted: the new version is better")
    games = stored(tmp_path)
    assert len(games) == int(progress[-1][1]) and len(games) % 16 == 0
    assert {(r, s) for r, s, _, _, _ in games} == {(r, s) for r in range(1, len(games) // 2 + 1)
                                                    for s in ("alphabeta", "first")}  # fmt: skip
    page = (tmp_path / "reports" / "sprt-alphabeta-first" / "index.html").read_text()
    assert "SPRT: alphabeta against first: SPRT elo0 0, elo1 50" in page  # where the test stands, on its page
    assert "H1 accepted: the new version is better" in page


@pytest.mark.slow
def test_new_and_base_may_be_paths_two_versions_of_one_bot(tmp_path: Path) -> None:
    """As `arena play` takes them: v2/player.py against v1/player.py, one name, two versions."""
    write_bots(tmp_path / "v1", player=first_legal())
    write_bots(tmp_path / "v2", player=ALPHABETA_2)
    (tmp_path / "bots").mkdir()
    out = sprt(tmp_path, tmp_path / "v2" / "player.py", tmp_path / "v1" / "player.py", *ARGS)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2].endswith("H1 accepted: the new version is better")
    with Store(tmp_path / "reports" / "sprt-player-player-base" / "arena.sqlite", create=False) as store:
        assert {r["south"] for r in store.records()} == {"player", "player-base"}
    same = sprt(tmp_path, tmp_path / "v1" / "player.py", "v1/player.py")
    assert same.returncode == 2 and "are the same code" in same.stderr


@pytest.mark.slow
def test_a_capped_test_resumed_plays_the_games_of_an_uncapped_one(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    field(whole / "bots")
    assert sprt(whole, "alphabeta", "first", *ARGS).returncode == 0
    part = tmp_path / "part"
    field(part / "bots")
    capped = sprt(part, "alphabeta", "first", *ARGS, "--max-games", 16)
    assert capped.returncode == 0, capped.stderr
    assert "not decided: the cap of --max-games came first" in capped.stdout
    assert len(stored(part)) == 16
    assert sprt(part, "alphabeta", "first", *ARGS).returncode == 0
    assert stored(part) == stored(whole)


@pytest.mark.parametrize(
    "args, message",
    [
        (["first", "first"], "first and first are the same bot: an SPRT needs a new version and an old one"),
        (["first", "nobody"], "no bot 'nobody' in"),
        (
            ["first", "alphabeta", "--elo0", 10, "--elo1", 0],
            "elo0 must be below elo1 (H0: no better than elo0), not 10 and 0",
        ),  # fmt: skip
        (["first", "alphabeta", "--alpha", 0], "alpha must be between 0 and 0.5 (for instance 0.05), not 0"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args: list, message: str) -> None:
    field(tmp_path / "bots")
    out = sprt(tmp_path, *args)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("arena: error: ")
    assert message in out.stderr
    assert not (tmp_path / "reports").exists()
