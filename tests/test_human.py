"""A person plays a bot at the terminal (`arena play BOT human`): the real CLI with scripted stdin, real bot
processes confined as `arena run` confines them, and the Human seat on its own with string streams."""

from __future__ import annotations

import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from botsrc import CPU_REPORTER
from conftest import assert_ends_as_recorded, said

from arena import Settings
from arena.api import Match
from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.match.bots import load_bot
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.match.referee import play_game
from arena.report.replay import replay
from arena.report.terminal import board
from arena.student.human import Human

ROOT = Path(__file__).resolve().parent.parent
BOTS = str(ROOT / "bots")
MOVE_MS = "100"


def cycle(pits: int, rounds: int = 60) -> str:
    """Entries 1..pits over and over: whatever the bot does, a non-empty pit comes within `pits` lines (the
    empty ones are explained and asked again), so the person always finishes the game."""
    return "".join(f"{p}\n" for _ in range(rounds) for p in range(1, pits + 1))


def play(*args: str, script: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "arena", "play", *args, "--bots", BOTS, "--move-time", MOVE_MS]
    return subprocess.run(argv, cwd=ROOT, input=script, capture_output=True, text=True, timeout=60)


def answers(transcript: str) -> list[tuple[str, str]]:
    """(what the person typed, the line the program answered with) for every prompt, in order."""
    lines = transcript.splitlines()
    found = []
    for k, line in enumerate(lines):
        if m := re.fullmatch(r"your move \(1-\d+(?:, or SWAP)?, \? for help\): (.*)", line):
            found.append((m[1], lines[k + 1] if k + 1 < len(lines) else ""))
    return found


def clean(run: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in run.stderr + run.stdout, run.stderr


@pytest.mark.parametrize("rules", ["kalah,pits=4,seeds=3", "relay,pits=3,seeds=2"])
def test_a_whole_game_against_the_random_bot(rules):
    run = play("random", "human", "--rules", rules, script=cycle(4))
    assert run.returncode == 0, run.stderr
    clean(run)
    lines = run.stdout.splitlines()
    assert f"new game, {rules}: you play north against random; random moves first." in lines
    assert "     North: you  <- to move" in lines  # the person's row is the bottom one, named
    assert re.fullmatch(r"game 1: random \(south\) vs human \(north\): .*", lines[-2]), lines[-2]
    score = re.fullmatch(rf"random (\S+) - (\S+) human after 1 game \({rules}\)", lines[-1])
    assert score, lines[-1]
    assert float(score[1]) + float(score[2]) == 1


def test_wrong_entries_are_explained_and_asked_again():
    # South moves first; from the start of Kalah(3,2) pit 2 ends in the store: an extra turn, pit 2 empty.
    rules = parse_rules("kalah,pits=3,seeds=2,pie")
    after = rules.play(rules.initial(), 2)
    assert after.to_move == SOUTH and after.row(SOUTH)[1] == 0
    wrong = ["abc", "0", "99", "", "SWAP", "2", "2", "-1", "9" * 5000]
    run = play("human", "random", "--rules", rules.spec, script="\n".join(wrong) + "\n" + cycle(3))
    assert run.returncode == 0, run.stderr
    clean(run)
    said = answers(run.stdout)
    assert said[:9] == [
        ("abc", "'abc' is not a move: type a pit number 1-3 (you can play 1, 2, 3), or q to quit"),
        ("0", "pit 0 is out of range 1..3 (you can play 1, 2, 3)"),
        ("99", "pit 99 is out of range 1..3 (you can play 1, 2, 3)"),
        ("", "an empty line is not a move: type a pit number 1-3 (you can play 1, 2, 3)"),
        ("SWAP", "SWAP is only allowed as the second player's first move (you can play 1, 2, 3)"),
        ("2", "you played 2: extra turn"),
        ("2", "pit 2 is empty (you can play 1, 3)"),
        ("-1", "'-1' is not a move: type a pit number 1-3 (you can play 1, 3), or q to quit"),
        (
            "9" * 5000,
            f"'{'9' * 20}...' is not a move: type a pit number 1-3 (you can play 1, 3), or q to quit",
        ),
    ]
    # Every explanation is followed by the prompt again, and the game goes on to its end.
    assert run.stdout.count("your move (1-3") == len(said)
    assert run.stdout.splitlines()[-1].startswith("human ") and "after 1 game" in run.stdout


def test_swap_under_the_pie_rule_changes_the_sides():
    spec = "kalah,pits=3,seeds=2,pie"
    run = play("random", "human", "--rules", spec, "--json", script="SWAP\n" + cycle(3))
    assert run.returncode == 0, run.stderr
    clean(run)
    (record,) = [json.loads(line) for line in run.stdout.splitlines()]
    assert SWAP in record["moves"] and record["north"] == "human"
    out = run.stderr  # with --json the person's board is on stderr, the records on stdout
    assert "Pie rule: you may answer random's first turn with SWAP (taking over its side)." in out
    assert answers(out)[0] == (
        "SWAP",
        "you swapped: south and its store are yours now; random plays north and moves next",
    )
    before, after = out.split("you swapped", 1)
    assert "North: you  <- to move" in before and "South: random" in before
    assert "North: random" in after and "South: you" in after and "North: you" not in after


def test_the_board_marks_the_last_move_captures_and_extra_turns():
    """Every ply's line is the engine's account of it, and the board after the bot's capture marks the pit
    it sowed and the two holes the capture emptied. The bot is greedy (deterministic); the expectations
    are worked out from the played record by the rules engine, not written in."""
    spec = "kalah,pits=4,seeds=3"
    run = play("greedy", "human", "--rules", spec, "--json", script=cycle(4))
    assert run.returncode == 0, run.stderr
    clean(run)
    (row,) = [json.loads(line) for line in run.stdout.splitlines()]
    game = replay(GameRecord.from_dict(row), rules=parse_rules(spec))
    out = run.stderr
    said = []
    for k, ply in enumerate(game.plies):
        who = "you" if game.owners(k)[ply.mover] == "human" else "greedy"
        notes = (
            ([f"captures {ply.captured}"] if ply.captured else [])
            + (["extra turn"] if ply.extra else [])
            + (["game over"] if ply.ended else [])
        )
        said.append(f"{who} played {ply.move}" + (": " + ", ".join(notes) if notes else ""))
    told = [line for line in out.splitlines() if re.match(r"(you|greedy) played ", line)]
    assert told == said
    assert any(p.extra for p in game.plies)
    captures = [k for k, p in enumerate(game.plies) if p.captured and game.owners(k)[p.mover] == "greedy"]
    assert captures, "this scripted game has no capture by the bot: pick another one"
    k = captures[0]
    pos = game.position(k + 1)
    assert pos is not None
    drawn = board(pos, "greedy", "you", game.plies[k], bottom=NORTH)
    assert drawn in out
    assert drawn.count("x") == 2 and drawn.count("(") == 1


@pytest.mark.slow
def test_the_end_of_the_input_or_q_ends_the_session_cleanly():
    run = play("human", "random", "--rules", "kalah,pits=3,seeds=2", script="1\n")
    assert run.returncode == 0
    clean(run)
    assert said(run.stderr) == [
        "arena: the input ended in game 1, which is not counted: human 0 - 0 random so far"
    ]
    run = play(
        "random", "human", "--games", "3", "--rules", "kalah,pits=3,seeds=2", script=cycle(3, 2) + "q\n"
    )
    assert run.returncode == 0
    clean(run)
    (line,) = said(run.stderr)
    quit_line = r"arena: you quit in game (\d), which is not counted: random (\S+) - (\S+) human so far"
    found = re.fullmatch(quit_line, line)
    assert found, line
    assert float(found[2]) + float(found[3]) == int(found[1]) - 1
    assert run.stdout.count("new game") >= int(found[1])  # every game begun, the one quit included


def test_a_bot_that_crashes_loses_to_the_person_who_is_told_why(tmp_path):
    (tmp_path / "broken.py").write_text("raise SystemExit('cannot find my weights file')\n")
    argv = [sys.executable, "-m", "arena", "play", "broken", "human", "--bots", str(tmp_path)]
    run = subprocess.run(argv, cwd=ROOT, input="", capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-3] == "you win 0-0 (broken forfeits: crash)"
    assert lines[-2].startswith(
        "game 1: broken (south) vs human (north): human wins, broken forfeits (crash: "
    )
    assert "cannot find my weights file" in lines[-2]
    assert lines[-1] == "broken 0 - 1 human after 1 game (kalah)"


def test_a_game_a_bot_ended_before_it_reached_the_person_tells_them_the_outcome():
    """A bot whose crash shows while the referee starts its game (as on a loaded machine) ends the game
    before the person's seat is told of it: the person reads the outcome, with no board to show."""
    from arena.match.record import Reason
    from arena.student.human import Human

    shown = io.StringIO()
    Human("broken", input=io.StringIO(""), output=shown).end_game("win", 0, 0, Reason.CRASH)
    assert shown.getvalue() == "you win 0-0 (broken forfeits: crash)\n"


def test_ctrl_c_while_the_person_thinks_prints_the_score_so_far():
    argv = [
        sys.executable,
        "-m",
        "arena",
        "play",
        "human",
        "random",
        "--bots",
        BOTS,
        "--rules",
        "kalah,pits=3,seeds=2",
    ]
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None
    seen, deadline = b"", time.monotonic() + 30
    while b"your move" not in seen and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1)[0]:
            seen += os.read(proc.stdout.fileno(), 4096)
    assert b"your move (1-3, ? for help): " in seen
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert said(err.decode().strip()) == ["arena: interrupted after 0 games: human 0 - 0 random so far"]
    assert out.decode() == "\n"  # the prompt's line is ended


def test_human_is_always_the_person_and_two_people_are_refused(tmp_path):
    (tmp_path / "human.py").write_text((ROOT / "bots" / "random.py").read_text())
    (tmp_path / "greedy.py").write_text((ROOT / "bots" / "greedy.py").read_text())
    argv = [sys.executable, "-m", "arena", "play", "greedy", "human", "--bots", str(tmp_path)]
    run = subprocess.run(argv, cwd=ROOT, input="q\n", capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    assert (
        said(run.stderr)[0] == f"arena: 'human' is you; the bot named human in {tmp_path} plays by its path"
    )
    assert "you play north against greedy" in run.stdout
    both = play("human", "human", script="")
    assert both.returncode == 2 and both.stdout == ""
    (line,) = both.stderr.strip().splitlines()
    assert line.startswith("arena: error: one side must be a bot: arena play BOT human")


def test_human_seat_with_string_streams_plays_a_confined_bot():
    """The library: a Human reading a StringIO takes a seat in a Match against the random bot's process."""
    entries = io.StringIO("x\n" + cycle(4))
    shown = io.StringIO()
    person = Human("random", input=entries, output=shown)
    settings = Settings(rules="kalah,pits=4,seeds=3", clock=TimeControl(move_ms=100))
    with Match(person, load_bot(ROOT / "bots" / "random.py"), settings) as match:
        record = match.play()
    assert record.south == "human" and record.north == "random" and record.faulty is None
    assert_ends_as_recorded(record)
    text = shown.getvalue()
    assert "your move (1-4, ? for help): x\n'x' is not a move" in text
    mine, theirs = record.south_store, record.north_store
    result = {
        "human": f"you win {mine}-{theirs}",
        "random": f"random wins {theirs}-{mine}",
        None: f"draw {mine}-{theirs}",
    }
    assert text.rstrip().splitlines()[-1] == result[record.winner]
    assert match.score["human"] + match.score["random"] == 1


def test_two_people_at_one_keyboard_see_the_swap_from_their_own_side():
    """Human seats need no process: two of them play through the referee, and the one swapped off South
    reads the swap and then sees the board turned, its new row (North) at the bottom."""
    rules = parse_rules("kalah,pits=3,seeds=2,pie")
    alice_out, bob_out = io.StringIO(), io.StringIO()
    alice = Human("bob", name="alice", input=io.StringIO("1\n" + cycle(3)), output=alice_out)
    bob = Human("alice", name="bob", input=io.StringIO("swap\n" + cycle(3)), output=bob_out)
    record = play_game(rules, alice, bob)
    assert record.moves[:2] == (1, SWAP) and record.faulty is None
    told = alice_out.getvalue()
    assert "bob swapped: it takes over south and its store; you play north now, drawn at the bottom" in told
    after = told.split("bob swapped", 1)[1]
    assert after.index("South: bob") < after.index("North: you  <- to move")  # bob on top, alice below
    assert (
        "you swapped: south and its store are yours now; alice plays north and moves next"
        in bob_out.getvalue()
    )


class Thinking(io.StringIO):
    """A person who takes a while over every entry."""

    def readline(self, size: int = -1) -> str:
        time.sleep(0.25)
        return super().readline(size)


def test_the_bot_is_paused_while_the_person_thinks(tmp_path):
    """A bot that burns CPU in a thread gets next to none of it between its moves while the person thinks
    (confined as arena run confines it: the cgroup freezer where there is one)."""
    (tmp_path / "ponderer.py").write_text(CPU_REPORTER)
    person = Human("ponderer", input=Thinking(cycle(4)), output=io.StringIO())
    settings = Settings(rules="kalah,pits=4,seeds=3", clock=TimeControl(move_ms=1000))
    with Match(person, load_bot(tmp_path / "ponderer.py"), settings) as match:
        record = match.play()
    assert record.faulty is None
    cpu = [
        float(line.split()[1]) for line in record.stderr["ponderer"].splitlines() if line.startswith("cpu ")
    ]
    used = [b - a for a, b in zip(cpu, cpu[1:], strict=False)]
    assert len(used) >= 2 and max(used) < 0.1, used  # against 0.25 s or more of the person's time per gap
