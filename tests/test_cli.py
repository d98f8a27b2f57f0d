"""The `arena` command end to end: real processes, and one clear line for every mistake a user can make."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_kit import arena
from conftest import assert_ends_as_recorded, assert_one_line_error, said

from arena.match.record import GameRecord

ROOT = Path(__file__).resolve().parent.parent


def test_play_json_records_replay_and_alternate_sides():
    run = arena("play", "random", "greedy", "--games", "3", "--json", "--rules", "kalah,pits=4,seeds=3,pie")
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(records) == 3
    assert [(r["south"], r["north"]) for r in records] == [
        ("random", "greedy"),
        ("greedy", "random"),
        ("random", "greedy"),
    ]
    for r in records:
        assert r["rules"] == "kalah,pits=4,seeds=3,pie"
        assert r["reason"] == "normal" and r["faulty"] is None
        assert_ends_as_recorded(GameRecord.from_dict(r))
        assert len(r["move_ms"]) == len(r["moves"])
        assert set(r["stderr"]) == {"random", "greedy"}
    assert "after 3 games (kalah,pits=4,seeds=3,pie)" in run.stderr.splitlines()[-1]
    # A series goes through openings, each pair of games playing one from both sides.
    assert records[0]["opening"] and records[0]["opening"] == records[1]["opening"]


@pytest.mark.slow
def test_play_openings_only_for_a_series_unless_asked(tmp_path: Path) -> None:
    """Two deterministic bots: without openings every pair of games is the same pair; with them, a series
    plays different games. A single game starts at the start, and --openings 0 turns them off."""
    spec = ["--rules", "kalah,pits=4,seeds=3", "--json"]
    series = arena("play", "greedy", "alphabeta", "--games", "6", "--move-time", "50", *spec)
    assert series.returncode == 0, series.stderr
    games = [json.loads(line) for line in series.stdout.splitlines()]
    openings = [tuple(g["opening"]) for g in games]
    assert all(openings) and openings[0::2] == openings[1::2] and len(set(openings)) == 3, openings
    assert len({tuple(g["moves"]) for g in games}) > 2  # not one pair of games three times
    lines = arena("play", "greedy", "random", "--games", "2", "--rules", "kalah,pits=4,seeds=3")
    assert "opening " in lines.stdout.splitlines()[0], lines.stdout
    single = arena("play", "greedy", "random", *spec)
    off = arena("play", "greedy", "alphabeta", "--games", "4", "--move-time", "50", "--openings", "0", *spec)
    for run in (single, off):
        assert run.returncode == 0, run.stderr
        assert all(json.loads(line)["opening"] == [] for line in run.stdout.splitlines())
    book = tmp_path / "book.txt"
    book.write_text("1 2\n")
    fixed = arena("play", "greedy", "random", "--games", "2", "--openings", str(book), *spec)
    played = [json.loads(line)["opening"] for line in fixed.stdout.splitlines()]
    assert played == [[1, 2], [1, 2]], fixed.stderr
    bad = arena("play", "greedy", "random", "--openings", str(tmp_path / "none.txt"))
    assert bad.returncode == 2 and len(said(bad.stderr)) == 1 and "none.txt" in bad.stderr


def test_play_text_summary_and_show():
    run = arena("play", "greedy", "greedy", "--rules", "kalah,pits=3,seeds=1", "--show")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1].startswith("greedy ") and "greedy-2" in lines[-1] and "after 1 game " in lines[-1]
    assert "South: greedy  <- to move" in run.stdout and "North: greedy-2" in run.stdout
    assert any(line.startswith("game 1: greedy (south) vs greedy-2 (north)") for line in lines)
    assert "1. south (greedy) plays" in run.stdout


def test_play_a_bot_given_by_path(tmp_path):
    bot = tmp_path / "first.py"
    bot.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    w = line.split()\n"
        "    if w and w[0] == 'MOVE':\n"
        "        n = (len(w) - 4) // 2\n"
        "        print(next(i for i in range(1, n + 1) if w[1 + i] != '0'))\n"
        "    elif w and w[0] == 'QUIT':\n"
        "        break\n"
    )
    run = arena("play", str(bot), "random", "--games", "2", "--json")
    assert run.returncode == 0, run.stderr
    assert [json.loads(x)["reason"] for x in run.stdout.splitlines()] == ["normal", "normal"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["play", "random", "nobody"], ["no bot named 'nobody'", "greedy"]),
        (["play", "random", "greedy", "--rules", "kalah,pits=x"], ["--rules", "pits='x'"]),
        (["play", "random", "greedy", "--rules", "chess"], ["unknown rules 'chess'"]),
        (["play", "random", "greedy", "--games", "0"], ["--games"]),
        (["play", "random", "greedy", "--move-time", "fast"], ["--move-time"]),
        (["play", "random"], ["Missing argument"]),
        (["play", "random", "greedy", "--bots", "/nonexistent"], ["no bot named 'random'"]),
        (["play", "random", "greedy", "--openings", "-3"], ["--openings", "-3: a number of openings"]),
        (
            ["run", "--openings", "-3", "--out", "/tmp/arena-never-made"],
            ["--openings", "-3: a number of openings"],
        ),
        (["fly"], ["No such command 'fly'"]),
    ],
)
def test_bad_input_is_one_clear_line(args, words):
    run = arena(*args)
    assert_one_line_error(run, words)


def test_broken_bot_is_a_forfeit_not_an_error(tmp_path):
    bot = tmp_path / "broken.py"
    bot.write_text("raise SystemExit('cannot find my weights file')\n")
    run = arena("play", str(bot), "random", "--games", "2")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("broken forfeits (crash: exited with code 1") == 2
    assert "cannot find my weights file" in run.stdout
    assert "broken 0 - 2 random" in run.stdout


@pytest.mark.slow
def test_ctrl_c_in_play_prints_the_score_so_far():
    argv = [sys.executable, "-m", "arena", "play", "greedy", "random", "--games", "1000"]
    play = subprocess.Popen([*argv, "--rules", "kalah,pits=4,seeds=3"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert play.stdout is not None
    first = play.stdout.readline()  # a game has been played
    assert first.startswith("game 1: greedy (south) vs random (north)"), first
    play.send_signal(signal.SIGINT)
    # read on through the same buffered file: readline may have read the next lines already, and
    # communicate() would read the pipe under it and miss them
    out = play.stdout.read()
    err = play.stderr.read() if play.stderr else ""
    assert play.wait(timeout=30) == 130
    (line,) = said(err.strip())
    games = 1 + len(out.splitlines())
    found = re.fullmatch(r"arena: interrupted after (\d+) games?: greedy (\S+) - (\S+) random so far", line)
    assert found, line
    assert int(found[1]) in (games, games + 1) and float(found[2]) + float(found[3]) == int(found[1])


@pytest.mark.slow
def test_run_without_a_terminal_says_its_progress_in_plain_lines(tmp_path: Path):
    run = arena(
        "run",
        "--rounds",
        "1",
        "--out",
        str(tmp_path),
        "--rules",
        "kalah,pits=3,seeds=2",
        "--move-time",
        "200",
    )
    assert run.returncode == 0, run.stderr
    lines = said(run.stderr)
    assert lines[0] == "arena: playing 12 games"  # at once, not only when the first lines are due
    last = re.fullmatch(r"arena: 12 of 12 games, [0-9.]+ games/s, about 0 s left; leading: (.*)", lines[-1])
    assert last, lines
    # the three leaders of the four bots with their score so far (6 games each: 12 games, 2 a pair)
    leaders = re.findall(r"(\w+) ([0-9.]+)% \((\d+)\)", last[1])
    assert len(leaders) == 3 and {g for _, _, g in leaders} == {"6"} and last[1].endswith(", ...")
    assert [float(p) for _, p, _ in leaders] == sorted((float(p) for _, p, _ in leaders), reverse=True)


def _drain(leader: int) -> bytes:
    """All a process wrote to a pty, read until it closes (arena exited)."""
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty closed: arena exited
            break
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.slow
def test_run_on_a_terminal_shows_the_scores_so_far_as_a_table(tmp_path: Path):
    import pty

    argv = [sys.executable, "-m", "arena", "run", "--out", str(tmp_path), "--rules", "kalah,pits=3,seeds=2",
            "--move-time", "200", "--rounds", "2"]  # fmt: skip
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = _drain(leader)
    out = proc.communicate(timeout=120)[0]
    os.close(leader)
    assert proc.returncode == 0, seen
    text = seen.decode()
    tables = text.count("bot  ")
    assert tables >= 1 and re.search(r"bot\s+score\s+W-D-L\s+games\s+forfeits", text), text
    assert "24 of 24 games" in text
    for name in ("alphabeta", "greedy", "random", "solver"):
        assert re.search(rf"{name}\s+[0-9.]+%\s+\d+-\d+-\d+\s+12\b", text), text  # its final row
    if tables > 1:
        assert "\x1b[" in text and "F\x1b[J" in text  # redrawn in place, not scrolled
    assert b"report: " in out


@pytest.mark.slow
@pytest.mark.parametrize("terminal", [False, True])
def test_run_quiet_prints_only_the_reports_path(tmp_path: Path, terminal: bool):
    import pty

    bots = tmp_path / "bots"  # two quick bots: the test is about what --quiet prints, not the bundled field
    bots.mkdir()
    for name in ("greedy.py", "random.py"):
        shutil.copy(ROOT / "bots" / name, bots / name)
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(tmp_path),
            "--rules", "kalah,pits=3,seeds=2", "--rounds", "2", "--move-time", "200", "--quiet"]  # fmt: skip
    if terminal:  # where the live standings would be drawn: stdout and stderr both on one
        leader, follower = pty.openpty()
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
        os.close(follower)
        seen = _drain(leader)
        proc.wait(timeout=120)
        os.close(leader)
        out, err = seen.decode().replace("\r\n", "\n"), ""
    else:
        run = arena(*argv[3:])
        proc, out, err = run, run.stdout, run.stderr
    assert proc.returncode == 0, out + err
    lines = [line for line in (out + err).splitlines() if not line.startswith("arena: warning: ")]
    assert lines == [f"report: {tmp_path / 'default' / 'index.html'}"], out + err
    assert "\x1b" not in out + err
    if not terminal:
        assert run.stdout == lines[0] + "\n"  # stdout is the one line: a script reads the path from it


def test_solve_has_a_time_limit_by_default_and_says_what_it_can_solve():
    done = arena("solve", "--rules", "kalah,pits=3,seeds=2")
    assert done.returncode == 0, done.stderr
    assert "for up to 60 s" in done.stderr and "Kalah(4,5)" in done.stderr
    assert "a win by 4 for the first player" in done.stdout
    slow = arena("solve", "--rules", "kalah", "--time-limit", "1")
    assert slow.returncode == 1 and "not solved within 1 s" in slow.stderr


def test_bare_arena_prints_its_help_with_where_to_start_and_no_error():
    bare = arena()
    assert bare.returncode == 0 and bare.stderr == ""
    assert "Start here:" in bare.stdout and "arena new mybot" in bare.stdout and "arena run" in bare.stdout
    assert bare.stdout == arena("--help").stdout


def test_the_rules_option_lists_the_rule_sets():
    for command in ("run", "play", "check", "solve"):
        # The help is wrapped to the terminal, at spaces and after hyphens: read it as one line.
        text = re.sub(r"-\s+", "-", " ".join(arena(command, "--help").stdout.split()))
        assert "kalah [pie, empty-capture" in text and "relay [pie, chain" in text, command
        assert "mankalah (= kalah,pits=7,seeds=7,pie,no-first-extra)" in text, command


@pytest.mark.parametrize(
    "command", [["run", "--rounds", "1"], ["sprt", "random", "greedy", "--max-games", "2"]]
)
def test_a_command_surveys_and_hashes_the_bots_folder_once(tmp_path, monkeypatch, command):
    """A file saved while a command runs cannot make its plan and its run play different versions: the
    folder is read once (it was read three times: a check, the plan, the run)."""
    import shutil

    from click.testing import CliRunner

    from arena import api
    from arena.cli import cli

    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("random", "greedy"):
        shutil.copy(ROOT / "bots" / f"{name}.py", bots / f"{name}.py")
    surveys = []
    real = api.survey
    monkeypatch.setattr(api, "survey", lambda folder: surveys.append(folder) or real(folder))
    args = [
        *command,
        "--bots",
        str(bots),
        "--out",
        str(tmp_path / "reports"),
        "--rules",
        "kalah,pits=3,seeds=2",
    ]
    done = CliRunner().invoke(cli, [*args, "--move-time", "500", "--quiet"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert surveys == [bots]
