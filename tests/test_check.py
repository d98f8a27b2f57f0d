"""`arena check BOT` end to end: the real CLI, real bot processes confined as `arena run` confines them, and
bad bots that each break one thing: the check must fail the right item, and its reproduce lines, fed to the
bot by hand (a shell, as a student would), must bring the same bad answer back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botsrc import FIRST_LEGAL

from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.report.replay import marks
from arena.student.check import opening_offering, trials, with_pie

ROOT = Path(__file__).resolve().parent.parent


def arena_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena", "check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def checked(bot: Path, *args: str, status: int) -> dict[str, Any]:
    """`arena check BOT --json` on a bot file, at 100 ms a move unless told; the report, its exit status
    asserted."""
    flags = ("--move-time", "100") if "--move-time" not in args else ()
    run = arena_check(str(bot), "--json", *flags, *args)
    assert run.returncode == status, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["fails"] == (status == 1)
    return report


def item(report: dict[str, Any], prefix: str) -> dict[str, Any]:
    return next(i for i in report["items"] if i["name"].startswith(prefix))


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {i["name"].split(":")[0]: i["status"] for i in report["items"]}


def feed(command: str, wait: float = 3.0) -> tuple[str, str, int | None]:
    """Run a reproduce command in a shell as a student would: (stdout, stderr, exit status or None if it
    was still running after `wait` s; then its whole process group is ended)."""
    shell = subprocess.Popen(
        ["bash", "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = shell.communicate(timeout=wait)
        return out, err, shell.returncode
    except subprocess.TimeoutExpired:
        os.killpg(shell.pid, signal.SIGKILL)
        out, err = shell.communicate()
        return out, err, None


def bot(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return path


# A bot that knows its side and counts its games and moves; each bad bot changes one line of it.
TEMPLATE = """import sys, time
side, games, moves = "south", 0, 0
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "NEWGAME":
        side, games, moves, spec = words[3], games + 1, 0, words[4]
        {on_newgame}
    elif words[0] == "MOVE":
        moves += 1
        board = [int(w) for w in words[2:]]
        pits = len(board) // 2 - 1
        move = next(p for p in range(1, pits + 1) if board[p - 1])
        {on_move}
        print(move, flush=True)
    elif words[0] == "QUIT":
        {on_quit}
"""


def variant(on_newgame: str = "pass", on_move: str = "pass", on_quit: str = "break") -> str:
    return TEMPLATE.format(on_newgame=on_newgame, on_move=on_move, on_quit=on_quit)


# --- the games it picks -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["kalah", "kalah,pits=4,seeds=3", "kalah,pie", "relay", "mankalah"])
def test_the_openings_offer_what_their_games_exercise(spec):
    rules = parse_rules(spec)
    for side, what in ((SOUTH, "extra"), (NORTH, "capture")):
        opening = opening_offering(rules, side, what)
        if opening is None:
            continue
        pos = rules.initial()
        for ply in opening:
            assert ply != SWAP
            if rules.pie:  # a tournament's openings under the pie rule: South's first turn only
                assert pos.to_move == SOUTH and pos.turn == 0
            pos = rules.play(pos, ply)
        assert pos.to_move == side and not rules.is_over(pos)
        offered = [marks(rules, pos, m, rules.play(pos, m)) for m in rules.legal_moves(pos) if m != SWAP]
        assert any(p.extra if what == "extra" else p.captured for p in offered)
    assert opening_offering(parse_rules("kalah"), SOUTH, "extra") is not None
    assert opening_offering(parse_rules("kalah"), NORTH, "capture") is not None


def test_the_pie_game_is_played_under_the_pie_rule(tmp_path):
    from arena.match.bots import load_bot

    games = trials(load_bot(bot(tmp_path, "plain", FIRST_LEGAL)), parse_rules("kalah,pits=4,seeds=3"))
    assert [g.side for g in games] == [SOUTH, NORTH, NORTH]
    assert games[2].rules == with_pie(parse_rules("kalah,pits=4,seeds=3")) and games[2].rules.pie
    assert not games[2].binding  # a forfeit there is no forfeit in a tournament without the pie rule


# --- good bots ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_bundled_bots_pass_and_the_checklist_reads_without_colour():
    # 1000 ms a move: at 100 ms a loaded machine (load 25 on two cores) kept greedy's quick moves waiting for
    # a CPU past the warning's 80%, and this test is about the checklist, not the warning
    run = arena_check("greedy", "--move-time", "1000")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("arena check greedy: rules kalah, 1000 ms a move")
    for name in ("game 1", "game 2", "game 3", "QUIT", "startup", "think time", "memory", "processes"):
        assert any(line.split(":")[0].split(None, 1)[-1] == name for line in lines), name
    assert all(line.startswith(("  ok ", "  skip ", "  note:")) for line in lines[1:-1])
    assert lines[-1] == "greedy: ready to play: nothing the referee would hold against it"
    report = checked(ROOT / "bots" / "random.py", "--move-time", "1000", status=0)
    assert statuses(report)["game 2"] == "ok" and not report["fails"]
    think = item(report, "think time")["summary"]
    assert "of 1000 ms" in think and "median" in think and "worst" in think
    banked = checked(ROOT / "bots" / "random.py", "--time-bank", "5", status=0)
    assert "s of its 5 s time bank in a game" in item(banked, "think time")["summary"]


def test_slow_but_in_time_is_a_warning_and_passes(tmp_path):
    # 84% of a 500 ms move on two moves after its first: in time, too close for a busier machine
    slow = bot(tmp_path, "slow", variant(on_move="if moves in (2, 3): time.sleep(0.42)"))
    report = checked(slow, "--move-time", "500", status=0)
    think = item(report, "think time")
    assert think["status"] == "warn", think
    assert "of 500 ms" in think["summary"] and "on a busier machine" in think["problem"]
    assert all(s == "ok" for name, s in statuses(report).items() if name.startswith("game"))
    assert report["verdict"] == "slow: ready to play, with 1 warning above"


def test_the_figures_see_the_bots_memory_and_processes(tmp_path):
    heavy = TEMPLATE.replace(
        "import sys, time\n",
        'import subprocess, sys, time\nblob = b"x" * (200 << 20)\n'
        'kids = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]\n',
    ).format(on_newgame="pass", on_move="pass", on_quit="break")
    report = checked(bot(tmp_path, "heavy", heavy), status=0)
    memory, processes = item(report, "memory"), item(report, "processes")
    if memory["status"] == "skip":
        assert "not measured here (no cgroups)" in memory["summary"]
        return
    peak = int(memory["summary"].split()[1])
    assert 200 <= peak < 400 and memory["summary"].endswith("of 4096 MiB")
    assert processes["summary"].startswith("peak 4 processes")


# --- bad bots: the right item fails, and its reproduce lines bring the fault back ---------------------------


@pytest.mark.slow
def test_a_bot_that_times_out_only_as_north(tmp_path):
    late = bot(tmp_path, "late", variant(on_move='if side == "north": time.sleep(3)'))
    report = checked(late, status=1)
    assert statuses(report)["game 1"] == "ok"
    failed = item(report, "game 2")
    assert failed["status"] == "FAIL" and failed["problem"].startswith(
        "forfeit (timeout): no reply within 100 ms"
    )
    # a Python bot's lines reach arena at each end of line: no word of C's buffers to it
    assert "printed no answer line" in failed["problem"] and "C++" not in failed["problem"]
    # the second game of its process: the lines start with the whole first game and its END
    lines = failed["reproduce"]
    assert lines[0].startswith("NEWGAME 6 6 south kalah") and any(line.startswith("END ") for line in lines)
    assert lines[-2].startswith("NEWGAME 6 6 north") and lines[-1].startswith("MOVE 100 ")
    out, _, status = feed(failed["command"], wait=1.5)
    moves = sum(line.startswith("MOVE") for line in lines)
    assert status is None and len(out.split()) == moves - 1  # every MOVE answered but the last one


def test_a_bot_that_answers_swap_when_it_is_not_allowed(tmp_path):
    swapper = bot(tmp_path, "swapper", variant(on_move='if side == "north" and moves == 1: move = "SWAP"'))
    report = checked(swapper, status=1)
    failed = item(report, "game 2")
    assert failed["status"] == "FAIL" and "SWAP is not allowed" in failed["problem"]
    assert statuses(report)["game 3"] == "ok"  # under the pie rule the same answer is a move
    out, _, _ = feed(failed["command"])
    assert out.split()[-1] == "SWAP"


@pytest.mark.slow
def test_a_bot_that_crashes_on_the_pie_rule_warns_under_kalah_and_fails_under_pie(tmp_path):
    pie = variant(on_move='if side == "north" and "pie" in spec: raise SystemExit("what is SWAP? " + spec)')
    crasher = bot(tmp_path, "nopie", pie)
    report = checked(crasher, status=0)
    game = item(report, "game 3")
    assert game["status"] == "warn" and game["problem"].startswith("forfeit (crash)")
    assert "only under the pie rule" in game["problem"] and "what is SWAP?" in game["stderr"]
    report = checked(crasher, "--rules", "kalah,pie", status=1)
    failed = item(report, "game 2")
    assert failed["status"] == "FAIL" and "what is SWAP? kalah,pie" in failed["stderr"]
    _, err, status = feed(failed["command"])
    assert status == 1 and "what is SWAP? kalah,pie" in err


def test_a_bot_that_crashes_in_its_second_game(tmp_path):
    once = bot(tmp_path, "once", variant(on_newgame='if games == 2: raise SystemExit("one game is enough")'))
    report = checked(once, status=1)
    assert statuses(report)["game 1"] == "ok"
    failed = item(report, "game 2")
    assert failed["status"] == "FAIL" and failed["problem"].startswith("forfeit (crash)")
    assert "one game is enough" in failed["problem"] + failed["stderr"]
    assert sum(line.startswith("NEWGAME") for line in failed["reproduce"]) == 2
    _, err, status = feed(failed["command"])
    assert status == 1 and "one game is enough" in err


def test_a_bot_that_dies_at_start_fails_every_game_and_says_what_went_untested(tmp_path):
    dies = bot(tmp_path, "dies", 'import sys\nsys.exit("no board for me")\n')
    report = checked(dies, status=1)
    assert [i["status"] for i in report["items"][:3]] == ["FAIL", "FAIL", "warn"]
    assert "no board for me" in item(report, "game 1")["problem"]
    # game 3 fails as games 1 and 2 did: not a fault of the pie rule's
    third = report["items"][2]["problem"]
    assert "only under the pie rule" not in third and "the same fault as above" in third
    assert (
        "in a new process (game 1's forfeit ended the last: NEWGAME after END untested)"
        in (report["items"][1]["name"])
    )
    assert item(report, "startup")["status"] == item(report, "think time")["status"] == "skip"


@pytest.mark.slow
def test_a_bot_that_ignores_quit(tmp_path):
    stays = bot(tmp_path, "stays", variant(on_quit="continue"))
    report = checked(stays, status=1)
    failed = item(report, "QUIT")
    assert failed["status"] == "FAIL" and "killed" in failed["summary"]
    assert all(s == "ok" for name, s in statuses(report).items() if name.startswith("game"))
    assert failed["reproduce"][-1] == "QUIT"
    out, _, _ = feed(failed["command"], wait=5)
    assert "exit status 124" in out
    fine, _, _ = feed(failed["command"].replace(str(stays), str(ROOT / "bots" / "greedy.py")), wait=5)
    assert "exit status 0" in fine


@pytest.mark.slow
def test_a_bot_that_logs_on_stdout(tmp_path):
    chatty = bot(tmp_path, "chatty", variant(on_move='print("thinking about", move)'))
    run = arena_check(str(chatty), "--move-time", "100")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL  game 1:" in run.stdout and "forfeit (garbled)" in run.stdout
    assert "reproduce it: feed the bot the referee's lines" in run.stdout
    assert run.stdout.splitlines()[-1].startswith("chatty: FAIL: ")
    failed = item(checked(chatty, status=1), "game 1")
    out, _, _ = feed(failed["command"])
    assert out.splitlines()[0].startswith("thinking about")


def test_a_bot_that_plays_an_empty_pit_after_its_extra_turn(tmp_path):
    # it takes an extra turn when it can, then plays that pit again as if the turn had passed
    again = variant(
        on_newgame="last = None",
        on_move="move = last or next((p for p in range(1, pits + 1) if board[p - 1] == pits + 1 - p), move)\n"
        "        last = move if board[move - 1] == pits + 1 - move and last is None else None",
    )
    report = checked(bot(tmp_path, "again", again), status=1)
    failed = item(report, "game 1")
    assert failed["status"] == "FAIL" and failed["problem"].startswith("forfeit (illegal)")
    assert "is empty" in failed["problem"] and "numbered 1..n from the bot's own left" in failed["problem"]
    out, _, _ = feed(failed["command"])
    answers = out.split()
    assert len(answers) >= 2 and answers[-1] == answers[-2]
    assert f"played {answers[-1]}" in failed["problem"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_arena_new_then_check_builds_the_bot_and_a_broken_build_is_the_failed_item(tmp_path):
    made = subprocess.run(
        [sys.executable, "-m", "arena", "new", "cbot", "--lang", "c", "--bots", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    report = checked(tmp_path / "cbot", status=0)
    assert item(report, "build")["status"] == "ok" and item(report, "game 2")["status"] == "ok"
    source = tmp_path / "cbot" / "bot.c"
    source.write_text(source.read_text() + "\nint broken = ;\n")
    report = checked(tmp_path / "cbot", status=1)
    assert [i["name"] for i in report["items"]] == ["build"]  # nothing plays what did not build
    failed = report["items"][0]
    assert failed["status"] == "FAIL" and "build failed" in failed["problem"] and "error" in failed["problem"]
    assert "int broken = ;" in failed["stderr"]


AGENT = """import sys
side = None
for line in sys.stdin:
    parts = line.rstrip("\\n").split(";")
    if parts[0] == "START":
        side = parts[1]
        if side == "South":
            print("MOVE;1", flush=True)
    elif parts[0] == "CHANGE":
        side = ("South" if side == "North" else "North") if parts[1] == "SWAP" else side
        board = [int(x) for x in parts[2].split(",")]
        if parts[3] == "YOU":
            row = board[:7] if side == "North" else board[8:15]
            print("MOVE;%d" % next(i + 1 for i in range(7) if row[i]), flush=True)
    elif parts[0] == "END":
        break
"""


def test_a_manchester_agent_gets_the_checks_its_protocol_allows(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    (folder / "bot.toml").write_text(
        'command = "python3 agent.py"\nprotocol = "mankalah"\n', encoding="utf-8"
    )
    report = checked(folder, "--rules", "mankalah", status=0)
    shown = statuses(report)
    assert [name for name in shown if name.startswith("game")] == [
        "game 1",
        "game 2",
    ]  # no pie game: always pie
    assert shown["game 1"] == shown["game 2"] == "ok" and shown["QUIT"] == "skip"
    assert shown["memory"] in ("ok", "skip") and shown["processes"] in ("ok", "skip")  # skip: no cgroups
    assert "no QUIT" in item(report, "QUIT")["summary"]
    run = arena_check(str(folder))  # its engine's game only
    assert run.returncode == 2 and "play it under the rules 'mankalah'" in run.stderr


# --- usage errors -------------------------------------------------------------------------------------------


def test_usage_errors_are_one_line_and_exit_2(tmp_path):
    for args, says in (
        (("nosuchbot",), "no bot named 'nosuchbot'"),
        (("greedy", "--rules", "kalah,pits=x"), "--rules"),
        (("greedy", "--move-time", "0"), "--move-time"),
        (("greedy", "--bogus"), "--bogus"),
    ):
        run = arena_check(*args)
        assert run.returncode == 2 and run.stdout == "", (args, run.stdout)
        assert (
            len(run.stderr.strip().splitlines()) == 1 and says in run.stderr and "Traceback" not in run.stderr
        )


def test_without_reference_bots_the_check_says_where_it_looked(tmp_path, monkeypatch):
    """An arena without its package data (a broken install): the check names where it looked, what to do."""
    import arena.student.check as check_module
    from arena.match.bots import BotError, load_bot
    from arena.tournament.settings import Settings

    monkeypatch.setattr(check_module, "ARENA_BOTS", tmp_path / "no-bots")
    mine = tmp_path / "mine.py"
    mine.write_text("print(1)\n")
    with pytest.raises(
        BotError, match=r"no reference bots: .*no-bots \(arena's own\) and the --bots folder; reinstall"
    ):
        check_module.check(load_bot(mine), Settings(openings=0))


def test_a_forfeit_after_one_move_says_one_move(tmp_path):
    second = bot(tmp_path, "second", variant(on_move='if moves == 2: raise SystemExit("two is too many")'))
    report = checked(second, status=1)
    failed = item(report, "game 1")
    assert failed["summary"] == "forfeits after 1 move", failed


@pytest.mark.slow
def test_an_anytime_bot_is_checked_with_its_answers_per_move(tmp_path):
    """bot.toml `anytime = true`: the check plays it so (several answers per MOVE are no fault), says how
    many it wrote, and warns a bot that writes one only (anytime then costs every MOVE its whole time)."""
    for name, extra, status in (("deep", "print(move, flush=True)", "ok"), ("once", "pass", "warn")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "bot.py").write_text(variant(on_move=extra))
        (folder / "bot.toml").write_text('command = "python3 bot.py"\nanytime = true\n')
        report = checked(folder, "--rules", "kalah,pits=3,seeds=2", status=0)  # few MOVEs
        anytime = item(report, "anytime")
        assert anytime["status"] == status, anytime
        assert ("2.0 answers per MOVE" if name == "deep" else "1.0 answers per MOVE") in anytime["summary"]
        assert all(s == "ok" for n, s in statuses(report).items() if n.startswith("game")), report
        assert item(report, "think time")["status"] == "ok"
