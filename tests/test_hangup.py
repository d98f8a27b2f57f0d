"""A dying arena leaves no bot behind: a closed terminal (SIGHUP) during `arena run`, `play` and `check`, and
an arena killed with kill -9, whose frozen bots the next arena's sweep thaws and ends.

The terminal is a real pseudo-terminal with a shell as its session leader, as in a teacher's terminal window:
closing it hangs up the shell, and the shell's end sends SIGHUP to the whole foreground group (arena and its
game workers). Bots are frozen while their opponent thinks and between games; a frozen process dies of
SIGKILL only once thawed, so one the clean-up missed stays frozen for good.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import is_running, proc_state, processes_mentioning
from test_redteam import as_nobody
from test_tournament import describe, left_after

from arena.sandbox import Confinement, Warden, sandbox_problem

ROOT = Path(__file__).resolve().parent.parent
CGROUP_FS = Path("/sys/fs/cgroup")

# A bot that takes 50 ms a move: games last long enough to hang up in the middle of one.
SLOW = """\
import sys, time
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        time.sleep(0.05)
        pits = (len(words) - 4) // 2
        print(next(p for p in range(1, pits + 1) if words[1 + p] != "0"), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


def cgroups_of(pid: int) -> set[Path]:
    """The arena cgroup folders (every hierarchy) that process `pid` is in."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "/arena-" not in path:
            continue
        for mount in [CGROUP_FS, CGROUP_FS / "unified"] if controllers == "" else [CGROUP_FS / controllers]:
            if (mount / path.lstrip("/")).is_dir():
                found.add(mount / path.lstrip("/"))
    return found


def frozen(folder: Path) -> bool:
    """Whether the cgroup at `folder` is frozen (v1 freezer.state, v2 cgroup.freeze)."""
    for name, value in (("freezer.state", "FROZEN"), ("cgroup.freeze", "1")):
        try:
            if (folder / name).read_text().strip() == value:
                return True
        except OSError:
            pass
    return False


def can_freeze() -> bool:
    warden = Warden(Confinement())
    try:
        return warden.can_freeze
    finally:
        warden.close()


def hang_up(command: list[str], cwd: Path, bots: Path, as_user: bool = False) -> set[Path]:
    """Run `command` from a shell on a new pseudo-terminal (as an ordinary user with `as_user`), and close
    the terminal once a bot of `bots` is frozen (where arena can freeze bots; else once two bots run).
    Returns the arena cgroups its bots were seen in."""
    shell = ["/bin/sh", "-c", f"{shlex.join(command)}; true"]  # '; true': the shell waits, as a terminal's
    if as_user:
        shell = as_nobody(shell, [Path(sys.prefix), Path(sys.base_prefix), ROOT])
    pid, terminal = pty.fork()
    if pid == 0:  # the child leads the terminal's session, as a terminal window's shell does
        try:
            os.chdir(cwd)
            os.execvp(shell[0], shell)
        finally:
            os._exit(127)
    seen: set[Path] = set()
    shown = b""
    want_frozen = can_freeze() and not as_user  # an ordinary user's arena makes no cgroups
    deadline = time.monotonic() + 60
    next_scan, bot_pids = 0.0, []
    try:
        while True:
            assert time.monotonic() < deadline, (
                f"no bot was frozen within 60 s; the terminal showed {shown!r}"
            )
            if select.select([terminal], [], [], 0.005)[0]:  # read what it shows: a full terminal blocks it
                try:
                    shown += os.read(terminal, 65536)
                except OSError:  # the session ended
                    pytest.fail(f"{command[2:4]} ended by itself; the terminal showed {shown!r}")
            if time.monotonic() >= next_scan:  # reading all of /proc is slow on a busy machine: now and
                bot_pids = processes_mentioning(str(bots))  # then, while the bots' cgroups are read each turn
                for bot in bot_pids:
                    seen |= cgroups_of(bot)
                next_scan = time.monotonic() + 0.1
            if any(frozen(folder) for folder in seen) if want_frozen else len(bot_pids) >= 2:
                break
    finally:
        os.close(terminal)  # the teacher closes the window
        os.waitpid(pid, 0)
    return seen


def assert_nothing_left(bots: Path, folders: set[Path]) -> None:
    left = left_after(str(bots), 15)
    assert left == [], describe(left)
    deadline = time.monotonic() + 5
    while (still := sorted(f for f in folders if f.exists())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert still == [], [f"{f}: frozen {frozen(f)}" for f in still]


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A folder with four slow bots, usable by root and by an ordinary user (tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="arena-hangup-", dir="/tmp"))
    folder.chmod(0o777)
    bots = folder / "bots"
    bots.mkdir(mode=0o777)
    for name in ("ann", "bob", "cat", "dan"):
        (bots / f"{name}.py").write_text(SLOW)
    try:
        yield folder
    finally:
        for pid in processes_mentioning(str(folder)):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


ARENA = [sys.executable, "-m", "arena"]
RUN = ["run", "--bots", "bots", "--rounds", "50", "--jobs", "2", "--move-time", "2000"]


@pytest.mark.slow
@pytest.mark.parametrize("leader", ["shell", "arena"])
def test_closing_the_terminal_during_a_run_leaves_no_bot_behind(workdir: Path, leader: str) -> None:
    """The shell leads (a terminal window), or arena itself does (`exec arena run`: only arena gets the
    SIGHUP, then its workers get theirs when it ends)."""
    command = [*ARENA, *RUN, "--out", str(workdir / "reports")]
    if leader == "arena":
        command = ["sh", "-c", f"exec {shlex.join(command)}"]
    folders = hang_up(command, workdir, workdir / "bots")
    assert_nothing_left(workdir / "bots", folders)
    # the games finished before the hang-up are kept, and the store is whole
    check = subprocess.run(
        [*ARENA, "export", "--out", str(workdir / "reports")], cwd=workdir, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_closing_the_terminal_during_a_run_of_an_ordinary_user_leaves_no_bot_behind(workdir: Path) -> None:
    """Without cgroups a paused bot is stopped by SIGSTOP; a worker whose SIGHUP came while it forked a bot
    (Python drops the exception of a handler run in an at-fork callback) must still end them."""
    if os.geteuid() != 0:
        pytest.skip("run as root: the test runs arena as an ordinary user by dropping root's privileges")
    if sandbox_problem() is not None:
        pytest.skip(f"the ordinary user's arena runs in a bubblewrap namespace: {sandbox_problem()}")
    command = [*ARENA, *RUN, "--out", str(workdir / "reports")]
    folders = hang_up(command, workdir, workdir / "bots", as_user=True)
    assert_nothing_left(workdir / "bots", folders)


def test_closing_the_terminal_during_play_leaves_no_bot_behind(workdir: Path) -> None:
    command = [*ARENA, "play", "ann", "bob", "--bots", "bots", "--games", "100", "--move-time", "2000"]
    folders = hang_up(command, workdir, workdir / "bots")
    assert_nothing_left(workdir / "bots", folders)


@pytest.mark.slow
def test_closing_the_terminal_during_check_leaves_no_bot_behind(workdir: Path) -> None:
    # three short games: make them last (at 0.3 s a move the check ended before a loaded machine's test saw a
    # frozen bot; the test stops waiting at the first one it sees, so a slower bot costs it nothing)
    slower = SLOW.replace("time.sleep(0.05)", "time.sleep(1.0)")
    (workdir / "bots" / "ann.py").write_text(slower)
    command = [*ARENA, "check", "ann", "--bots", "bots", "--move-time", "3000"]
    folders = hang_up(command, workdir, workdir / "bots")
    assert_nothing_left(workdir / "bots", folders)


HOLDER = """\
import subprocess, sys, time
from pathlib import Path
from arena.sandbox import Confinement, Warden, sandbox_problem
warden = Warden(Confinement())
jail = warden.jail(Path({bot!r}))
bot = subprocess.Popen([sys.executable, {bot!r}], stdin=subprocess.PIPE, preexec_fn=jail.preexec,
                       start_new_session=True)
assert jail.freeze(True)
print(bot.pid, flush=True)
time.sleep(600)
"""


def test_frozen_bots_of_a_killed_arena_are_ended_by_the_next_one(tmp_path: Path) -> None:
    """kill -9 runs no clean-up: the bot stays frozen, and its cgroups stay, until the next arena starts."""
    if not can_freeze():
        pytest.skip("no cgroup freezer here: a bot is paused by signals, and dies with its sandbox")
    bot = tmp_path / "frozen_bot.py"
    bot.write_text(SLOW)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER.format(bot=str(bot)))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        folders = cgroups_of(pid)
        deadline = time.monotonic() + 10  # FREEZING until every task has stopped
        while not any(frozen(f) for f in folders):
            assert time.monotonic() < deadline, folders
            time.sleep(0.01)
        holder.kill()
        holder.wait()
        time.sleep(0.5)
        # frozen, with the kill -9 of its arena (asked of its cgroups: another arena on the machine may have
        # swept the dead one's copy of the bot, by which processes_mentioning finds it); or already ended,
        # with its folders, by an arena that another test started meanwhile (the suite runs in parallel). A
        # sweep in between (thawed, killed, its folders not yet removed: seconds on a loaded machine) is
        # waited for; a bot that is neither frozen nor swept for a minute is the failure this looks for.
        deadline = time.monotonic() + 60
        while True:
            swept = not is_running(pid) and not any(f.exists() for f in folders)
            held = is_running(pid) and any(frozen(f) for f in folders)
            if swept or held or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert swept or held, (proc_state(pid), {f: (f.exists(), frozen(f)) for f in folders})
        Warden(
            Confinement()
        ).close()  # the next arena: every hierarchy's folders go, the freezer's thawed first
        assert_nothing_left(tmp_path, folders)
    finally:
        holder.kill()
        for left in processes_mentioning(str(bot)):
            os.kill(left, signal.SIGKILL)
