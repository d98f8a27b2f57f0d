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
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.match.confine import sandbox_problem
from arena.report import page

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
    attempt("list bots", lambda: os.listdir({bots!r}) == ["escape.py"] or 1 / 0)  # itself alone
    attempt("read shadow", lambda: open("/etc/shadow").read(20))
    attempt("list root", lambda: set(os.listdir("/root")) - {{{python_home!r}}} or 1 / 0)  # only Python
    attempt("list home", lambda: os.listdir("/home"))
    attempt("cgroupfs", lambda: os.listdir("/sys/fs/cgroup"))
    attempt("unix socket", lambda: __import__("socket").socket(1).connect({sock!r}))
    attempt("secret env", lambda: os.environ["ARENA_REDTEAM_SECRET_NOT_ARENA"])
    attempt("token env", lambda: os.environ["REDTEAM_TOKEN"])
    attempt("pid1 cmdline", lambda: {reports!r} in open("/proc/1/cmdline").read() or 1 / 0)
    log("PATH", os.environ.get("PATH"), "UID", os.getuid(), "EUID", os.geteuid())
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
for _ in range(3):
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

# Needs `CPU_MS` of CPU time a move: on a core shared with three busy children it would need four times that.
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
CPU_MS = 120
MOVE_MS = 300  # enough for the victim alone (120 ms), far from enough beside three busy children (~480 ms)


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


@pytest.mark.skipif(os.geteuid() != 0, reason="this run is the root one (CI, Docker, lab machines)")
@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
def test_a_tournament_of_attackers_run_as_root_changes_nothing(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex[:8]
    bots, out = tmp_path / "bots", tmp_path / "reports"
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
    (bots / "hog.py").write_text(PRELUDE + HOG_SETUP + LOOP, encoding="utf-8")
    (bots / "filler.py").write_text(PRELUDE + FILLER + LOOP, encoding="utf-8")
    template_before = digest(TEMPLATE)
    env = {**os.environ, "REDTEAM_TOKEN": "hunter2", "ARENA_REDTEAM_SECRET_NOT_ARENA": "x"}
    env.pop("ARENA_REDTEAM_SECRET_NOT_ARENA")  # only the ARENA_ variables arena itself has reach bots
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(out), "--rounds", "1"]
    argv += ["--rules", "kalah,pits=4,seeds=3", "--move-time", str(MOVE_MS), "--memory", "256", "--jobs", "1"]
    with listening(sock) as accepted:
        # One core for everything: the hog's children would take three quarters of the victim's time.
        done = subprocess.run(
            ["taskset", "-c", "0", *argv], capture_output=True, text=True, env=env, timeout=300
        )
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr, done.stderr  # nothing this machine could not enforce

    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone() == (0,)
    export = [sys.executable, "-m", "arena", "export", "--out", str(out)]
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    games = [json.loads(line) for line in lines]
    assert len(games) == 12
    assert digest(TEMPLATE) == template_before
    assert accepted == [0]

    # Every game ended by the rules, but the filler's: no attack cost the victim (or anyone else) a game,
    # and the filler lost for memory (its /tmp and /dev/shm are bounded by, and count against, its limit).
    for g in games:
        if g["faulty"] == "filler":
            assert g["reason"] in ("crash", "benched") and "memory limit of 256 MiB" in g["detail"], g
        else:
            assert (g["reason"], g["faulty"]) in {("normal", None), ("early", None)}, g
    assert any(g["faulty"] == "filler" for g in games)

    log = tail(games, "escape")
    for what in (
        "remount", "unmount", "cgroup mount", "read store", "write template", "read opponent", "read shadow",
        "list home", "cgroupfs", "unix socket", "secret env", "token env", "pid1 cmdline",
    ):  # fmt: skip
        assert f"DENIED {what}:" in log, (what, log)
    # Of the bots folder it sees itself alone; of /root, at most the folder of arena's Python (which lives
    # there on some machines and which bots run on), nothing of root's own.
    assert "ALLOWED list bots: True" in log and "DENIED list root: ZeroDivisionError" in log, log
    assert "PATH /usr/local/bin:/usr/bin:/bin" in log
    uid = int(log.split("UID ", 1)[1].split()[0])
    assert uid >= 1_000_000_000, log  # an unprivileged uid of its own, not root
    assert "CapEff:\\t0000000000000000" in log, log

    # Pausing held: the hog's children (own sessions, started before its first move) were frozen while the
    # victim thought, so the victim never needed much more than its CPU time.
    victim = tail(games, "victim")
    walls = [int(w) for w in victim.split("wall ms ")[1:] for w in [w.split()[0]]]
    assert walls and max(walls) < 2 * CPU_MS + 60, victim
    uids = {int(v.split()[0]) for v in victim.split("VICTIM uid ")[1:]}
    assert uid not in uids and min(uids) >= 1_000_000_000  # a different uid from the attacker's
    hog_uid = int(tail(games, "hog").split("HOG ", 1)[1].split()[0])
    assert hog_uid not in uids | {uid}
    time.sleep(0.2)
    leftover = subprocess.run(["pgrep", "-f", str(bots)], capture_output=True, text=True).stdout.split()
    assert leftover == [], leftover  # the hog's setsid children ended with their bot
