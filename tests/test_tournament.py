"""Tournaments end to end: the seeded schedule, `arena run` and its SQLite store, resuming after more rounds,
a new or a changed bot, Ctrl-C and kill -9, determinism across --jobs, bad input, and broken bots.

Everything runs for real: `python -m arena` subprocesses, bot processes and SQLite files in tmp_path. A small
board, fast deterministic bots (greedy, first legal pit, alphabeta at a fixed depth) and few rounds keep the
whole file to seconds.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import markupsafe
import pytest
from cli_kit import arena
from procs import processes_mentioning

from arena.api import Tournament
from arena.game.rules import SWAP, parse_rules
from arena.match.bots import Bot, discover
from arena.match.clock import TimeControl
from arena.match.record import GameRecord, told
from arena.stats import ratings
from arena.store.writer import EXPORT_FIELDS, Store, store_path
from arena.tournament.schedule import Slot, gauntlet, round_robin
from arena.tournament.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
RULES = "kalah,pits=4,seeds=3"
QUICK = ["--rules", RULES, "--move-time", "200"]
# Where a test looks at how games went, a timeout would be noise, not a finding: the bots answer in a few
# ms, so a generous clock costs nothing and keeps a loaded machine from changing a game.
STEADY = ["--rules", RULES, "--move-time", "2000"]
NAME = "t"
RECORD_FIELDS = set("rules south north moves south_store north_store winner reason faulty detail".split())
RECORD_FIELDS |= {"move_ms", "stderr"}
RESUMED = re.compile(r"^resumed: (\d+) games were already stored, (\d+) played now$", re.M)

# --- bots ------------------------------------------------------------------------------------------------


def first_legal(delay: float = 0.0, pick: str = "first") -> str:
    """A deterministic bot: the first (or last) non-empty pit, after `delay` seconds per move."""
    order = "range(1, pits + 1)" if pick == "first" else "range(pits, 0, -1)"
    return (
        "import sys, time\n"
        "for line in sys.stdin:\n"
        "    words = line.split()\n"
        "    if words and words[0] == 'MOVE':\n"
        f"        time.sleep({delay})\n"
        "        pits = (len(words) - 4) // 2\n"
        f"        print(next(p for p in {order} if words[1 + p] != '0'), flush=True)\n"
        "    elif words and words[0] == 'QUIT':\n"
        "        break\n"
    )


GREEDY = (ROOT / "bots" / "greedy.py").read_text(encoding="utf-8")
RANDOM = (ROOT / "bots" / "random.py").read_text(encoding="utf-8")
# alphabeta takes ARENA_DEPTH for a fixed, deterministic depth, but a bots folder passes no arguments: the
# bot's own code with the variable set first (a copy, not a runpy wrapper: the sandbox shows a bot only its
# own file)
ALPHABETA_2 = "import os\nos.environ['ARENA_DEPTH'] = '2'\n" + (ROOT / "bots" / "alphabeta.py").read_text(
    encoding="utf-8"
)
CRASHER = "raise SystemExit('cannot find my weights file')\n"
GARBLER = (
    "import sys\n"
    "for line in sys.stdin:\n"
    "    words = line.split()\n"
    "    if words and words[0] == 'MOVE':\n"
    "        print('hello there', flush=True)\n"
    "    elif words and words[0] == 'QUIT':\n"
    "        break\n"
)


def write_bots(folder: Path, **sources: str) -> Path:
    """NAME.py for every NAME=source in `folder` (made if needed); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return folder


def fake_bots(*names: str) -> list[Bot]:
    """Bots that are only names, for the schedule: nothing is started."""
    return [Bot(n, ("true",), Path("."), Path(n), "0" * 16) for n in names]


# --- the command and its store ---------------------------------------------------------------------------


def run_args(base: Path, bots: Path, *extra: object) -> list[object]:
    return ["run", "--bots", bots, "--out", base / "reports", "--name", NAME, *extra]


def tournament(base: Path, bots: Path, *extra: object) -> subprocess.CompletedProcess[str]:
    """`arena run` of tournament NAME under base/reports, from base."""
    return arena(*run_args(base, bots, *extra), cwd=base)


def db_file(base: Path) -> Path:
    return store_path(base / "reports", NAME)


def export(base: Path, fmt: str = "jsonl") -> subprocess.CompletedProcess[str]:
    return arena("export", "--out", base / "reports", "--name", NAME, "--format", fmt, cwd=base)


def exported(base: Path) -> list[dict]:
    """The records `arena export --format jsonl` prints."""
    out = export(base)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def records(base: Path) -> list[dict]:
    """The same records read through the library, where the command is not the point (faster)."""
    with Store(db_file(base), create=False) as store:
        return list(store.records())


def resumed(out: subprocess.CompletedProcess[str]) -> tuple[int, int]:
    """(already stored, played now) from the run's 'resumed:' line."""
    found = RESUMED.search(out.stdout)
    assert found, out.stdout
    return int(found[1]), int(found[2])


def count_games(path: Path) -> int:
    """Games in the store at `path` while (or after) a tournament writes it; 0 before it has a schema."""
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=10)) as db:
            return int(db.execute("SELECT count(*) FROM games").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def leaderboard(base: Path):  # type: ignore[no-untyped-def]
    with Store(db_file(base), create=False) as store:
        return ratings.leaderboard(store)


def replay(record: dict) -> tuple[int, int]:
    """Final stores after replaying a record's opening and moves through the rules engine, which must end
    the game."""
    rules = parse_rules(record["rules"])
    pos = rules.initial()
    for move in record["opening"] + record["moves"]:
        pos = rules.play(pos, move if move == SWAP else int(move))
    assert rules.is_over(pos), record
    return pos.store(0), pos.store(1)


def game_keys(recs: list[dict]) -> list[tuple[int, str, str]]:
    return [(r["round"], r["south"], r["north"]) for r in recs]


def schedule(bots: Path, rounds: int, seed: int = 1) -> list[tuple[int, str, str]]:
    return [(s.round, s.south.name, s.north.name) for s in round_robin(discover(bots), rounds, seed)]


# --- processes -------------------------------------------------------------------------------------------


def left_after(text: str, seconds: float = 5.0) -> list[int]:
    """The processes mentioning `text` still there after up to `seconds` of waiting for them to go."""
    deadline = time.monotonic() + seconds
    while (left := processes_mentioning(text)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def describe(pids: list[int]) -> list[str]:
    """'pid state ppid: command line' of each process, for a failure message."""
    lines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            lines.append(f"{pid} {stat[0]} ppid {stat[1]}: {cmd[-120:]}")
    return lines


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background shell may have started us with it ignored


def start_tournament(base: Path, bots: Path, *extra: object) -> subprocess.Popen[str]:
    """`arena run` in the background, leading its own process group, with Ctrl-C at its default."""
    return subprocess.Popen(
        [sys.executable, "-m", "arena", *map(str, run_args(base, bots, *extra))],
        cwd=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


def wait_for_games(proc: subprocess.Popen[str], path: Path, games: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while (stored := count_games(path)) < games:
        assert proc.poll() is None, f"the tournament ended before {games} games: {proc.communicate()}"
        assert time.monotonic() < deadline, f"only {stored} games after {timeout} s"
        time.sleep(0.02)
    return stored


@contextlib.contextmanager
def cleanup(proc: subprocess.Popen[str], folder: Path):  # type: ignore[no-untyped-def]
    """Whatever a failing test left running of this tournament ends with the test."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in processes_mentioning(str(folder)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --- 1. the schedule -------------------------------------------------------------------------------------


def test_round_robin_plays_every_ordered_pair_once_per_round():
    names = ["ant", "bee", "cat", "dog"]
    slots = round_robin(fake_bots(*names), rounds=3, seed=5)
    assert len(slots) == 3 * 4 * 3
    assert [s.round for s in slots] == sorted(s.round for s in slots)
    for rnd in (1, 2, 3):
        pairs = Counter((s.south.name, s.north.name) for s in slots if s.round == rnd)
        assert pairs == Counter({(a, b): 1 for a in names for b in names if a != b})
        ordinals = [s.ordinal for s in slots if s.round == rnd]
        assert ordinals == sorted(ordinals)


def test_round_robin_order_comes_from_the_seed():
    bots = fake_bots("ant", "bee", "cat", "dog", "eel")

    def order(seed: int) -> list[tuple[int, str, str]]:
        return [(s.round, s.south.name, s.north.name) for s in round_robin(bots, 2, seed)]

    assert order(1) == order(1)
    assert order(2) != order(1)
    assert set(order(2)) == set(order(1))
    assert order(1)[:20] != sorted(order(1)[:20])  # shuffled, not in name order


def test_adding_a_bot_keeps_the_order_of_the_old_games():
    old = round_robin(fake_bots("ant", "bee", "cat", "dog"), 3, seed=9)
    new = round_robin(fake_bots("ant", "bee", "cat", "cow", "dog"), 3, seed=9)
    assert len(new) == 3 * 5 * 4

    def games(slots: list[Slot]) -> list[tuple[int, str, str, str]]:
        return [(s.round, s.ordinal, s.south.name, s.north.name) for s in slots]

    assert games([s for s in new if "cow" not in (s.south.name, s.north.name)]) == games(old)
    # the newcomer's games are spread through each round, not appended at its end
    first_round = [s for s in new if s.round == 1]
    cow = [i for i, s in enumerate(first_round) if "cow" in (s.south.name, s.north.name)]
    assert cow != list(range(len(first_round) - len(cow), len(first_round)))


def test_gauntlet_is_exactly_the_heros_games():
    bots = fake_bots("ant", "bee", "cat", "dog")
    hero = bots[2]
    full = round_robin(bots, 2, seed=4)
    games = gauntlet(hero, bots, 2, seed=4)
    assert games == [s for s in full if hero.name in (s.south.name, s.north.name)]
    assert len(games) == 2 * 2 * 3
    assert Counter((s.round, s.south.name, s.north.name) for s in games) == Counter(
        {(r, a, b): 1 for r in (1, 2) for a in "ant bee cat dog".split() for b in "ant bee cat dog".split()
         if a != b and "cat" in (a, b)}
    )  # fmt: skip


# --- 2. a tournament end to end --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """One finished 2-round tournament of greedy, first and alphabeta (depth 2): (base, bots, run)."""
    base = tmp_path_factory.mktemp("e2e")
    bots = write_bots(base / "bots", greedy=GREEDY, first=first_legal(), alphabeta=ALPHABETA_2)
    return base, bots, tournament(base, bots, "--rounds", 2, *STEADY)


@pytest.fixture(scope="module")
def jsonl(played) -> list[dict]:  # type: ignore[no-untyped-def]
    """`arena export --format jsonl` of that tournament."""
    return exported(played[0])


@pytest.mark.slow
def test_run_prints_the_leaderboard_and_stores_every_game(played):
    base, bots, out = played
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"new tournament '{NAME}': 3 bots; 12 of 12 games to play"
    assert "place" in lines[1] and "bot" in lines[1]
    for name in ("greedy", "first", "alphabeta"):
        assert any(re.search(rf"\s{name}\s", line) for line in lines[2:5]), out.stdout
    page = base / "reports" / NAME / "index.html"
    assert lines[-1] == f"report: {page}"
    assert page.is_file()
    assert "resumed" not in out.stdout
    assert count_games(db_file(base)) == 3 * 2 * 2


@pytest.mark.slow
def test_export_jsonl_is_every_game_in_schedule_order_and_replays(played, jsonl):
    _, bots, _ = played
    recs = jsonl
    assert len(recs) == 12
    assert game_keys(recs) == schedule(bots, 2)
    assert len({r["id"] for r in recs}) == 12
    for r in recs:
        assert RECORD_FIELDS | {"round", "id"} <= set(r), sorted(r)
        assert r["rules"] == RULES
        assert r["reason"] == "normal" and r["faulty"] is None, r
        assert replay(r) == (r["south_store"], r["north_store"])
        assert len(r["move_ms"]) == len(r["moves"])
        assert set(r["stderr"]) == {r["south"], r["north"]}
        if "alphabeta" in r["stderr"]:  # it searched at the fixed depth, never cut short by the clock
            assert "depth 2 value" in r["stderr"]["alphabeta"] and "ran out" not in r["stderr"]["alphabeta"]


def test_export_records_hold_every_field_of_a_game_record(jsonl):
    record = jsonl[0]
    assert {f.name for f in dataclasses.fields(GameRecord)} <= set(record)


@pytest.mark.slow
def test_export_csv_parses_to_the_same_games(played, jsonl):
    out = export(played[0], "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    recs = jsonl
    assert len(rows) == len(recs) == 12
    assert tuple(rows[0]) == EXPORT_FIELDS
    for row, rec in zip(rows, recs, strict=True):
        assert int(row["id"]) == rec["id"] and int(row["round"]) == rec["round"]
        assert (row["south"], row["north"]) == (rec["south"], rec["north"])
        assert row["winner"] == (rec["winner"] or "")  # CSV writes None as an empty cell
        assert json.loads(row["moves"]) == rec["moves"]
        assert json.loads(row["stderr"]) == rec["stderr"]
        assert (int(row["south_store"]), int(row["north_store"])) == (rec["south_store"], rec["north_store"])


@pytest.mark.slow
def test_report_writes_the_page_again(played):
    base, _, _ = played
    page = base / "reports" / NAME / "index.html"
    page.unlink()
    out = arena("report", "--out", base / "reports", "--name", NAME, cwd=base)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"report: {page}"
    text = page.read_text(encoding="utf-8")
    assert all(name in text for name in ("greedy", "first", "alphabeta"))


# --- 3. resume -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_resume_plays_only_what_is_missing(tmp_path):
    bots = write_bots(tmp_path / "bots", greedy=GREEDY, first=first_legal(), last=first_legal(pick="last"))
    out = tournament(tmp_path, bots, "--rounds", 1, *QUICK)
    assert out.returncode == 0, out.stderr
    first_run = records(tmp_path)
    assert len(first_run) == 6

    # the same command again: nothing to do, nothing touched
    out = tournament(tmp_path, bots, "--rounds", 1, *QUICK)
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (6, 0)
    assert records(tmp_path) == first_run

    # another round: only its games are played
    out = tournament(tmp_path, bots, "--rounds", 2, *QUICK)
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (6, 6)
    two_rounds = records(tmp_path)
    assert game_keys(two_rounds) == schedule(bots, 2)
    assert [r for r in two_rounds if r["round"] == 1] == first_run

    # a new bot: only its games are played
    write_bots(bots, random=RANDOM)
    out = tournament(tmp_path, bots, "--rounds", 2, *QUICK)
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (12, 12)
    four_bots = records(tmp_path)
    assert game_keys(four_bots) == schedule(bots, 2)
    new = [r for r in four_bots if r["id"] not in {x["id"] for x in two_rounds}]
    assert len(new) == 12 and all("random" in (r["south"], r["north"]) for r in new)
    assert [r for r in four_bots if r["id"] in {x["id"] for x in two_rounds}] == two_rounds


@pytest.mark.slow
def test_a_changed_bot_is_a_new_version_and_its_old_games_leave_the_leaderboard(tmp_path):
    bots = write_bots(tmp_path / "bots", greedy=GREEDY, first=first_legal(), last=first_legal(pick="last"))
    out = tournament(tmp_path, bots, "--rounds", 2, *QUICK)
    assert out.returncode == 0, out.stderr
    before = records(tmp_path)
    assert len(before) == 12
    assert set(leaderboard(tmp_path)["games"]) == {8}

    (bots / "first.py").write_text(first_legal() + "# version 2: now with comments\n", encoding="utf-8")
    out = tournament(tmp_path, bots, "--rounds", 2, *QUICK)
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (4, 8)  # greedy-last games stay; every game of the new 'first' is played

    after = exported(tmp_path)
    assert len(after) == 20  # the old version's 8 games stay in the store and in the export
    assert [r for r in after if r["id"] in {x["id"] for x in before}] == before
    board = leaderboard(tmp_path)
    assert sorted(board["bot"]) == ["first", "greedy", "last"]
    assert list(board["games"]) == [8, 8, 8]  # only the current versions' games count
    new_digest = next(b.digest for b in discover(bots) if b.name == "first")
    assert board.set_index("bot").loc["first", "digest"] == new_digest
    lines = out.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "place" in line.split())
    games = lines[header].split().index("games")  # the printed table agrees: its games column
    for line in lines[header + 1 : header + 4]:
        assert line.split()[games] == "8", out.stdout


# --- 4. interrupts ---------------------------------------------------------------------------------------


def slow_field(folder: Path) -> Path:
    """Three deterministic bots; 'first' takes 20 ms a move so a tournament lasts long enough to stop."""
    return write_bots(folder, greedy=GREEDY, first=first_legal(delay=0.02), alphabeta=ALPHABETA_2)


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_the_same_command_resumes(tmp_path):
    bots = slow_field(tmp_path / "bots")
    args = ("--rounds", 3, "--jobs", 2, *STEADY)
    scheduled = 3 * 3 * 2
    proc = start_tournament(tmp_path, bots, *args)
    with cleanup(proc, bots):
        wait_for_games(proc, db_file(tmp_path), 3)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole foreground group
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "run the same command again to resume" in err
        assert "Traceback" not in err
        left = left_after(str(bots))
        assert left == [], describe(left)

    kept = records(tmp_path)
    assert 3 <= len(kept) < scheduled
    for r in kept:  # only finished games were stored
        assert r["reason"] == "normal", r
        assert replay(r) == (r["south_store"], r["north_store"])

    out = tournament(tmp_path, bots, *args)
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (len(kept), scheduled - len(kept))
    done = records(tmp_path)
    assert len(done) == scheduled
    assert game_keys(done) == schedule(bots, 3)  # each scheduled game once: no duplicates, none missing
    assert [r for r in done if r["id"] in {k["id"] for k in kept}] == kept


@pytest.mark.slow
def test_kill_9_leaves_no_process_and_a_rerun_gives_the_uninterrupted_results(tmp_path):
    args = ("--rounds", 3, "--jobs", 2, "--seed", 11, *STEADY)
    scheduled = 3 * 3 * 2

    def results(base: Path) -> list[tuple]:
        return [(r["round"], r["south"], r["north"], r["winner"], r["moves"]) for r in records(base)]

    reference = tmp_path / "reference"
    # the same bots without the delay (which changes no move): the reference need not be slow
    fast = write_bots(reference / "bots", greedy=GREEDY, first=first_legal(), alphabeta=ALPHABETA_2)
    out = tournament(reference, fast, *args)
    assert out.returncode == 0, out.stderr
    expected = results(reference)
    assert len(expected) == scheduled

    base = tmp_path / "killed"
    bots = slow_field(base / "bots")
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    proc = start_tournament(base, bots, *args)
    with cleanup(proc, bots):
        wait_for_games(proc, db_file(base), rng.randint(1, 6))
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(proc.pid, signal.SIGKILL)  # the main process only: its workers must notice by themselves
        proc.communicate(timeout=30)
        left = left_after(str(bots))
        assert left == [], (f"random seed {seed}", describe(left))

    with contextlib.closing(sqlite3.connect(db_file(base))) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = db.execute("SELECT count(*) FROM games").fetchone()[0]
    assert 1 <= stored < scheduled, f"random seed {seed}: the kill came after the tournament ended"

    out = tournament(base, bots, *args)
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (stored, scheduled - stored)
    assert results(base) == expected, f"random seed {seed}"


# --- 5. determinism --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_same_seed_gives_the_same_games_and_ratings_whatever_the_jobs(tmp_path):
    noise = {"id", "finished_at", "move_ms", "think_ms", "stderr"}  # timings vary
    outcome = []
    for jobs in (1, 2):
        base = tmp_path / f"jobs{jobs}"
        bots = write_bots(base / "bots", greedy=GREEDY, first=first_legal(), alphabeta=ALPHABETA_2)
        out = tournament(base, bots, "--rounds", 2, "--seed", 3, "--jobs", jobs, *STEADY)
        assert out.returncode == 0, out.stderr
        recs = [{k: v for k, v in r.items() if k not in noise} for r in records(base)]
        board = leaderboard(base)[["bot", "mu", "sigma", "games", "wins", "draws", "losses"]]
        outcome.append((recs, board.to_dict("records")))
    assert len(outcome[0][0]) == 12
    assert outcome[0][0] == outcome[1][0]
    assert outcome[0][1] == outcome[1][1]


# --- 6. bad input ----------------------------------------------------------------------------------------


def library_tournament(base: Path, bots: Path) -> int:
    """A finished 1-round tournament under QUICK's settings, played through the library; its game count."""
    with Tournament(db_file(base).parent, Settings(RULES, TimeControl(move_ms=200))) as cup:
        result = cup.run(bots, 1, jobs=2)
        assert result.played == result.scheduled > 0
        return cup.store.count_games()


def two_bots(base: Path) -> Path:
    return write_bots(base / "bots", greedy=GREEDY, first=first_legal())


def no_store(base: Path) -> None:
    assert not db_file(base).exists()


def resumes_as_before(games: int):  # type: ignore[no-untyped-def]
    def check(base: Path) -> None:
        assert count_games(db_file(base)) == games
        out = tournament(base, base / "bots", "--rounds", 1, *QUICK)
        assert out.returncode == 0, out.stderr
        assert resumed(out) == (games, 0)

    return check


def case_missing_folder(base):  # type: ignore[no-untyped-def]
    return run_args(base, base / "nowhere"), ["nowhere: no such bots folder"], no_store


def case_empty_folder(base):  # type: ignore[no-untyped-def]
    (base / "bots").mkdir()
    return run_args(base, base / "bots"), ["at least two bots", "has 0"], no_store


def case_single_bot(base):  # type: ignore[no-untyped-def]
    bots = write_bots(base / "bots", greedy=GREEDY)
    return run_args(base, bots), ["at least two bots", "has 1"], no_store


def case_bad_rules(base):  # type: ignore[no-untyped-def]
    return run_args(base, two_bots(base), "--rules", "kalah,pits=x"), ["--rules", "pits='x'"], no_store


def case_other_rules(base):  # type: ignore[no-untyped-def]
    games = library_tournament(base, two_bots(base))
    args = run_args(base, base / "bots", "--rules", "kalah,pits=5,seeds=3", "--move-time", 200)
    return args, [f"rules {RULES} (asked: kalah,pits=5,seeds=3)", "another --name"], resumes_as_before(games)


def case_other_move_time(base):  # type: ignore[no-untyped-def]
    games = library_tournament(base, two_bots(base))
    args = run_args(base, base / "bots", "--rules", RULES, "--move-time", 300)
    return args, ["move_ms 200 (asked: 300)", "another --name"], resumes_as_before(games)


def case_nobody(base):  # type: ignore[no-untyped-def]
    return (
        run_args(base, two_bots(base), "--gauntlet", "nobody"),
        ["gauntlet nobody: no such bot"],
        no_store,
    )


def case_not_sqlite(base):  # type: ignore[no-untyped-def]
    garbage = b"this is not a database, it is a shopping list\n" * 100
    db_file(base).parent.mkdir(parents=True)
    db_file(base).write_bytes(garbage)

    def unchanged(base: Path) -> None:
        assert db_file(base).read_bytes() == garbage

    return (
        run_args(base, two_bots(base)),
        ["arena.sqlite is not an arena store", "another --name", ".recover"],
        unchanged,
    )


def case_empty_store(base):  # type: ignore[no-untyped-def]
    db_file(base).parent.mkdir(parents=True)
    db_file(base).write_bytes(b"")  # a copy that failed: not a new tournament

    def unchanged(base: Path) -> None:
        assert db_file(base).read_bytes() == b""

    return run_args(base, two_bots(base)), ["arena.sqlite is empty (0 bytes)", "another --name"], unchanged


def case_other_version(base):  # type: ignore[no-untyped-def]
    games = library_tournament(base, two_bots(base))
    with contextlib.closing(sqlite3.connect(db_file(base))) as db:
        db.execute("UPDATE meta SET value = '999' WHERE key = 'schema'")
        db.commit()

    def unchanged(base: Path) -> None:
        with contextlib.closing(sqlite3.connect(db_file(base))) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("999",)
            assert db.execute("SELECT count(*) FROM games").fetchone() == (games,)

    return run_args(base, base / "bots"), ["another version of arena", "schema 999", "new --name"], unchanged


def case_report_missing(base):  # type: ignore[no-untyped-def]
    return ["report", "--out", base / "reports", "--name", NAME], ["no tournament store"], no_store


def case_export_missing(base):  # type: ignore[no-untyped-def]
    return ["export", "--out", base / "reports", "--name", NAME], ["no tournament store"], no_store


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        case_missing_folder,
        case_empty_folder,
        case_single_bot,
        case_bad_rules,
        case_other_rules,
        case_other_move_time,
        case_nobody,
        case_not_sqlite,
        case_empty_store,
        case_other_version,
        case_report_missing,
        case_export_missing,
    ],
    ids=lambda case: case.__name__.removeprefix("case_"),
)
def test_bad_input_is_one_clear_line_and_harms_no_store(tmp_path, case):
    args, words, check = case(tmp_path)
    out = arena(*args, cwd=tmp_path)
    assert out.returncode == 2, out
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith("arena: error: ")
    assert "Traceback" not in out.stderr
    for word in words:
        assert word in out.stderr
    check(tmp_path)


# --- 7. broken bots --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("source", "reason", "detail"),
    [
        (CRASHER, "crash", "exited with code 1; last stderr line: cannot find my weights file"),
        (
            GARBLER,
            "garbled",
            "(a pit number or SWAP), logs go to stderr; its answer: 'hello there'",
        ),
    ],
    ids=["crashes-at-start", "answers-garbage"],
)
def test_a_broken_bot_forfeits_its_games_and_the_tournament_goes_on(tmp_path, source, reason, detail):
    bots = write_bots(tmp_path / "bots", greedy=GREEDY, first=first_legal(), broken=source)
    out = tournament(tmp_path, bots, "--rounds", 1, *STEADY)
    assert out.returncode == 0, out.stderr
    recs = records(tmp_path)
    assert len(recs) == 6
    for r in recs:
        players = (r["south"], r["north"])
        if "broken" in players:
            assert (r["faulty"], r["reason"]) == ("broken", reason), r
            assert r["winner"] == next(p for p in players if p != "broken")
            assert detail in told(r["detail"], r["said"])
        else:
            assert (r["faulty"], r["reason"]) == (None, "normal"), r
            assert replay(r) == (r["south_store"], r["north_store"])
    board = leaderboard(tmp_path).set_index("bot")
    assert board.loc["broken", "forfeits"] == 4 and board.loc["broken", "losses"] == 4
    assert board.loc["greedy", "forfeits"] == 0 and board.loc["first", "forfeits"] == 0
    page = (tmp_path / "reports" / NAME / "index.html").read_text(encoding="utf-8")
    assert str(markupsafe.escape(detail)) in page


@pytest.mark.slow
def test_bots_that_cannot_play_are_listed_with_their_fix_and_the_tournament_goes_on(tmp_path: Path) -> None:
    bots = two_bots(tmp_path)
    (bots / "x.py").write_text(first_legal(), encoding="utf-8")
    (bots / "x").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (bots / "x").chmod(0o755)
    (bots / "mybot").mkdir()
    (bots / "mybot" / "bot.toml").write_text('command = "./mybot\n', encoding="utf-8")
    (bots / "notes.c").write_text(
        "int main(void) { return 0; }\n", encoding="utf-8"
    )  # not a bot: passed over
    out = tournament(tmp_path, bots, "--rounds", 1, *QUICK)
    assert out.returncode == 0, out.stderr
    listed = [line for line in out.stderr.splitlines() if line.startswith("arena: not entered: ")]
    assert len(listed) == 3, out.stderr
    assert any("x.py: two bots are named 'x' (x and x.py): rename or remove one" in line for line in listed)
    assert any("mybot: " in line and "not valid TOML" in line for line in listed)
    assert {r["south"] for r in records(tmp_path)} == {"greedy", "first"}
    page = (tmp_path / "reports" / NAME / "index.html").read_text(encoding="utf-8")
    assert "not entered" in page and "rename or remove one" in page and "notes.c" not in page
