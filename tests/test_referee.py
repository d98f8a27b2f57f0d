"""The referee against real bot processes: well-behaved games and every way a hostile bot can misbehave.

Each hostile bot is a few lines of Python written into tmp_path (see conftest.py); its opponent is the
well-behaved "first legal pit" bot. Every fault must end the game at once as a loss of the hostile bot, with a
detail its author can act on, and must leave no process behind.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import LOOP, PRELUDE
from procs import is_running

from arena.game.rules import NORTH, SOUTH, SWAP, Kalah, Position, Rules, parse_rules
from arena.match.bots import Bot, load_bot, python_kind
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.match.referee import Limits, Player, play_game

FAST = Limits(TimeControl(move_ms=200, startup_ms=2000))
SLOW_MOVES = Limits(TimeControl(move_ms=5000, startup_ms=2000))  # to show that a dead bot is not waited for
KALAH = Kalah()
PIE = Kalah(pie=True)


# --- helpers ----------------------------------------------------------------------------------------------


def replay(rules: Rules, moves: tuple[object, ...]) -> Position:
    pos = rules.initial()
    for move in moves:
        pos = rules.play(pos, move)  # type: ignore[arg-type]
    return pos


def play(
    bots,
    answer: str,
    *,
    setup: str = "",
    hostile_side: int = NORTH,
    rules: Rules = KALAH,
    limits: Limits = FAST,
) -> tuple[GameRecord, float]:
    """One game of the bot `hostile` (from `answer`/`setup`) against `good`; the record and its seconds."""
    hostile = bots.player(bots.make("hostile", answer, setup))
    good = bots.player(bots.make("good"))
    south, north = (hostile, good) if hostile_side == SOUTH else (good, hostile)
    start = time.monotonic()
    record = play_game(rules, south, north, limits)
    elapsed = time.monotonic() - start
    if record.faulty:
        assert not hostile.running, "a faulty bot's process must be ended"
    return record, elapsed


def assert_fault(record: GameRecord, reason: str, *words: str) -> None:
    """`hostile` lost by `reason`, `good` won, the detail with the bot's words (what its author reads) has
    every one of `words`, the moves replay."""
    assert (record.reason, record.faulty, record.winner) == (reason, "hostile", "good"), record
    for word in words:
        assert word in record.told(), f"{word!r} not in detail {record.told()!r}"
    pos = replay(parse_rules(record.rules), record.moves)
    assert (pos.store(SOUTH), pos.store(NORTH)) == (record.south_store, record.north_store)
    assert len(record.move_ms) == len(record.moves)
    assert set(record.stderr) == {"good", "hostile"}


def assert_normal(record: GameRecord, rules: Rules) -> Position:
    """A game that ended by the rules: no fault, and the recorded moves replay to the recorded result."""
    assert record.reason == "normal", record
    assert record.faulty is None
    assert record.detail == ""
    assert record.south_store + record.north_store == rules.pits * rules.seeds * 2
    pos = replay(rules, record.moves)
    assert rules.is_over(pos)
    assert (pos.store(SOUTH), pos.store(NORTH)) == (record.south_store, record.north_store)
    assert len(record.move_ms) == len(record.moves)
    assert all(ms >= 0 for ms in record.move_ms)
    names = (record.south, record.north)
    a, b = (record.store_of(name) for name in names)
    assert sorted((a, b)) == sorted((record.south_store, record.north_store))
    expected = None if a == b else names[0] if a > b else names[1]
    assert record.winner == expected
    return pos


def end_lines(bots, bot: Bot) -> list[str]:
    return [line for line in bots.log(bot) if line.startswith("END ")]


def live_group_members(pgid: int) -> list[int]:
    """Pids of the processes in group `pgid` that are still running (zombies do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def wait_until_gone(pgid: int, timeout: float = 3.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := live_group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


# --- games that go by the rules ---------------------------------------------------------------------------


def test_normal_game_between_well_behaved_bots(bots) -> None:
    alpha_bot, beta_bot = bots.make("alpha"), bots.make("beta")
    alpha, beta = bots.player(alpha_bot), bots.player(beta_bot)
    record = play_game(KALAH, alpha, beta, FAST)
    assert (record.rules, record.south, record.north) == ("kalah", "alpha", "beta")
    assert_normal(record, KALAH)
    assert not record.swapped
    assert all(isinstance(m, int) for m in record.moves)
    # Both bots were told the result from their own side.
    alpha.close()
    beta.close()
    south, north = record.south_store, record.north_store
    result = {None: ("draw", "draw"), "alpha": ("win", "loss"), "beta": ("loss", "win")}[record.winner]
    assert end_lines(bots, alpha_bot) == [f"END {result[0]} {south} {north} normal"]
    assert end_lines(bots, beta_bot) == [f"END {result[1]} {north} {south} normal"]


def test_pie_rule_game_where_north_swaps(bots) -> None:
    swapper = bots.make(
        "swapper",
        """
        def answer(board, moves):
            say("SWAP" if moves == 1 else str(first_legal(board)))
        """,
    )
    opener = bots.make("opener")
    players = [bots.player(opener), bots.player(swapper)]
    record = play_game(PIE, *players, FAST)
    assert record.rules == "kalah,pie"
    assert record.swapped
    assert record.moves.count(SWAP) == 1
    assert_normal(record, PIE)
    # After the swap the opener owns North and the swapper South: the stores belong the other way round.
    assert record.store_of("opener") == record.north_store
    assert record.store_of("swapper") == record.south_store
    for player in players:
        player.close()  # QUIT and wait: the log is complete once the process has ended
    for bot in (opener, swapper):
        mine, theirs = record.store_of(bot.name), 72 - record.store_of(bot.name)
        result = "draw" if mine == theirs else "win" if record.winner == bot.name else "loss"
        assert end_lines(bots, bot) == [f"END {result} {mine} {theirs} normal"]


def test_comment_lines_are_ignored(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            say("# info thinking about move %d" % moves)
            say("#")
            say(str(first_legal(board)))
            say("# a comment after the answer, when no move was asked, is fine too")
        """,
    )
    assert_normal(record, KALAH)


def test_print_without_flush_is_enough(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            print("# move", moves)
            print(first_legal(board))
        """,
        hostile_side=SOUTH,
    )
    assert_normal(record, KALAH)


def test_crlf_line_endings_are_accepted(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            os.write(1, ("# crlf\\r\\n%d\\r\\n" % first_legal(board)).encode())
        """,
        hostile_side=SOUTH,
    )
    assert_normal(record, KALAH)


def test_players_with_the_same_name_are_refused(bots) -> None:
    bot = bots.make("twin")
    with pytest.raises(ValueError, match="twin"):
        play_game(KALAH, bots.player(bot), bots.player(bot), FAST)
    other = bots.make("other")
    with pytest.raises(ValueError, match="same"):
        play_game(KALAH, bots.player(bot, "same"), bots.player(other, "same"), FAST)


# --- timeouts ---------------------------------------------------------------------------------------------


def test_bot_that_hangs_forever_times_out(bots) -> None:
    record, elapsed = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                time.sleep(600)
            say(str(first_legal(board)))
        """,
    )
    # a Python bot: arena flushes its lines, so the hint is not about C's buffers
    assert_fault(record, "timeout", "no reply within 200 ms, nor in 200 ms more", "it printed no answer line")
    assert "startup" not in record.detail  # not its first move
    assert elapsed < 3


def test_a_folder_python_bot_that_never_flushes_is_told_to_flush(bots, tmp_path, monkeypatch) -> None:
    # the starter of `arena new --lang python`: bot.toml runs python3 bot.py, whose stdout arena cannot flush
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # as on a student's machine
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "bot.toml").write_text('command = "python3 bot.py"\n')
    unflushed = "def answer(board, moves):\n    print(first_legal(board))\n"
    (folder / "bot.py").write_text("\n".join([PRELUDE, unflushed, LOOP]))
    hostile, good = bots.player(load_bot(folder)), bots.player(bots.make("good"))
    record = play_game(KALAH, good, hostile, FAST)
    assert_fault(record, "timeout", "no reply within 200 ms", "print(move, flush=True)")
    assert "C++" not in record.detail and "Java" not in record.detail


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (("/usr/bin/python3.11", "bot.py"), "python"),
        (("python", "-u", "bot.py"), "python"),
        (load_bot(Path(__file__)).argv, "launcher"),
        (("./bot",), ""),
        (("java", "-cp", ".", "Bot"), ""),
        (("/opt/pythonista/run",), ""),
    ],
)
def test_python_is_told_from_the_command_run(argv: tuple[str, ...], kind: str) -> None:
    assert python_kind(argv) == kind


def test_hang_on_the_first_move_mentions_the_startup_allowance(bots) -> None:
    limits = Limits(TimeControl(move_ms=200, startup_ms=500))
    record, elapsed = play(bots, "def answer(board, moves):\n    time.sleep(600)\n", limits=limits)
    assert_fault(record, "timeout", "no reply within 200 ms", "first move", "500 ms startup")
    assert elapsed < 4


def test_bot_that_answers_late_times_out(bots) -> None:
    record, elapsed = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                time.sleep(0.8)
            say(str(first_legal(board)))
        """,
        hostile_side=SOUTH,
    )
    assert_fault(record, "timeout", "no reply within 200 ms")
    assert (
        elapsed < 0.8 + 0.5
    )  # the referee stopped waiting soon after the deadline, not when the answer came


def test_a_late_answer_says_how_late_it_came(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                time.sleep(0.33)  # past 200 ms (+50 ms margin), within the 200 ms the referee then watches
            say(str(first_legal(board)))
        """,
        hostile_side=SOUTH,
    )
    assert_fault(record, "timeout", "no reply within 200 ms: it answered")
    late = int(record.detail.split("only after ")[1].split()[0])
    assert 300 <= late < 450, record.detail


def test_partial_line_then_stall_times_out(bots) -> None:
    record, elapsed = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                os.write(1, b"3")  # no end of line
                time.sleep(600)
            say(str(first_legal(board)))
        """,
    )
    assert_fault(
        record,
        "timeout",
        "no reply within 200 ms: it wrote part of a line but no end of line",
        "what it wrote: '3'",
    )
    assert elapsed < 3


def test_flood_of_comment_lines_still_times_out_at_the_deadline(bots) -> None:
    record, elapsed = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                stop = time.monotonic() + 2.0
                block = b"#\\n" * 2048  # 4096 bytes: each write is atomic, so the lines stay whole
                for _ in range(2):  # three writers, so the referee never finds the pipe empty
                    if os.fork() == 0:
                        break
                while time.monotonic() < stop:
                    os.write(1, block)
                time.sleep(600)
            say(str(first_legal(board)))
        """,
    )
    assert_fault(record, "timeout", "no reply within 200 ms")
    assert elapsed < 1.0, f"the referee waited {elapsed:.2f} s for a 200 ms move"


# --- crashes ----------------------------------------------------------------------------------------------


# The crashing bots below pause for a moment between their last stderr line and their exit: the referee may
# read the stderr tail before its drain thread has caught up (a bug, see the lagging-drain tests at the end),
# and these tests are about what the detail says, not about that race.


def test_crash_at_start(bots) -> None:
    setup = """
        import atexit
        atexit.register(time.sleep, 0.2)  # a head start for the stderr drain, after the traceback
        raise RuntimeError("boom at start: no model file")
        """
    record, _ = play(bots, "", setup=setup)
    assert_fault(record, "crash", "exited with code 1", "RuntimeError: boom at start: no model file")
    assert record.moves  # south played before north's crash was noticed
    assert "Traceback" in record.stderr["hostile"]


def test_crash_mid_game(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            if moves == 3:
                sys.stderr.write("giving up after 2 moves\\n")
                sys.stderr.flush()
                time.sleep(0.2)  # a head start for the referee's stderr drain
                sys.exit(3)
            say(str(first_legal(board)))
        """,
        hostile_side=SOUTH,
        limits=Limits(TimeControl(move_ms=1000, startup_ms=2000)),  # time for the pause before the exit
    )
    assert_fault(record, "crash", "exited with code 3", "giving up after 2 moves")
    assert len(record.moves) >= 2


def test_crash_by_a_signal(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                os.kill(os.getpid(), 9)
            say(str(first_legal(board)))
        """,
    )
    assert_fault(record, "crash", "was killed by SIGKILL")


def test_missing_program_cannot_be_started(bots, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-program"
    ghost = Bot("hostile", (str(missing),), tmp_path, missing, "0" * 16)
    good = bots.player(bots.make("good"))
    record = play_game(KALAH, good, bots.player(ghost), FAST)
    assert_fault(record, "crash", "could not be started", str(missing))
    assert record.moves == ()
    assert good.running  # the opponent is fine and keeps its process


def test_file_that_is_not_a_program_cannot_be_started(bots, tmp_path: Path) -> None:
    path = tmp_path / "hostile"
    path.write_text("this is not a program\n")
    path.chmod(0o755)
    not_a_program = Bot("hostile", (str(path),), tmp_path, path, "0" * 16)
    record = play_game(KALAH, bots.player(bots.make("good")), bots.player(not_a_program), FAST)
    assert_fault(record, "crash", "could not be started", str(path))


def test_bot_that_closes_stdout_but_keeps_running(bots) -> None:
    record, elapsed = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                os.close(1)
                time.sleep(600)
            say(str(first_legal(board)))
        """,
        limits=SLOW_MOVES,
    )
    assert_fault(record, "crash", "stdout", "kept running")
    assert elapsed < 2.5  # the closed pipe is noticed at once, not at the 5 s deadline


def test_bot_that_closes_stdin_is_told_so(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            os.close(0)  # before answering, so the referee's next line surely finds no reader
            say(str(first_legal(board)))
            time.sleep(600)
        """,
        hostile_side=SOUTH,
    )
    assert_fault(record, "crash", "stdin")
    assert "stdout" not in record.detail


def test_dead_bot_whose_child_holds_stdout_is_not_waited_for(bots) -> None:
    setup = """
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits stdout
        log(f"child {child.pid}")
        """
    answer = """
        def answer(board, moves):
            if moves == 2:
                sys.stderr.write("exiting, my child keeps the pipe\\n")
                sys.stderr.flush()
                time.sleep(0.2)  # a head start for the referee's stderr drain
                sys.exit(3)
            say(str(first_legal(board)))
        """
    record, elapsed = play(bots, answer, setup=setup, limits=SLOW_MOVES)
    assert_fault(record, "crash", "exited with code 3", "exiting, my child keeps the pipe")
    assert elapsed < 2.5  # not the 5 s move deadline, although stdout never reaches end of file
    (pgid,) = bots.pids("hostile")  # the bot leads its own process group
    child = bots.logged_int("hostile", "child")
    assert wait_until_gone(pgid) == []
    assert not is_running(child)


# --- garbled answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (b"thinking...\n", ["'thinking...'", "stderr"]),
        (b"move 3\n", ["'move 3'", "stderr"]),
        (b"\n", ["empty line"]),
        (b"   \n", ["empty line"]),
        (b"swap\n", ["'swap'", "spelled SWAP"]),
        (b"\xff\xfe3\n", ["not plain ASCII"]),
        ("3\u00e9\n".encode(), ["not plain ASCII"]),
        (b"3\x00\n", ["not plain ASCII"]),
        (b"1234567890\n", ["'1234567890'"]),
        (b"3 4\n", ["'3 4'"]),
        (b"+3\n", ["'+3'"]),
    ],
    ids=lambda v: repr(v) if isinstance(v, bytes) else None,
)
def test_garbled_answer(bots, payload: bytes, words: list[str]) -> None:
    answer = f"""
        def answer(board, moves):
            if moves == 2:
                os.write(1, {payload!r})
            else:
                say(str(first_legal(board)))
        """
    record, _ = play(bots, answer)
    assert_fault(record, "garbled", "answered", *words)


def test_enormous_line_without_newline(bots) -> None:
    record, elapsed = play(
        bots,
        """
        def answer(board, moves):
            sys.stdout.buffer.write(b"1" * 10_000_000)  # 10 MB, no end of line; blocks on the full pipe
            sys.stdout.buffer.flush()
            time.sleep(600)
        """,
    )
    assert_fault(record, "garbled", "1024", "without an end of line")
    assert elapsed < 3


def test_long_line_with_newline(bots) -> None:
    record, _ = play(bots, 'def answer(board, moves):\n    say("1" * 5000)\n', hostile_side=SOUTH)
    assert_fault(record, "garbled", "1024")


def test_line_written_before_any_move_was_asked(bots) -> None:
    # North says hello at start; South takes its time over its first move, so the hello is surely waiting
    # by the time North is first asked for a move (with pondering allowed: a paused North, even one still
    # starting up, would say it only once asked).
    hostile = bots.player(bots.make("hostile", setup='say("hello")\n'))
    slow = bots.make(
        "good",
        """
        def answer(board, moves):
            if moves == 1:
                time.sleep(0.4)
            say(str(first_legal(board)))
        """,
    )
    record = play_game(KALAH, bots.player(slow), hostile, dataclasses.replace(FAST, ponder=True))
    assert_fault(record, "garbled", "'hello'", "when no move was asked")


def test_extra_line_after_an_answer(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            os.write(1, ("%d\\nI am sure of it\\n" % first_legal(board)).encode())  # one write
        """,
    )
    assert_fault(record, "garbled", "'I am sure of it'", "when no move was asked")
    assert len(record.moves) >= 2  # the first answer itself counted


# --- illegal moves ----------------------------------------------------------------------------------------


def test_empty_pit_is_illegal(bots) -> None:
    # Pit 1 (6 seeds) ends in South's store: an extra turn, with pit 1 now empty.
    record, _ = play(bots, 'def answer(board, moves):\n    say("1")\n', hostile_side=SOUTH)
    assert_fault(record, "illegal", "played 1", "pit 1 is empty")
    assert record.moves == (1,)


@pytest.mark.parametrize("pit", [0, 7, 999_999_999])
def test_pit_out_of_range_is_illegal(bots, pit: int) -> None:
    record, _ = play(bots, f'def answer(board, moves):\n    say("{pit}")\n')
    assert_fault(record, "illegal", "played a pit out of range 1..6", f"its move: {pit}")
    assert str(pit) not in record.detail  # a number it chose is its words: shown to its author alone


def test_swap_without_pie_rule_is_illegal(bots) -> None:
    record, _ = play(bots, 'def answer(board, moves):\n    say("SWAP")\n')
    assert_fault(record, "illegal", "SWAP", "no pie rule")


def test_swap_by_the_first_player_is_illegal(bots) -> None:
    record, _ = play(bots, 'def answer(board, moves):\n    say("SWAP")\n', hostile_side=SOUTH, rules=PIE)
    assert_fault(record, "illegal", "SWAP", "second player's first move")
    assert record.moves == ()


def test_swap_on_a_later_move_is_illegal(bots) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            say("SWAP" if moves == 2 else str(first_legal(board)))
        """,
        rules=PIE,
    )
    assert_fault(record, "illegal", "SWAP", "second player's first move")


def test_swap_after_an_extra_turn_is_illegal(bots) -> None:
    # kalah,seeds=4,pie: South plays 1 (ends in its own row); North plays 3 (4 seeds: 4, 5, 6, store), an
    # extra turn, then SWAP: no longer the second player's first move.
    rules = Kalah(seeds=4, pie=True)
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            say({1: "3", 2: "SWAP"}.get(moves) or str(first_legal(board)))
        """,
        rules=rules,
    )
    assert record.moves[:2] == (1, 3)
    assert_fault(record, "illegal", "SWAP", "second player's first move")


# --- stderr, processes, reuse ---------------------------------------------------------------------------


def test_stderr_flood_is_drained_and_capped(bots) -> None:
    setup = """
        flooded = 0
        """
    answer = """
        def answer(board, moves):
            global flooded
            chunk = b"x" * 65535 + b"\\n"
            if flooded < 20 * 2**20:
                for _ in range(64):  # 4 MiB per move until 20 MiB are out
                    sys.stderr.buffer.write(chunk)
                flooded += 64 * len(chunk)
            sys.stderr.buffer.write(b"log line %d\\n" % moves)
            sys.stderr.buffer.flush()
            say(str(first_legal(board)))
        """
    hostile = bots.player(bots.make("hostile", answer, setup))
    good = bots.player(bots.make("good"))

    def settle(pos: Position, move: object, player: Player) -> None:
        if KALAH.is_over(pos):
            time.sleep(0.2)  # let the drain thread catch up; a lagging drain has its own (xfail) test

    record = play_game(
        KALAH, hostile, good, Limits(TimeControl(move_ms=500, startup_ms=2000)), on_move=settle
    )
    assert_normal(record, KALAH)
    moves = sum(1 for line in bots.log(hostile.bot) if line.startswith("MOVE "))
    assert moves >= 5  # so that all 20 MiB were written
    tail = record.stderr["hostile"]
    assert 0 < len(tail) <= 8192
    assert tail.endswith(f"log line {moves}\n")
    assert "x" * 1000 in tail
    hostile.close()
    assert len(hostile.stderr_tail()) <= 8192
    assert hostile.stderr_tail().endswith(f"log line {moves}\n")


# The stderr tail is read by the referee while a daemon thread may still be behind on draining the pipe.
# To make that interleaving certain rather than rare, the fixture below delays the drain thread after each
# read that returned data, as a busy machine may. Unpatched, the same failures show up now and then: about
# 1 crash detail in 100 lacked the last line in a stress run on an idle machine (1 MiB of stderr, the line,
# os._exit), and the flood test's record tail came out stale in 2 of 20 runs with four runs in parallel.

DRAIN_LAG = 0.5  # s


@pytest.fixture
def lagging_stderr_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every os.read outside the main thread (only stderr drain threads read there) pauses after data."""
    real_read = os.read
    main = threading.main_thread()

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        if data and threading.current_thread() is not main:
            time.sleep(DRAIN_LAG)
        return data

    monkeypatch.setattr(os, "read", read)


def test_crash_detail_has_the_last_stderr_line_even_if_the_drain_lags(bots, lagging_stderr_drain) -> None:
    record, _ = play(
        bots,
        """
        def answer(board, moves):
            if moves == 2:
                sys.stderr.write("FATAL: out of memory\\n")
                sys.stderr.flush()
                sys.exit(3)
            say(str(first_legal(board)))
        """,
    )
    assert_fault(record, "crash", "exited with code 3", "FATAL: out of memory")
    assert record.stderr["hostile"].endswith("FATAL: out of memory\n")


def test_record_stderr_has_the_last_log_line_even_if_the_drain_lags(bots, lagging_stderr_drain) -> None:
    answer = """
        def answer(board, moves):
            sys.stderr.write("log line %d\\n" % moves)
            sys.stderr.flush()
            say(str(first_legal(board)))
        """
    hostile = bots.player(bots.make("hostile", answer))
    record = play_game(KALAH, hostile, bots.player(bots.make("good")), FAST)
    assert_normal(record, KALAH)
    moves = sum(1 for line in bots.log(hostile.bot) if line.startswith("MOVE "))
    assert record.stderr["hostile"].endswith(f"log line {moves}\n")


@pytest.mark.parametrize("end", ["close", "kill"])
@pytest.mark.parametrize("spawn", ["popen", "fork"])
def test_grandchildren_are_ended_with_the_bot(bots, spawn: str, end: str) -> None:
    setup = {
        "popen": """
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid
            """,
        "fork": """
            child = os.fork()
            if child == 0:
                time.sleep(600)
                os._exit(0)
            """,
    }[spawn] + 'log(f"child {child}")\n'
    bot = bots.make("hostile", setup=setup)
    player = bots.player(bot)
    record = play_game(KALAH, player, bots.player(bots.make("good")), FAST)
    assert_normal(record, KALAH)
    assert player.running
    (pgid,) = bots.pids(bot)
    child = bots.logged_int(bot, "child")
    assert is_running(child)
    getattr(player, end)()
    assert not player.running
    assert wait_until_gone(pgid) == []
    assert not is_running(child)


def test_player_keeps_its_process_between_games(bots) -> None:
    a_bot, b_bot = bots.make("a"), bots.make("b")
    a, b = bots.player(a_bot), bots.player(b_bot)
    first = play_game(KALAH, a, b, FAST)
    second = play_game(KALAH, b, a, FAST)  # sides exchanged
    assert_normal(first, KALAH)
    assert_normal(second, KALAH)
    assert a.running and b.running
    for bot, sides in ((a_bot, ["south", "north"]), (b_bot, ["north", "south"])):
        assert len(bots.pids(bot)) == 1
        newgames = [line for line in bots.log(bot) if line.startswith("NEWGAME ")]
        assert newgames == [f"NEWGAME 6 6 {side} kalah" for side in sides]


def test_fresh_process_after_a_fault(bots) -> None:
    flaky = bots.make(
        "hostile",
        """
        def answer(board, moves):
            flag = LOG + ".faulted"
            if not os.path.exists(flag):  # only the very first answer, in the first process
                open(flag, "w").close()
                say("oops")
            else:
                say(str(first_legal(board)))
        """,
    )
    good_bot = bots.make("good")
    hostile, good = bots.player(flaky), bots.player(good_bot)
    first = play_game(KALAH, hostile, good, FAST)
    assert_fault(first, "garbled", "'oops'")
    assert not hostile.running and good.running
    second = play_game(KALAH, hostile, good, FAST)
    assert_normal(second, KALAH)
    old, new = bots.pids(flaky)
    assert old != new
    assert not is_running(old)
    assert len(bots.pids(good_bot)) == 1  # the innocent bot kept its process


def test_opponent_is_told_it_won_after_a_fault(bots) -> None:
    hostile = bots.player(bots.make("hostile", 'def answer(board, moves):\n    say("thinking...")\n'))
    good_bot = bots.make("good")
    good = bots.player(good_bot)
    record = play_game(KALAH, good, hostile, FAST)
    assert_fault(record, "garbled", "'thinking...'")
    good.close()  # QUIT and wait: the log is complete once the process has ended
    log = bots.log(good_bot)
    assert log[-2:] == [f"END win {record.south_store} {record.north_store} garbled", "QUIT"]


ECHO = """\
import sys
for line in sys.stdin:
    print("got", line.strip(), file=sys.stderr, flush=True)
    w = line.split()
    if w and w[0] == "MOVE":
        b = [int(x) for x in w[2:]]
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""


@pytest.mark.parametrize("ponder", [False, True])
def test_a_games_stderr_holds_nothing_of_the_bots_previous_game(bots, ponder) -> None:
    # The process is reused: what the bot writes on reading the END of game 1 is game 1's, even when it was
    # paused while its opponent thought and reads END only later.
    echo = bots.player(bots.write("echo", ECHO))
    slow = "def answer(board, moves):\n    time.sleep(0.03)\n    say(str(first_legal(board)))\n"
    good = bots.player(bots.make("good", slow))  # it thinks long enough for echo to be paused meanwhile
    limits = dataclasses.replace(FAST, ponder=ponder)
    tails = []
    for k in range(3):
        south, north = (echo, good) if k % 2 == 0 else (good, echo)
        record = play_game(KALAH, south, north, limits)
        assert record.faulty is None, record
        tails.append(record.stderr["echo"])
    for k, tail in enumerate(tails):
        lines = tail.splitlines()
        assert lines[0].startswith("got NEWGAME"), (k, lines[:3])
        assert sum(line.startswith("got NEWGAME") for line in lines) == 1, (k, tail)
        if k:  # a game after the first: no END of the game before it
            assert not any(line.startswith("got END") for line in lines[:-1]), (k, tail)


# --- a loaded machine: the referee's own wait for a CPU ---------------------------------------------------


def _late_answer(tmp_path: Path, after: float, logs: int, every: float = 0.01) -> Path:
    """A bot that logs `logs` lines `every` s apart, then answers `after` s into each MOVE."""
    script = tmp_path / "late.py"
    script.write_text(
        "import sys, time\nfor line in sys.stdin:\n    began = time.monotonic()\n"
        f"    for _ in range({logs}):\n"
        f"        sys.stderr.write('thinking\\n'); sys.stderr.flush(); time.sleep({every})\n"
        f"    time.sleep(max(0.0, {after} - (time.monotonic() - began)))\n    print(1, flush=True)\n"
    )
    return script


def _looks(step: float) -> Callable[[], float]:
    """The kernel's count of the referee's waits for a CPU, as a loaded machine makes it: `step` s more at
    every look."""
    looks = itertools.count()
    return lambda: step * next(looks)


@pytest.mark.slow
def test_a_deadline_moves_on_by_the_time_the_referee_itself_waited_for_a_cpu_to_drain_logs(
    tmp_path, monkeypatch
) -> None:
    """CI at load 22: a bot that logged 3 MiB a move answered after 530 ms of a 300 ms MOVE, for the referee
    drained its logs late. Its waits before each drain are the machine's time: here 1 s a drain let an
    answer at 1.3 s of a 1 s wait in; a bot that logs nothing gets no such time. (Seconds, and logs 50 ms
    apart, so that a busy machine neither delays the answer past 2 s nor gathers the logs in one drain.)"""
    import arena.match.process as process

    for logs, expected in ((0, None), (10, "1")):
        bot = process.BotProcess.start([sys.executable, str(_late_answer(tmp_path, 1.3, logs, 0.05))])
        try:
            bot.send("MOVE", time.monotonic() + 5)
            assert bot.read_line(time.monotonic() + 5) == "1"  # started: the next MOVE is timed alone
            monkeypatch.setattr(process, "_waited_for_cpu", _looks(1.0), raising=False)
            start = time.monotonic()
            bot.send("MOVE", start + 5)
            assert bot.read_line(start + 1.0) == expected, logs
        finally:
            bot.kill()


def test_the_referee_s_waits_move_a_deadline_on_by_its_own_length_at_most(tmp_path, monkeypatch) -> None:
    """However long the machine kept the referee waiting, a bot that logs and never answers times out by
    twice its time: a machine so loaded that each look waits longer than the last cannot hold a game."""
    import arena.match.process as process

    monkeypatch.setattr(process, "_waited_for_cpu", _looks(5.0), raising=False)
    bot = process.BotProcess.start([sys.executable, str(_late_answer(tmp_path, 60, 6000))])
    try:
        start = time.monotonic()
        bot.send("MOVE", start + 5)
        assert bot.read_line(start + 0.2) is None
        assert 0.2 <= time.monotonic() - start < 2.0
    finally:
        bot.kill()
