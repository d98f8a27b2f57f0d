"""The red team: bots that play legal moves while they attack, in a real `arena run` with default settings.

Each attack of issue 11's table is tried by a bot; the test asserts from what the bot logged (its stderr
tail, kept in the game record) that the attack failed, and on the host that nothing changed: the store, the
report template, the opponents' results, the host's files and sockets. Run as root (as CI and many lab
machines run arena); where this machine cannot offer a protection, the test skips and says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL_C
from procs import processes_mentioning

from arena.report import page
from arena.sandbox import bwrap, sandbox_problem
from arena.sandbox.command import counts_processes_per_namespace

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(page.__file__).parent / "templates" / "report.html"

PRELUDE = """import os, subprocess, sys, time
def log(*words):
    print(*words, file=sys.stderr, flush=True)
def attempt(what, action):
    try:
        result = action()
        log(f"ALLOWED {what}: {result!r}"[:300])
    except Exception as e:
        log(f"DENIED {what}: {type(e).__name__}: {e}"[:300])
def run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    if done.returncode:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[:120]}")
    return done.stdout.strip()[:120]
def first_legal(words):
    board = [int(w) for w in words[2:]]
    return next(p for p in range(1, len(board) // 2) if board[p - 1])
"""
LOOP = """
moves = 0
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        if moves == 0:
            attack()
        moves += 1
        print(first_legal(words), flush=True)
    elif words and words[0] == "QUIT":
        break
"""

ESCAPE = """
def attack():
    attempt("remount", lambda: run("mount", "-o", "remount,rw", "/"))
    attempt("unmount", lambda: run("umount", "-l", "/usr"))
    attempt("cgroup mount", lambda: run("mount", "-t", "cgroup", "-o", "memory", "none", "/tmp"))
    attempt("read store", lambda: open({store!r}, "rb").read(16))
    attempt("write template", lambda: open({template!r}, "a").write("<!-- pwned -->"))
    attempt("read opponent", lambda: open({opponent!r}).read(40))
    attempt("list bots", lambda: os.listdir({bots!r}))  # not there: its own file is at /bot
    attempt("list own", lambda: os.listdir(".") == ["escape.py"] or 1 / 0)  # itself alone
    attempt("read shadow", lambda: open("/etc/shadow").read(20))
    attempt("list root", lambda: set(os.listdir("/root")) - {{{python_home!r}}} or 1 / 0)  # only Python
    attempt("list home", lambda: os.listdir("/home"))
    attempt("cgroupfs", lambda: os.listdir("/sys/fs/cgroup"))
    attempt("unix socket", lambda: __import__("socket").socket(1).connect({sock!r}))
    attempt("token env", lambda: os.environ["REDTEAM_TOKEN"])
    attempt("pid1 cmdline", lambda: {reports!r} in open("/proc/1/cmdline").read() or 1 / 0)
    log("PATH", os.environ.get("PATH"), "UID", os.getuid(), "EUID", os.geteuid())
    log("ARENA_REDTEAM", os.environ.get("ARENA_REDTEAM"))
    log("CAPS", [l for l in open("/proc/self/status").read().splitlines() if l.startswith("CapEff")])
"""

# Fills /tmp and /dev/shm from a child: without cgroups they used to grow past the memory limit. Now both are
# bounded by it, and their pages count against the bot's memory: the bot forfeits for memory, nothing more.
FILLER = """
def attack():
    def fill(folder):
        written = 0
        try:
            with open(os.path.join(folder, "fill"), "wb") as f:
                for _ in range(600):
                    f.write(b"x" * (1 << 20))
                    f.flush()
                    written += 1
        except OSError:
            pass
        os.unlink(os.path.join(folder, "fill"))
        return written
    for folder in ("/tmp", "/dev/shm"):
        child = os.fork()
        if child == 0:
            attempt(f"fill {folder} MiB", lambda: fill(folder))
            os._exit(0)
        log(f"FILLER child for {folder}: status", os.waitpid(child, 0)[1])
"""

# A child in a session of its own, busy on the CPU and waking its parent with SIGCONT: when pausing was a
# SIGSTOP to the bot's process group, this stole the opponent's time. Started before the first MOVE, while
# the bot is still new (a process starting up used to be left running during the opponent's first move).
HOG_SETUP = """
for _ in range(11):
    if os.fork() == 0:
        os.setsid()
        parent = os.getppid()
        while True:
            for _ in range(100000):
                pass
            with __import__("contextlib").suppress(OSError):
                os.kill(parent, 18)  # SIGCONT
def attack():
    log("HOG", os.getuid())
"""

# Needs `CPU_MS` of CPU time a move: on a core shared with eleven busy children it would need twelve times
# that.
VICTIM = """import os, sys, time
def first_legal(words):
    board = [int(w) for w in words[2:]]
    return next(p for p in range(1, len(board) // 2) if board[p - 1])
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        start, wall = time.process_time(), time.monotonic()
        while time.process_time() - start < {cpu_ms} / 1000:
            pass
        ms = round((time.monotonic() - wall) * 1000)
        print("VICTIM uid", os.getuid(), "wall ms", ms, file=sys.stderr, flush=True)
        print(first_legal(words), flush=True)
    elif words and words[0] == "QUIT":
        break
"""
CPU_MS = 100
# Ample for the victim alone (100 ms; up to 400 ms beside a busy suite on the same core), far from enough
# beside eleven busy children (~1200 ms on an idle machine, more on a busy one)
MOVE_MS = 800
USER_MOVE_MS = 2000  # as a user there is no hog to pause: only a loaded machine's margin counts


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def listening(path: Path) -> Iterator[list[int]]:
    """A unix socket of the host's; yields the count of connections it accepted."""
    accepted = [0]
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.05)
    try:
        yield accepted
    finally:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                accepted[0] += 1
                conn.close()
        server.close()
        path.unlink(missing_ok=True)


def tail(games: list[dict], bot: str) -> str:
    return "\n".join(g["stderr"].get(bot, "") for g in games)


NOBODY = 65534


def as_nobody(argv: list[str], keep: list[Path]) -> list[str]:
    """`argv` run by uid 65534, as an ordinary user runs arena: in a mount namespace where /root (which root
    keeps to itself, and where this machine may keep its Python) shows only the folders in `keep` below it."""
    wrap = [bwrap.find().path or "bwrap", "--dev-bind", "/", "/", "--perms", "0755", "--tmpfs", "/root"]
    tops = {
        Path("/root", path.relative_to("/root").parts[0]) for path in keep if path.is_relative_to("/root")
    }
    for top in sorted(tops):  # whole, so that no folder between is made with a mode of bubblewrap's choice
        wrap += ["--ro-bind", str(top), str(top)]
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all"]
    return [*wrap, "--", *drop, "--bounding-set=-all", "--", *argv]


@pytest.fixture(params=["root", "user"])
def mode(request: pytest.FixtureRequest) -> str:
    if os.geteuid() != 0:
        pytest.skip("run as root: the test runs arena as root and, dropping privileges, as an ordinary user")
    if sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {sandbox_problem()}")
    return str(request.param)


@pytest.fixture
def workdir(mode: str) -> Iterator[Path]:
    """A folder both root and the ordinary user can use (pytest's own tmp folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="arena-redteam-", dir="/tmp"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_a_tournament_of_attackers_changes_nothing(mode: str, workdir: Path) -> None:
    """As root, every attack fails. As an ordinary user without cgroups (none can be made), every attack on
    files, privileges, the network and the environment fails; what such a host cannot give (pausing a child
    that left its session, per-bot memory and process limits) arena says on the terminal and the page."""
    root = mode == "root"
    marker = uuid.uuid4().hex[:8]
    bots, out = workdir / "bots", workdir / "reports"
    bots.mkdir()
    store = out / "default" / "arena.sqlite"
    sock = Path(f"/var/tmp/arena-redteam-{marker}.sock")
    (bots / "victim.py").write_text(VICTIM.format(cpu_ms=CPU_MS), encoding="utf-8")
    escape = ESCAPE.format(
        store=str(store),
        template=str(TEMPLATE),
        opponent=str(bots / "victim.py"),
        bots=str(bots),
        sock=str(sock),
        reports=str(out),
        python_home=Path(sys.base_prefix).relative_to("/root").parts[0]
        if sys.base_prefix.startswith("/root/")
        else "",
    )
    (bots / "escape.py").write_text(PRELUDE + escape + LOOP, encoding="utf-8")
    (bots / "filler.py").write_text(PRELUDE + FILLER + LOOP, encoding="utf-8")
    if root:  # without cgroups nothing pauses a child that left its session: said, not tested as held
        (bots / "hog.py").write_text(PRELUDE + HOG_SETUP + LOOP, encoding="utf-8")
    for path in bots.iterdir():
        path.chmod(0o644)
    template_before = digest(TEMPLATE)
    env = {**os.environ, "REDTEAM_TOKEN": "hunter2", "ARENA_REDTEAM": "passed on"}
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(out), "--rounds", "1"]
    argv += ["--rules", "kalah,pits=4,seeds=3", "--move-time", str(MOVE_MS if root else USER_MOVE_MS)]
    argv += ["--memory", "256", "--jobs", "1"]
    if not root:
        keep = [Path(sys.base_prefix), Path(sys.prefix), Path(page.__file__).parents[2]]
        argv = as_nobody(argv, keep)
    with listening(sock) as accepted:
        # One core for everything: the hog's children would take eleven twelfths of the victim's time.
        done = subprocess.run(
            ["taskset", "-c", "0", *argv], capture_output=True, text=True, env=env, timeout=300
        )
    assert done.returncode == 0, done.stderr
    page_text = (out / "default" / "index.html").read_text(encoding="utf-8")
    if root:
        assert "warning" not in done.stderr, done.stderr  # nothing this machine could not enforce
    else:  # what an ordinary user's host cannot give is said plainly, in the terminal and on the page
        said = ["no cgroups available", "not paused"]
        if not counts_processes_per_namespace():  # else the sandbox's user namespace holds them (5.14 on)
            said.append("processes are not bounded per bot")
        for words in said:
            assert words in done.stderr and words in page_text, (words, done.stderr)

    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone() == (0,)
    export = [sys.executable, "-m", "arena", "export", "--out", str(out)]
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    games = [json.loads(line) for line in lines]
    assert len(games) == (12 if root else 6)
    assert digest(TEMPLATE) == template_before
    assert accepted == [0]

    # Every game ended by the rules: no attack cost the victim (or anyone) a game. The filler's /tmp and
    # /dev/shm are bounded by shares of its memory limit (a half and a quarter; with cgroups they count
    # against the limit too): it may only lose for memory, and never wrote more than those shares.
    for g in games:
        if g["faulty"] == "filler":
            assert g["reason"] in ("crash", "benched") and "memory limit of 256 MiB" in g["detail"], g
        else:
            assert (g["reason"], g["faulty"]) in {("normal", None), ("early", None)}, g
    filled = tail(games, "filler")
    for folder, share in (("/tmp", 128), ("/dev/shm", 64)):
        for written in filled.split(f"ALLOWED fill {folder} MiB: ")[1:]:
            assert int(written.split()[0]) <= share, filled
    assert "FILLER child for /tmp" in filled, filled

    log = tail(games, "escape")
    for what in (
        "remount", "unmount", "cgroup mount", "read store", "write template", "read opponent", "read shadow",
        "list home", "cgroupfs", "unix socket", "token env", "pid1 cmdline",
    ):  # fmt: skip
        assert f"DENIED {what}:" in log, (what, log)
    # Of the bots folder it sees itself alone, at /bot; of /root, at most the folder of arena's Python
    # (which lives there on some machines and which bots run on), nothing of root's own.
    assert "DENIED list bots: FileNotFoundError" in log and "ALLOWED list own: True" in log, log
    assert "DENIED list root: ZeroDivisionError" in log, log
    assert "PATH /usr/local/bin:/usr/bin:/bin" in log and "ARENA_REDTEAM None" in log, log  # not documented
    assert "CapEff:\\t0000000000000000" in log, log
    uid = int(log.split("UID ", 1)[1].split()[0])
    victim = tail(games, "victim")
    uids = {int(v.split()[0]) for v in victim.split("VICTIM uid ")[1:]}
    if not root:
        assert uid == NOBODY and uids == {NOBODY}  # an ordinary user's bots are that user, no more
        return
    assert uid >= 1_000_000_000, log  # an unprivileged uid of its own, not root
    assert uid not in uids and min(uids) >= 1_000_000_000  # and not the victim's
    hog_uid = int(tail(games, "hog").split("HOG ", 1)[1].split()[0])
    assert hog_uid not in uids | {uid}

    # Pausing held: the hog's children (own sessions, started before its first move) were frozen while the
    # victim thought and between the hog's games: the victim, which would need some 1200 ms beside them, lost
    # no game on its 800 ms clock (checked above with every game's result).
    walls = [int(w) for w in victim.split("wall ms ")[1:] for w in [w.split()[0]]]
    assert walls and max(walls) < MOVE_MS, victim
    time.sleep(0.2)
    leftover = processes_mentioning(str(bots))
    assert leftover == [], leftover  # the hog's setsid children ended with their bot


HOSTILE_BUILD = """#!/bin/bash
id -u > uid.txt
echo pwned > {victim} 2>/dev/null  # the sandbox's own copy of the path, if any: never the host's
{python} -c "import socket; socket.socket(socket.AF_UNIX).connect('{sock}')" 2>/dev/null
(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo yes > net.txt || echo no > net.txt
exec cc -O2 -o bot bot.c
"""


def test_a_hostile_build_changes_nothing_outside_its_folder(mode: str, workdir: Path) -> None:
    """A bot's build is its author's code running, as root's arena and as an ordinary user's: it cannot
    write a file its user could write outside the sandbox, nor reach the host's network or sockets, and as
    root it runs as a uid of its own. The bot then plays what it built."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    root = mode == "root"
    bots = workdir / "bots"
    folder = bots / "builder"
    folder.mkdir(parents=True)
    victim = workdir / "victim.txt"
    victim.write_text("untouched\n")
    victim.chmod(0o666)  # writable by anyone: only the sandbox keeps the build from it
    sock = Path(f"/var/tmp/arena-redteam-build-{uuid.uuid4().hex[:8]}.sock")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    (folder / "bot.c").write_text(FIRST_LEGAL_C)
    hostile = HOSTILE_BUILD.format(victim=victim, sock=sock, port=port, python=sys.executable)
    (folder / "build.sh").write_text(hostile)
    (folder / "build.sh").chmod(0o755)
    (folder / "bot.toml").write_text('build = "./build.sh"\ncommand = "./bot"\n')
    shutil.copy(ROOT / "bots" / "random.py", bots / "random.py")
    for path in (bots, folder, *folder.iterdir(), bots / "random.py"):
        os.chown(path, NOBODY if not root else 0, NOBODY if not root else 0)  # the student's own files
    argv = [sys.executable, "-m", "arena", "play", "builder", "random", "--bots", str(bots)]
    argv += ["--rules", "kalah,pits=4,seeds=3", "--games", "2", "--move-time", "500"]
    if not root:
        argv = as_nobody(argv, [Path(sys.base_prefix), Path(sys.prefix), Path(page.__file__).parents[2]])
    try:
        with listening(sock) as accepted:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=workdir)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert "forfeits" not in done.stdout and "after 2 games" in done.stdout, done.stdout
    assert victim.read_text() == "untouched\n"
    assert (folder / "net.txt").read_text() == "no\n" and accepted == [0]
    uid = int((folder / "uid.txt").read_text())
    assert uid >= 1_000_000_000 if root else uid == NOBODY
    assert (folder / "bot").is_file() and (folder / "bot").stat().st_mode & 0o6000 == 0
