"""The library API under the CLI: docs/cli.md's script (From Python), Tournament and Match, the record's one
definition, the schema-1 migration, and the CLI's lean start-up.

Real bots, real processes, real SQLite files in tmp_path; small boards keep it to seconds.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL
from conftest import said
from procs import processes_mentioning

from arena.api import Match, Tournament
from arena.game.rules import SWAP
from arena.match.bots import BotError, load_bot
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.sandbox import sandbox_problem
from arena.store import queries
from arena.store.writer import EXPORT_FIELDS, SCHEMA_VERSION, STORE_FILE, Store, StoreError
from arena.tournament.schedule import Slot
from arena.tournament.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SMALL = "kalah,pits=4,seeds=3"


def bots_folder(base: Path, *names: str) -> Path:
    folder = base / "bots"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(ROOT / "bots" / f"{name}.py", folder / f"{name}.py")
    return folder


# --- docs/cli.md's script ------------------------------------------------------------------------------


def readme_script() -> str:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text[text.index("## From Python") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/cli.md's 'From Python' section has no python block"
    return found.group(1)


@pytest.mark.slow
def test_the_readmes_five_line_script_runs_a_confined_tournament_and_writes_its_page(tmp_path: Path) -> None:
    script = readme_script()
    assert len([line for line in script.splitlines() if line.strip()]) <= 6
    bots_folder(tmp_path, "random", "greedy")
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    page = tmp_path / "reports" / "demo" / "index.html"
    assert f"page: {page}" in out.stdout
    assert "greedy" in page.read_text(encoding="utf-8")
    with Store(page.parent / STORE_FILE, create=False) as store:
        assert store.count_games() == 4  # two bots, two rounds, both sides
        assert store.settings() == Settings(clock=TimeControl(move_ms=200))
        confinement = json.loads(store.meta()["confinement"])
    assert confinement["sandbox"] == (sandbox_problem() is None)
    for line in out.stdout.splitlines()[1:3]:
        assert re.match(r"\s*\d+\s+\d\s+(greedy|random)\s", line), out.stdout


# --- Tournament ----------------------------------------------------------------------------------------

PEEK = """import os, sys
store = {store!r}
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        print("sees the store:", os.path.exists(store), file=sys.stderr, flush=True)
        pits = (len(words) - 2) // 2 - 1
        print(next(p for p in range(1, pits + 1) if int(words[1 + p])), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


@pytest.mark.skipif(sandbox_problem() is not None, reason="bubblewrap does not work on this machine")
def test_a_library_tournament_confines_its_bots_by_default(tmp_path: Path) -> None:
    folder = tmp_path / "cup"
    bots = bots_folder(tmp_path, "greedy")
    (bots / "peek.py").write_text(PEEK.format(store=str(folder / STORE_FILE)), encoding="utf-8")
    with Tournament(folder, Settings(rules=SMALL, clock=TimeControl(move_ms=500))) as cup:
        result = cup.run(bots, rounds=1, jobs=1)
        records = list(cup.records())
    assert result.played == 2 and not result.interrupted
    logs = [r["stderr"]["peek"] for r in records]
    assert all("sees the store: False" in log for log in logs), logs
    assert (folder / STORE_FILE).exists()


def test_a_tournament_keeps_its_settings_and_names_what_differs(tmp_path: Path) -> None:
    bots = bots_folder(tmp_path, "greedy", "random")
    with Tournament(tmp_path / "cup", rules=SMALL, move_ms=300, seed=7) as cup:
        cup.run(bots, rounds=1)
        assert cup.stored is None
    with Tournament(tmp_path / "cup") as again:  # nothing asked: the stored settings
        assert again.settings == Settings(rules=SMALL, clock=TimeControl(move_ms=300), seed=7)
        assert again.stored == again.settings
        result = again.run(bots, rounds=2)
        assert (result.before, result.played) == (2, 2)
    with pytest.raises(StoreError, match=r"move_ms 300 \(asked: 400\)"):
        Tournament(tmp_path / "cup", move_ms=400)
    with Tournament.open(tmp_path / "cup") as opened:
        assert opened.store.count_games() == 4


def test_a_time_bank_alone_means_no_limit_per_move_but_the_bank(tmp_path: Path) -> None:
    with Tournament(tmp_path / "bank", bank_ms=5000) as cup:
        assert (cup.settings.clock.move_ms, cup.settings.clock.bank_ms) == (5000, 5000)
        assert cup.settings.limits().clock.bank_ms == 5000


def test_bad_requests_are_one_clear_error_and_leave_no_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no tournament store"):
        Tournament.open(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(TypeError, match="unknown setting 'move_time'"):
        Tournament(tmp_path / "typo", move_time=100)
    bots = bots_folder(tmp_path, "greedy")
    with Tournament(tmp_path / "cup", rules=SMALL) as cup:
        with pytest.raises(BotError, match="at least two bots; .* has 1"):
            cup.run(bots)
        shutil.copy(ROOT / "bots" / "random.py", bots / "random.py")
        with pytest.raises(BotError, match="gauntlet nobody: no such bot"):
            cup.run(bots, gauntlet="nobody")
        assert cup.store.count_games() == 0


def test_export_writes_every_field_of_every_record(tmp_path: Path) -> None:
    bots = bots_folder(tmp_path, "greedy", "random")
    with Tournament(tmp_path / "cup", rules=SMALL, move_ms=300) as cup:
        cup.run(bots, rounds=1)
        lines, table = io.StringIO(), io.StringIO()
        assert cup.export(lines, "jsonl") == 2
        assert cup.export(table, "csv") == 2
        stored = list(cup.records())
    assert [json.loads(line) for line in lines.getvalue().splitlines()] == stored
    header = table.getvalue().splitlines()[0].split(",")
    assert tuple(header) == EXPORT_FIELDS


# --- Match ---------------------------------------------------------------------------------------------


def test_a_match_alternates_sides_keeps_score_and_ends_its_bots(tmp_path: Path) -> None:
    greedy, rand = load_bot(ROOT / "bots" / "greedy.py"), load_bot(ROOT / "bots" / "random.py")
    with Match(greedy, rand, Settings(rules=SMALL, clock=TimeControl(move_ms=300))) as match:
        records = [match.play() for _ in range(4)]
        pids = [p.wire().proc.pid for p in match.players]
    assert [(r.south, r.north) for r in records] == [("greedy", "random"), ("random", "greedy")] * 2
    assert all(r.faulty is None for r in records)
    wins = sum(r.winner == "greedy" for r in records) + 0.5 * sum(r.winner is None for r in records)
    assert match.score["greedy"] == wins and match.score["random"] == 4 - wins
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_a_match_of_a_bot_with_itself_names_the_second_one_apart(tmp_path: Path) -> None:
    # a copy of its own: without the sandbox another test's greedy names the bundled path too
    greedy = load_bot(Path(shutil.copy(ROOT / "bots" / "greedy.py", tmp_path / "greedy.py")))
    with Match(greedy, greedy, Settings(rules=SMALL, clock=TimeControl(move_ms=300))) as match:
        record = match.play()
    assert (record.south, record.north) == ("greedy", "greedy-2")
    assert not processes_mentioning(str(greedy.path))


# --- the record, defined once -----------------------------------------------------------------------


def swapped_record() -> GameRecord:
    return GameRecord(
        rules="kalah,pits=4,seeds=3,pie",
        south="ann",
        north="bob",
        moves=(1, SWAP, 2),
        south_store=20,
        north_store=4,
        winner="bob",
        reason="early",
        faulty=None,
        detail="",
        move_ms=(1.5, 2.0, 3.25),
        think_ms={"ann": 1.5, "bob": 5.25},
        moves_made={"ann": 1, "bob": 2},
        stderr={"ann": "", "bob": "log\n"},
    )


def test_every_record_field_is_a_column_and_comes_back_unchanged(tmp_path: Path) -> None:
    from arena.match.bots import Bot

    ann = Bot("ann", ("true",), tmp_path, tmp_path / "ann", "a1")
    bob = Bot("bob", ("true",), tmp_path, tmp_path / "bob", "b1")
    record = swapped_record()
    with Store(tmp_path / "s.sqlite") as store:
        columns = {row[1] for row in store.db.execute("PRAGMA table_info(games)")}
        store.set_current([ann, bob])
        store.add_game(Slot(1, "00", ann, bob), record)
        (back,) = store.records()
        pairs = queries.pair_totals(store, queries.field_ids(store)).set_index("bot")
    fields = [name for name in record.to_dict()]
    assert set(fields) <= columns
    assert [f for f in EXPORT_FIELDS if f in fields] == fields
    assert GameRecord.from_dict(back) == record
    # after the SWAP, ann (who began south) owns north's store: the record's swap rule, read by SQL too
    ann_id, bob_id = sorted(pairs.index)
    assert pairs.loc[ann_id, "margin_sum"] == record.store_of("ann") - record.store_of("bob") == 4 - 20
    assert pairs.loc[bob_id, "wins"] == 1


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bots (id INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL, path TEXT NOT NULL,
    author TEXT, first_seen TEXT NOT NULL, UNIQUE (name, digest));
CREATE TABLE games (id INTEGER PRIMARY KEY, round INTEGER NOT NULL, ordinal TEXT NOT NULL,
    south_id INTEGER NOT NULL REFERENCES bots (id), north_id INTEGER NOT NULL REFERENCES bots (id),
    rules TEXT NOT NULL, moves TEXT NOT NULL, south_store INTEGER NOT NULL, north_store INTEGER NOT NULL,
    winner_id INTEGER REFERENCES bots (id), reason TEXT NOT NULL, faulty_id INTEGER REFERENCES bots (id),
    detail TEXT NOT NULL, move_ms TEXT NOT NULL, stderr TEXT NOT NULL, swapped INTEGER NOT NULL,
    south_think_ms REAL NOT NULL, south_moves INTEGER NOT NULL, north_think_ms REAL NOT NULL,
    north_moves INTEGER NOT NULL, finished_at TEXT NOT NULL, UNIQUE (round, south_id, north_id));
CREATE INDEX games_order ON games (round, ordinal);
INSERT INTO meta VALUES ('schema', '1'), ('created', '2026-01-01T00:00:00+00:00'),
    ('settings', '{"rules": "kalah,pits=4,seeds=3,pie", "move_ms": 100, "startup_ms": 10000, "seed": 3}'),
    ('current', '[1, 2]');
INSERT INTO bots VALUES (1, 'ann', 'a1', '/b/ann.py', NULL, '2026-01-01'),
    (2, 'bob', 'b1', '/b/bob', 'B', '2026-01-01');
INSERT INTO games VALUES
    (7, 1, '0a', 1, 2, 'kalah,pits=4,seeds=3,pie', '[1, "SWAP", 2]', 20, 4, 2, 'early', NULL, '',
     '[1.5, 2.0, 3.25]', '{"ann": "", "bob": "log\\n"}', 1, 1.5, 1, 5.25, 2, '2026-01-01T00:01:00+00:00'),
    (9, 1, '0b', 2, 1, 'kalah,pits=4,seeds=3,pie', '[3]', 0, 0, 1, 'timeout', 2, 'no reply within 100 ms',
     '[]', '{"bob": "", "ann": ""}', 0, 0.0, 0, 2.0, 1, '2026-01-01T00:02:00+00:00');
"""


def test_a_schema_1_store_is_migrated_with_every_game_kept(tmp_path: Path) -> None:
    path = tmp_path / "old" / STORE_FILE
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
    with Store(path, create=False) as store:
        assert store.meta()["schema"] == str(SCHEMA_VERSION)
        records = list(store.records())
        assert store.settings() == Settings(
            rules="kalah,pits=4,seeds=3,pie", clock=TimeControl(move_ms=100), seed=3, openings=0
        )
    assert [r["id"] for r in records] == [7, 9]
    assert GameRecord.from_dict(records[0]) == swapped_record()
    assert records[0]["finished_at"] == "2026-01-01T00:01:00+00:00"
    assert (records[1]["winner"], records[1]["faulty"], records[1]["reason"]) == ("ann", "bob", "timeout")
    with Tournament.open(path.parent) as cup:  # and the page is written from it
        board = cup.leaderboard().set_index("bot")
        assert cup.report().exists()
    assert (board.loc["bob", "wins"], board.loc["ann", "wins"], board.loc["bob", "forfeits"]) == (1, 1, 1)


# --- start-up ------------------------------------------------------------------------------------------


def test_the_cli_imports_no_heavy_module_for_help_play_or_solve() -> None:
    heavy = ("pandas", "numpy", "multiprocess", "jinja2", "trueskill")
    code = (
        "import sys, arena.cli, arena.api, arena.game.solver\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- a tournament that knows its field -------------------------------------------------------------------


@pytest.mark.slow
def test_a_continued_tournament_says_what_changed_and_keeps_withdrawn_bots_on_the_page(
    tmp_path: Path,
) -> None:
    bots = bots_folder(tmp_path, "greedy", "random", "alphabeta", "solver")
    run = [
        sys.executable,
        "-m",
        "arena",
        "run",
        "--bots",
        bots,
        "--out",
        tmp_path / "reports",
        "--openings",
        2,
    ]
    first = subprocess.run(
        [*map(str, run), "--rounds", "1", "--rules", SMALL, "--move-time", "300"],
        capture_output=True,
        text=True,
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == "new tournament 'default': 4 bots; 12 of 12 games to play"
    (bots / "solver.py").unlink()
    with (bots / "greedy.py").open("a") as f:
        f.write("# a changed version\n")
    (bots / "first.py").write_text(FIRST_LEGAL, encoding="utf-8")
    with Tournament(tmp_path / "reports" / "default") as cup:
        plan = cup.plan(bots, rounds=2)
    assert (plan.new, plan.changed, plan.left) == (("first",), ("greedy",), ("solver",))
    assert (plan.scheduled, plan.to_play) == (24, 22)  # random and alphabeta's two games of round 1 stand
    again = subprocess.run([*map(str, run), "--rounds", "2"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    head = again.stdout.splitlines()[:2]
    assert head == [
        "continuing 'default': 1 new bot (first), 1 changed version (greedy), 1 left the field (solver); "
        "22 of 24 games to play",
        "from the stored tournament: rules kalah,pits=4,seeds=3, move time 300 ms",  # --openings was asked
    ]
    page = (tmp_path / "reports" / "default" / "index.html").read_text(encoding="utf-8")
    status = dict(
        re.findall(
            r'<td class="name">(\w+)</td><td class="name"><code>\w+</code></td><td class="name">(\w+)', page
        )
    )
    assert status == {"solver": "withdrawn", "greedy": "replaced"}
    assert "rounds played</th><td>2 (up to round 2)" in page


# --- one writer, and folders it cannot use ---------------------------------------------------------------


@pytest.mark.slow
def test_a_second_run_of_a_tournament_stops_at_once_naming_the_first(tmp_path: Path) -> None:
    folder = tmp_path / "reports" / "cup"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from arena import Tournament; import time; t = Tournament({str(folder)!r}); "
         "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(
            StoreError, match=rf"'cup' is being played right now by arena \(pid {holder.pid}, since"
        ):
            Tournament(folder)
        bots = bots_folder(tmp_path, "greedy", "random")
        argv = [
            sys.executable,
            "-m",
            "arena",
            "run",
            "--bots",
            bots,
            "--out",
            tmp_path / "reports",
            "--name",
            "cup",
        ]
        out = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2
        (line,) = said(out.stderr)
        assert line.startswith(
            f"arena: error: tournament 'cup' is being played right now by arena (pid {holder.pid}"
        )
        with Tournament.open(folder) as reader:  # reading while it runs is fine
            assert reader.store.count_games() == 0
    finally:
        holder.kill()
        holder.wait()
    with Tournament(folder) as cup:  # its lock went with it
        assert cup.settings == Settings()


def run_into(bots: Path, out: Path) -> str:
    """The one line `arena run` says for an output folder it cannot use."""
    argv = [sys.executable, "-m", "arena", "run", "--bots", bots, "--out", out]
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = said(done.stderr)
    assert line.startswith("arena: error: "), line
    return line


@pytest.mark.slow
def test_an_output_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    bots = bots_folder(tmp_path, "greedy", "random")
    (tmp_path / "afile").write_text("not a folder", encoding="utf-8")
    assert "cannot make the tournament folder" in run_into(bots, tmp_path / "afile")
    assert (tmp_path / "afile").read_text(encoding="utf-8") == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder all the same")
def test_a_read_only_output_folder_is_one_line(tmp_path: Path) -> None:
    bots = bots_folder(tmp_path, "greedy", "random")
    locked = tmp_path / "locked"
    (locked / "default").mkdir(parents=True)
    (locked / "default").chmod(0o555)
    try:
        assert "is read-only" in run_into(bots, locked)
    finally:
        (locked / "default").chmod(0o755)


def test_a_record_field_added_later_gets_its_column_with_the_default(tmp_path: Path) -> None:
    from arena.match.bots import Bot

    path = tmp_path / "s.sqlite"
    ann = Bot("ann", ("true",), tmp_path, tmp_path / "ann", "a1")
    bob = Bot("bob", ("true",), tmp_path, tmp_path / "bob", "b1")
    with Store(path) as store:
        store.add_game(Slot(1, "00", ann, bob), swapped_record())
        store.db.execute("DROP INDEX IF EXISTS games_order")
        store.db.execute("ALTER TABLE games DROP COLUMN opening")  # as a store from before the field
    with Store(path, create=False) as store:
        (back,) = store.records()
        store.add_game(Slot(2, "00", ann, bob), dataclasses.replace(swapped_record(), opening=(3, 1)))
        openings = [r["opening"] for r in store.records()]
    assert back["opening"] == [] and openings == [[], [3, 1]]


READS = (
    """import sys
print("data:", open({data!r}).read().strip(), file=sys.stderr, flush=True)
"""
    + FIRST_LEGAL
)


@pytest.mark.skipif(sandbox_problem() is not None, reason="bubblewrap does not work on this machine")
def test_a_bot_reads_the_paths_the_teacher_grants_and_the_page_lists_them(tmp_path: Path) -> None:
    """The teacher's read-only paths (Settings.read_only, --read-only) are seen by the bots; a bot whose
    bot.toml asks for a path not granted is not entered, with why."""
    data = Path(tempfile.mkdtemp(prefix="course-data-", dir="/var/tmp"))  # not /tmp: bots have their own
    try:
        data.chmod(0o755)
        (data / "weights.txt").write_text("the weights\n", encoding="utf-8")
        (data / "weights.txt").chmod(0o644)
        bots = bots_folder(tmp_path, "greedy")
        for name, paths in (("reader", f"paths = [{str(data)!r}]\n"), ("asker", 'paths = ["/usr/share"]\n')):
            folder = bots / name
            folder.mkdir()
            (folder / "bot.py").write_text(READS.format(data=str(data / "weights.txt")), encoding="utf-8")
            (folder / "bot.toml").write_text(f'command = "python bot.py"\n{paths}'.replace("'", '"'))
        settings = Settings(rules=SMALL, clock=TimeControl(move_ms=500), openings=0, read_only=(str(data),))
        with Tournament(tmp_path / "cup", settings) as cup:
            cup.run(bots, rounds=1)
            records = list(cup.records())
            page = cup.report().read_text(encoding="utf-8")
    finally:
        shutil.rmtree(data)
    reader = [r for r in records if "reader" in (r["south"], r["north"])]
    assert reader and all(r["faulty"] != "reader" for r in reader)
    assert any("data: the weights" in r["stderr"]["reader"] for r in reader)  # said once a process
    assert not any("asker" in (r["south"], r["north"]) for r in records)
    assert "asker: its bot.toml asks to read /usr/share, which the teacher has not granted" in page
    assert f"{data} (--read-only: every bot may read them)" in page
