"""A whole tournament through the command line with a classroom's worth of broken and hostile bots.

`arena run` plays every pair of a field made of the bundled greedy and random bots, a bot that floods stderr
but plays by the rules, and one bot for each way a student's program can go wrong: hangs, crashes (at start,
mid-game, between games), pipes closed or held open by a grandchild, garbage, illegal moves, late answers,
half lines, endless lines, unbounded memory, a spinning CPU, a fork bomb. The tournament must finish, store
every game, charge every forfeit to a bot that misbehaved (never to a well-behaved one), tell each author why
on the report page, and leave no process and no cgroup behind.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections import Counter
from pathlib import Path

import markupsafe
import pytest
from cli_kit import arena
from procs import cmdline, processes_mentioning

from arena.game.rules import parse_rules
from arena.match.record import told
from arena.sandbox import Confinement, Warden, sandbox_problem

ROOT = Path(__file__).resolve().parent.parent
RULES = "kalah,pits=4,seeds=3"
MOVE_MS = 300
MEMORY_MB = 256
MAX_PROCS = 16

# --- the bots ----------------------------------------------------------------------------------------------

PRELUDE = """\
import os, subprocess, sys, time


def say(text):
    os.write(1, (text + "\\n").encode())


def pits_of(words):
    return (len(words) - 4) // 2


def board_of(words):
    return [int(w) for w in words[2:]]


def first_legal(words):
    return next(p for p in range(1, pits_of(words) + 1) if words[1 + p] != "0")


def on_end():
    pass

"""

LOOP = """
moves = 0  # MOVE lines this process has received
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "MOVE":
        moves += 1
        answer(words, moves)
    elif words[0] == "END":
        on_end()
    elif words[0] == "QUIT":
        break
"""

LEGAL = """
def answer(words, moves):
    say(str(first_legal(words)))
"""

# Name -> (what the bot does besides the read loop, the reason it forfeits for, words its detail has). Faults
# come on a bot's second move where they would cost a move time: on the first they would cost the startup
# allowance too, in every game, as a process is restarted after every fault.
HOSTILE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "hang": (
        """
def answer(words, moves):
    if moves >= 2:
        time.sleep(3600)
    say(str(first_legal(words)))
""",
        "timeout",
        (f"no reply within {MOVE_MS} ms",),
    ),
    "crash_start": (
        """
raise SystemExit("cannot load my model: weights.bin is missing")
""",
        "crash",
        ("exited with code 1", "weights.bin is missing"),
    ),
    "crash_mid": (
        """
def answer(words, moves):
    if moves == 2:
        raise RuntimeError("my search fell off the board")
    say(str(first_legal(words)))
""",
        "crash",
        ("exited with code 1", "my search fell off the board"),
    ),
    "exit_after_game": (
        """
def on_end():
    sys.stderr.write("one game is enough for me\\n")
    sys.exit(0)


def answer(words, moves):
    say(str(first_legal(words)))
""",
        "crash",
        ("exited with code 0",),
    ),
    "close_stdout": (
        """
def answer(words, moves):
    if moves >= 2:
        os.close(1)
        sys.stderr.write("closed stdout, still here\\n")
        sys.stderr.flush()
        time.sleep(3600)
    say(str(first_legal(words)))
""",
        "crash",
        ("closed its stdout but kept running",),
    ),
    "garbage": (
        """
def answer(words, moves):
    say("hello there, referee")
""",
        "garbled",
        ("hello there, referee",),
    ),
    "empty_pit": (
        """
def answer(words, moves):
    board, n = board_of(words), pits_of(words)
    empty = [p for p in range(1, n + 1) if board[p - 1] == 0]
    to_store = [p for p in range(1, n + 1) if board[p - 1] == n + 1 - p]  # an extra turn, then it is empty
    say(str((empty or to_store or [first_legal(words)])[0]))
""",
        "illegal",
        ("is empty",),
    ),
    "out_of_range": (
        """
def answer(words, moves):
    say(str(pits_of(words) + 1))
""",
        "illegal",
        ("a pit out of range", "its move: 5"),
    ),
    "swap": (
        """
def answer(words, moves):
    say("SWAP")
""",
        "illegal",
        ("SWAP is not allowed",),
    ),
    "late": (
        """
def answer(words, moves):
    if moves >= 2:
        time.sleep(1.0)
    say(str(first_legal(words)))
""",
        "timeout",
        (f"no reply within {MOVE_MS} ms",),
    ),
    "partial": (
        """
def answer(words, moves):
    if moves >= 2:
        os.write(1, b"3")
        time.sleep(3600)
    say(str(first_legal(words)))
""",
        "timeout",
        (f"no reply within {MOVE_MS} ms",),
    ),
    "enormous": (
        """
def answer(words, moves):
    os.write(1, b"1" * 200_000)
    time.sleep(3600)
""",
        "garbled",
        ("without an end of line",),
    ),
    "grandchild": (
        """
GRANDCHILD = "import os, time\\nif os.fork() == 0:\\n    time.sleep(600)\\n"


def answer(words, moves):
    if moves == 1:  # its child forks a grandchild that inherits stdin, stdout and stderr, and outlives both
        subprocess.Popen([sys.executable, "-c", GRANDCHILD, __file__]).wait()
    if moves == 2:
        sys.stderr.write("leaving; my grandchild keeps the pipes\\n")
        sys.stderr.flush()
        sys.exit(3)
    say(str(first_legal(words)))
""",
        "crash",
        ("exited with code 3", "my grandchild keeps the pipes"),
    ),
    "memhog": (
        """
hog = []


def answer(words, moves):
    while True:
        hog.append(bytearray(16 << 20))
""",
        "crash",
        (f"memory limit of {MEMORY_MB} MiB",),
    ),
    "spinner": (
        """
def answer(words, moves):
    while moves >= 2:
        pass
    say(str(first_legal(words)))
""",
        "timeout",
        (f"no reply within {MOVE_MS} ms",),
    ),
    "forkbomb": (
        """
def answer(words, moves):
    if moves == 1:
        kids = 0
        while kids < 300:  # a safety net for a machine that would not bound processes after all
            try:
                pid = os.fork()
            except OSError as e:
                sys.stderr.write(f"fork failed after {kids} children: {e}\\n")
                break
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            kids += 1
    say(str(first_legal(words)))
""",
        "crash",
        (f"more than {MAX_PROCS} processes",),
    ),
}

FLOODER = """
CHUNK = b"x" * 65535 + b"\\n"


def answer(words, moves):
    for _ in range(48):  # 3 MiB of logs per move
        os.write(2, CHUNK)
    say(str(first_legal(words)))
"""

WELL_BEHAVED = {"greedy", "random", "flooder"}
SOMETIMES = {"exit_after_game"}  # plays the first game of each of its processes by the rules


# --- the machine -------------------------------------------------------------------------------------------


def has_cgroups() -> bool:
    warden = Warden(Confinement())
    try:
        return warden.has_cgroups
    finally:
        warden.close()


def cgroup_parents() -> list[Path]:
    """Where arena makes its 'arena-PID' cgroups for processes started from here (pids, memory)."""
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller in ("memory", "pids"):
                found.append(Path("/sys/fs/cgroup") / controller / path.lstrip("/"))
    return found


def arena_cgroups() -> set[Path]:
    return {folder for parent in cgroup_parents() for folder in parent.glob("arena-*")}


def pid_alive(folder: Path) -> bool:
    pid = folder.name.split("-")[1]  # arena-PID-RANDOM
    return pid.isdigit() and Path(f"/proc/{pid}").exists()


def wait_for(check, timeout: float):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while (value := check()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


def movers(record: dict) -> list[int]:
    """The side (0 south, 1 north) that made each of the bots' moves of a game record (after its opening)."""
    rules = parse_rules(record["rules"])
    pos, sides = rules.initial(), []
    for move in record["opening"]:
        pos = rules.play(pos, move)
    for move in record["moves"]:
        sides.append(pos.to_move)
        pos = rules.play(pos, move)
    return sides


# --- the tournament ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_tournament_of_hostile_bots(tmp_path: Path) -> None:
    cgroups = has_cgroups()
    sandboxed = sandbox_problem() is None  # `arena run` uses the sandbox where it works
    marker = f"hostile-{uuid.uuid4().hex}"  # in every bot's path, so in every command line of theirs
    bots_dir, out = tmp_path / marker / "bots", tmp_path / marker / "reports"
    bots_dir.mkdir(parents=True)
    shutil.copy(ROOT / "bots" / "greedy.py", bots_dir / "greedy.py")
    shutil.copy(ROOT / "bots" / "random.py", bots_dir / "random.py")
    (bots_dir / "flooder.py").write_text(PRELUDE + FLOODER + LOOP, encoding="utf-8")
    hostile = dict(HOSTILE)
    if not cgroups:
        del hostile["forkbomb"]  # as root nothing else bounds it: it would be a real fork bomb
    for name, (code, _, _) in hostile.items():
        (bots_dir / f"{name}.py").write_text(PRELUDE + code + LOOP, encoding="utf-8")
    names = sorted(WELL_BEHAVED | set(hostile))
    cgroups_before = arena_cgroups()

    start = time.monotonic()
    run = arena(
        *("run", "--bots", bots_dir, "--out", out, "--rounds", 1, "--jobs", 2),
        *("--move-time", MOVE_MS, "--startup-ms", 3000, "--rules", RULES),
        *("--memory", MEMORY_MB, "--max-procs", MAX_PROCS),
        timeout=300,
    )
    elapsed = time.monotonic() - start
    assert run.returncode == 0, run.stderr
    print(f"tournament of {len(names)} bots: {elapsed:.1f} s")

    # Every game is stored, once.
    exported = arena("export", "--out", out, "--format", "jsonl", timeout=60)
    assert exported.returncode == 0, exported.stderr
    games = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(games) == len(names) * (len(names) - 1)
    assert Counter((g["south"], g["north"]) for g in games) == Counter(
        (s, n) for s in names for n in names if s != n
    )

    # A forfeit is charged to a bot that misbehaved, never to a well-behaved one; between well-behaved
    # bots (the stderr flooder is one) games end by the rules.
    for g in games:
        pair = {g["south"], g["north"]}
        if pair <= WELL_BEHAVED:
            assert (g["reason"], g["faulty"], g["detail"]) == ("normal", None, ""), g
        elif g["faulty"] is None:  # only the bot that leaves after a game plays whole games by the rules
            assert pair & SOMETIMES and g["reason"] == "normal", g
        else:
            assert g["faulty"] in pair - WELL_BEHAVED, g
            assert g["winner"] == (pair - {g["faulty"]}).pop(), g
            assert g["detail"].strip(), g

    # The flooder wrote tens of MiB to stderr, which were read all along (it never stalled on a full pipe and
    # lost no game on time), and only a tail of each game's was kept.
    flooded_mib = 0
    for g in games:
        if {g["south"], g["north"]} <= WELL_BEHAVED and "flooder" in (g["south"], g["north"]):
            tail = g["stderr"]["flooder"]
            assert 0 < len(tail) <= 8192 and set(tail) <= {"x", "\n"}, tail[:100]
            flooder_side = 1 if g["north"] == "flooder" else 0
            flooded_mib += 3 * movers(g).count(flooder_side)  # 3 MiB per move
    assert flooded_mib >= 30

    # Against a well-behaved opponent, a hostile bot forfeits every game, for its own reason (the one that
    # leaves after a game: whenever it is gone).
    for name, (_, reason, words) in hostile.items():
        mine = [g for g in games if name in (g["south"], g["north"])]
        against_good = [g for g in mine if {g["south"], g["north"]} - {name} <= WELL_BEHAVED]
        lost = [g for g in against_good if g["faulty"] == name]
        if name in SOMETIMES:
            # Which of its games come second on a process depends on how the workers share them out:
            # it is charged somewhere, and never loses a game against a well-behaved bot otherwise.
            assert any(g["faulty"] == name for g in mine), mine
            assert all(g["faulty"] in (name, None) for g in against_good), against_good
        else:
            assert len(lost) == len(against_good) == 2 * len(WELL_BEHAVED), (name, against_good)
        for g in lost:
            if g["reason"] == "benched":  # no first answer in 3 games in a row: benched for the run
                assert "no first answer in 3 games in a row" in g["detail"], g
                assert sum(h["faulty"] == name and h["reason"] != "benched" for h in mine) >= 3, mine
                continue
            if name == "close_stdout" and sandboxed and g["reason"] == "timeout":
                continue  # a known bug under bubblewrap: see test_confine.py, closes_stdout [sandbox]
            assert g["reason"] == reason, g
            for word in words:
                assert word in told(g["detail"], g["said"]), (word, g)

    # The report tells each faulty bot's author what went wrong.
    page = (out / "default" / "index.html").read_text(encoding="utf-8")
    for name in hostile:
        assert f'id="faults-{name}"' in page, name
        details = {told(g["detail"], g["said"]) for g in games if g["faulty"] == name}
        assert any(f'<div class="detail">{markupsafe.escape(d)}</div>' in page for d in details), name
    for name in WELL_BEHAVED:
        assert f'id="faults-{name}"' not in page

    # Nothing of theirs is left: no process, no cgroup.
    left = wait_for(lambda: [f"{pid}: {cmdline(pid)[:300]}" for pid in processes_mentioning(marker)], 10.0)
    assert left == []
    if cgroups:

        def leaked() -> list[Path]:
            return sorted(f for f in arena_cgroups() - cgroups_before if f.exists() and not pid_alive(f))

        assert wait_for(leaked, 5.0) == []
