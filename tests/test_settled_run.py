"""`arena run` without --rounds: real bots, real processes, the real store. It plays until the ranking is
settled and says so, plays nothing more when run again, gives the same games whatever the jobs and when
stopped and resumed, stops at --max-games saying what is still open, and refuses bad flags in one line
before anything is written."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from test_tournament import (
    ALPHABETA_2,
    GREEDY,
    RULES,
    arena,
    db_file,
    first_legal,
    records,
    resumed,
    tournament,
    write_bots,
)

from arena.api import Tournament
from arena.match.clock import TimeControl
from arena.stats.settle import Rule
from arena.tournament.settings import Settings

STEADY = ["--rules", RULES, "--move-time", "2000", "--seed", "3"]
LOOSE = Rule(resolution=100)  # four small bots settle at this in a few dozen games
NOISE = {"id", "finished_at", "move_ms", "think_ms", "stderr", "worker"}
SETTLED = re.compile(r"^settled after (\d+) games\. Settled when, with 95% confidence", re.M)


def four(folder: Path) -> Path:
    return write_bots(
        folder, greedy=GREEDY, first=first_legal(), last=first_legal(pick="last"), alphabeta=ALPHABETA_2
    )


def games(base: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in NOISE} for r in records(base)]


def library_run(base: Path, bots: Path, jobs: int = 2, progress=None):  # type: ignore[no-untyped-def]
    with Tournament(db_file(base).parent, Settings(RULES, TimeControl(move_ms=2000), seed=3)) as cup:
        return cup.run(bots, None, settle=LOOSE, jobs=jobs, progress=progress)


@pytest.mark.slow
def test_an_adaptive_run_stops_by_itself_settled_and_a_rerun_plays_nothing(tmp_path: Path) -> None:
    bots = four(tmp_path / "bots")
    out = tournament(tmp_path, bots, *STEADY, "--resolution", 100)
    assert out.returncode == 0, out.stderr
    assert "adaptive: plays until settled (0 games stored). Settled when" in out.stdout  # said at the start
    found = SETTLED.search(out.stdout)
    assert found, out.stdout
    stored = records(tmp_path)
    assert len(stored) == int(found[1]) and 16 <= len(stored) < 4 * 3 * 100  # far below 100 rounds
    pairs = Counter((r["round"], frozenset((r["south"], r["north"]))) for r in stored)
    assert set(pairs.values()) == {2}  # every pairing is two games, one from each side
    sides = Counter((r["round"], r["south"], r["north"]) for r in stored)
    assert set(sides.values()) == {1}
    page = (tmp_path / "reports" / "t" / "index.html").read_text(encoding="utf-8")
    assert (
        'id="settling"' in page
        and "Settled when, with 95% confidence" in page
        and "This ranking is settled." in page
    )
    assert page.count('class="opt odds"') == 4  # a place-odds strip per bot

    again = tournament(tmp_path, bots, *STEADY, "--resolution", 100)
    assert again.returncode == 0, again.stderr
    assert resumed(again) == (len(stored), 0)
    assert SETTLED.search(again.stdout)[1] == found[1]
    assert records(tmp_path) == stored


@pytest.mark.slow
def test_the_same_seed_plays_the_same_adaptive_games_whatever_the_jobs(tmp_path: Path) -> None:
    played = []
    for jobs in (1, 2):
        base = tmp_path / f"jobs{jobs}"
        result = library_run(base, four(base / "bots"), jobs)
        assert not result.interrupted and result.played > 0
        played.append(games(base))
    assert played[0] == played[1]


@pytest.mark.slow
def test_an_interrupted_adaptive_run_resumes_to_the_games_of_an_uninterrupted_one(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    library_run(reference, four(reference / "bots"))
    expected = games(reference)

    base = tmp_path / "stopped"
    bots = four(base / "bots")

    def stop(done: int, total: int, record: object) -> None:
        if done == 21:  # in the middle of the second batch (16 games each)
            raise KeyboardInterrupt

    first = library_run(base, bots, progress=stop)
    assert first.interrupted and len(records(base)) == 21
    second = library_run(base, bots)
    assert not second.interrupted
    assert games(base) == expected


@pytest.mark.slow
def test_a_cap_stops_the_run_and_says_what_is_still_open(tmp_path: Path) -> None:
    bots = four(tmp_path / "bots")
    out = tournament(tmp_path, bots, *STEADY, "--resolution", 5, "--max-games", 16)
    assert out.returncode == 0, out.stderr
    assert len(records(tmp_path)) == 16
    line = next(x for x in out.stdout.splitlines() if x.startswith("not settled"))
    assert line.startswith("not settled after 16 games (the cap of --max-games: 16 games played, at most 16)")
    assert "): still open, " in line
    assert " vs " in line and "sure of the order" in line
    assert re.search(r"; about [\d,]+ more games to settle it \(a rough estimate\)$", line), line


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--confidence", 1.5], "confidence must be between 0.5 and 1 (for instance 0.95), not 1.5"),
        (["--resolution", -3], "resolution must be 0 Elo or more (for instance 30), not -3.0"),
        (["--settle", "top", 0], "settle top K needs K of 1 or more, not 0"),
        (["--rounds", 2, "--confidence", 0.9], "--confidence is for an adaptive run, without --rounds"),
        (["--reference", "nobody"], "Invalid value for --reference: 'nobody' is not a bot in"),
        (["--gauntlet", "greedy"], "a gauntlet plays a number of rounds: give --rounds with --gauntlet"),
    ],
)
def test_bad_adaptive_flags_are_one_line_and_write_nothing(tmp_path: Path, flags: list, message: str) -> None:
    bots = four(tmp_path / "bots")
    out = tournament(tmp_path, bots, *STEADY, *flags)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("arena: error: ")
    assert message in out.stderr
    assert not db_file(tmp_path).exists()


@pytest.mark.slow
def test_a_reference_alone_settles_each_bot_against_it_and_says_so_everywhere(tmp_path: Path) -> None:
    """`--reference greedy` without --settle: the run settles every bot against greedy, and each bot's
    verdict (better, worse, within the resolution) is on the terminal, the page and the standings export."""
    import json

    bots = four(tmp_path / "bots")
    out = tournament(tmp_path, bots, *STEADY, "--resolution", 100, "--reference", "greedy")
    assert out.returncode == 0, out.stderr
    assert "every bot is placed against greedy: better, worse, or within 100 Elo" in out.stdout
    line = next(x for x in out.stdout.splitlines() if x.startswith("against greedy (95% sure): "))
    said = {
        bot: word
        for part in line.split(": ", 1)[1].split("; ")
        for word, bots_ in [part.split(": ")]
        for bot in bots_.split(", ")
    }
    assert set(said) == {"first", "last", "alphabeta"}
    page = (tmp_path / "reports" / "t" / "index.html").read_text(encoding="utf-8")
    assert line.replace(">", "&gt;") in page
    exported = arena("export", "--out", tmp_path / "reports", "--name", "t", "--standings", cwd=tmp_path)
    rows = {r["bot"]: r["against"] for r in map(json.loads, exported.stdout.splitlines())}
    assert rows["greedy"] == {}
    words = {"better": "better", "worse": "worse", "within 100 Elo": "within"}
    assert {bot: rows[bot]["greedy"] for bot in said} == {bot: words[w] for bot, w in said.items()}


@pytest.mark.slow
def test_bot_processes_live_from_batch_to_batch(tmp_path: Path) -> None:
    """An adaptive run plays batch after batch; its workers, and so its bots' processes, live through the
    run: each bot runs in at most one process per worker, however many batches (they once were all ended
    after every batch and started again, twice a round robin's wall time per game)."""
    # a token per process, said once at its start (its pid is the sandbox's, the same for every process)
    pid = "import os, sys\nprint(os.urandom(8).hex(), file=sys.stderr, flush=True)\n"
    bots = write_bots(
        tmp_path / "bots",
        first=pid + first_legal(),
        last=pid + first_legal(pick="last"),
        greedy=GREEDY,
        alphabeta=ALPHABETA_2,
    )
    library_run(tmp_path, bots, jobs=2)
    stored = records(tmp_path)
    rounds = {r["round"] for r in stored}
    assert len(rounds) >= 4  # several batches
    for name in ("first", "last"):
        pids = {
            r["stderr"][name].split()[0]
            for r in stored
            if name in (r["south"], r["north"]) and r["stderr"][name]
        }
        assert 1 <= len(pids) <= 2, (name, pids)


@pytest.mark.slow
def test_the_progress_judges_what_is_left_at_its_own_pace_not_after_every_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`arena run`'s progress says what is still open after a batch, judged again only once the table may
    be redrawn: a refit after every batch took as long as planning the next batch, in the pause between
    batches while every worker waits. A clock that stands still: one judgement while batches go on."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    from arena import api
    from arena.cli import cli
    from arena.cli import tournament as command
    from arena.tournament.local import Local

    bots = four(tmp_path / "bots")
    calls: list[str] = []
    verdict, play = api.Tournament.verdict, Local.play
    monkeypatch.setattr(api.Tournament, "verdict", lambda *a, **k: calls.append("judged") or verdict(*a, **k))
    monkeypatch.setattr(Local, "play", lambda *a, **k: calls.append("batch") or play(*a, **k))
    monkeypatch.setattr(command, "time", SimpleNamespace(monotonic=lambda: 0.0))
    args = ["run", "--bots", str(bots), "--out", str(tmp_path / "reports"), "--resolution", "100", *STEADY]
    done = CliRunner().invoke(cli, [*args, "--jobs", "2"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert SETTLED.search(done.output), done.output
    during = calls[: len(calls) - calls[::-1].index("batch")]  # up to the last batch's end
    assert during.count("batch") >= 4 and during.count("judged") == 1, calls


@pytest.mark.slow
def test_openings_past_the_book_are_made_while_a_batch_plays_and_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the book, each new opening costs a few balance searches: made when a batch asked for them, every
    worker waited between batches while they were made (issue 42: 2-5 s of a minute's adaptive run of 6
    bots). Those the next batch will ask for are made while the batch before it plays: past the first
    batch none is made in the pause, and every game starts from the opening a fresh book gives its round."""
    from arena.api import make_book
    from arena.game import openings
    from arena.tournament.adaptive import Adaptive

    # One pair, 8 rounds of it a batch; the same deterministic bot twice: even, and open at 80 games.
    bots = write_bots(tmp_path / "bots", one=GREEDY, two=GREEDY)
    made: list[tuple[int, bool]] = []  # for each opening made past the book: the batch, and in its pause?
    batch = [0, False]  # the batches asked for so far; planning one now?
    make, plan = openings.Sequel._next, Adaptive.next

    def planning(self, results):  # type: ignore[no-untyped-def]
        batch[:] = [batch[0] + 1, True]
        try:
            return plan(self, results)
        finally:
            batch[1] = False

    def making(self):  # type: ignore[no-untyped-def]
        made.append((batch[0], bool(batch[1])))
        return make(self)

    monkeypatch.setattr(Adaptive, "next", planning)
    monkeypatch.setattr(openings.Sequel, "_next", making)
    settings = Settings(RULES, TimeControl(move_ms=2000), seed=3, openings=2)
    with Tournament(db_file(tmp_path).parent, settings) as cup:
        cup.run(bots, None, max_games=80, jobs=2)
    stored = records(tmp_path)
    assert len(stored) == 80 and max(r["round"] for r in stored) == 40  # five batches of 8 rounds
    assert [k for k, paused in made if k == 1 and paused]  # the first batch's, made when it asked
    assert [k for k, paused in made if not paused]
    assert not [k for k, paused in made if k > 1 and paused], made
    fresh = openings.sequel(make_book(settings), settings.game_rules(), settings.seed, given=False)
    assert all(tuple(r["opening"]) == fresh.for_round(r["round"]) for r in stored)
