"""What a bot can fill of memory outside RLIMIT_DATA (issue 28, item 10), in a real `arena run` with the
sandbox: as an ordinary user (no cgroups) a bot wrote 2 GiB to each of `/`, `/bot/..` and `/dev` (tmpfs
without a size) under `--memory 1024`, and held 2 GiB of shared memory (MAP_SHARED, memfd). Now the root
and /dev are read-only, /tmp and /dev/shm have a size, and shared memory outside them is refused where no
cgroup counts it; what still is not counted is said at the start and on the page."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_redteam
from test_mankalah import java_missing
from test_redteam import LOOP, PRELUDE, as_nobody
from test_redteam_sandbox import FIRST, clean, keep, place, tail, tournament
from test_user_limits import MEMORY_MB, attacked

from arena.sandbox.command import counts_processes_per_namespace

mode, workdir = test_redteam.mode, test_redteam.workdir  # its fixtures: root and the ordinary user

WRITER = """
def fill(folder):
    target, chunk, done = 2 * int(os.environ["ARENA_MEMORY_MB"]) << 20, b"x" * (8 << 20), 0
    name = os.path.join(folder, f"fill-{os.getpid()}")
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        return f"0 {e.errno}"
    try:
        while done < target:
            done += os.write(fd, chunk)
    except OSError as e:
        return f"{done >> 20} {e.errno}"
    finally:
        os.close(fd)
        os.unlink(name)
    return f"{done >> 20} 0"
def attack():
    for folder in ("/", "/bot/..", "/dev", "/tmp", "/dev/shm"):
        log("WROTE", folder, fill(folder))
"""

HOLDER = """import ctypes, mmap
def touch(view, size):
    for at in range(0, size, 4096):
        view[at] = 1
def anonymous(size):
    view = mmap.mmap(-1, size)  # MAP_SHARED | MAP_ANONYMOUS
    touch(view, size)
    view.close()
def memfd(size):
    fd, chunk, done = os.memfd_create("hold"), b"x" * (8 << 20), 0
    try:
        while done < size:
            done += os.write(fd, chunk)
    finally:
        os.close(fd)
def sysv(size):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key = libc.shmget(0, ctypes.c_size_t(size), 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if key < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    address = libc.shmat(key, None, 0)
    ctypes.memset(address, 1, size)
    libc.shmdt(ctypes.c_void_p(address))
    libc.shmctl(key, 0, None)  # IPC_RMID
def attack():
    size = 2 * int(os.environ["ARENA_MEMORY_MB"]) << 20
    for how in (anonymous, memfd, sysv):
        try:
            how(size)
            log("HELD", how.__name__, size >> 20)
        except OSError as e:
            log("HELD", how.__name__, 0, e.errno)
"""


def wrote(log: str) -> dict[str, tuple[int, int]]:
    """Each place's MiB written and the errno that stopped it, from the WRITER's lines."""
    found = {}
    for line in log.splitlines():
        if line.startswith("WROTE "):
            _, folder, mib, error = line.split()
            found[folder] = (int(mib), int(error))
    return found


@pytest.mark.slow
def test_a_bot_writes_no_more_than_its_share_anywhere(mode: str, workdir: Path) -> None:
    """Twice the memory limit written to every place a bot might write: the root, /bot's parent and /dev
    refuse it (read-only: EROFS as the user, whose tmpfs it was; root's bot, a uid of its own, never could),
    /tmp takes at most half the limit and /dev/shm a quarter (ENOSPC)."""
    _, games, log = attacked(mode, workdir, "writer", WRITER)
    clean(games)
    found = wrote(log)
    assert set(found) == {"/", "/bot/..", "/dev", "/tmp", "/dev/shm"}, found
    for folder in ("/", "/bot/..", "/dev"):
        assert found[folder][0] == 0, (folder, found)
    assert 0 < found["/tmp"][0] <= MEMORY_MB // 2 and found["/tmp"][1] == 28, found  # ENOSPC
    assert 0 < found["/dev/shm"][0] <= MEMORY_MB // 4 and found["/dev/shm"][1] == 28, found


@pytest.mark.slow
def test_a_users_bot_holds_no_shared_memory_past_its_limit(workdir: Path, mode: str) -> None:
    """As the user (no cgroups: RLIMIT_DATA counts private memory only), a bot holding twice its limit in an
    anonymous shared mapping, a memfd and a SysV segment is refused each (ENOMEM); and the start of the run
    and the page say what is still not counted. As root, the bot's memory cgroup counts shared memory."""
    if mode == "root":
        pytest.skip("root's bots are in a memory cgroup here, which counts shared memory (test_confine)")
    done, games, log = attacked(mode, workdir, "holder", HOLDER)
    clean(games)
    for how in ("anonymous", "memfd", "sysv"):
        assert f"HELD {how} 0 12\n" in log, (how, log)  # ENOMEM
    said = "shared memory is only files in the sandbox's /tmp (half the limit) and /dev/shm (a quarter)"
    assert said in done.stderr, done.stderr
    assert "/dev/zero" in (workdir / "reports" / "default" / "index.html").read_text(encoding="utf-8")


MAX_HEAP = """public class MaxHeap {
    public static void main(String[] args) {
        System.out.println(Runtime.getRuntime().maxMemory() >> 20);
    }
}
"""
NODE_HEAP = "console.log(Math.round(require('v8').getHeapStatistics().heap_size_limit / 1048576))"
# Starts each command (words split by "|") in a sandbox without a cgroup, as a user's arena has none, and
# prints its first line (a JVM's and node's heap limit).
STARTER = """import sys, time
from pathlib import Path
from arena.sandbox import Confinement, Jail, capabilities
from arena.match.process import BotProcess
conf, _ = capabilities(Confinement(memory_mb=512), want_sandbox=True)
assert conf.sandbox, "no sandbox"
folder = Path(sys.argv[1])
for command in sys.argv[2:]:
    jail = Jail(conf, None, folder)
    bot = BotProcess.start(command.split("|"), cwd=folder, jail=jail)
    print(bot.read_line(time.monotonic() + 60), bot.stderr_tail()[-300:].replace(chr(10), " "), flush=True)
    bot.kill()
    jail.release()
"""


@pytest.mark.slow
def test_a_jvm_and_node_start_where_no_cgroup_counts_memory(mode: str, workdir: Path) -> None:
    """The filter for a bot without a cgroup (no memfd, SysV or anonymous shared memory) and the read-only
    root leave the runtimes alone: a JVM and node start in the sandbox and see their share of the limit."""
    if why := java_missing():
        pytest.skip(why)
    (workdir / "MaxHeap.java").write_text(MAX_HEAP, encoding="utf-8")
    subprocess.run(["javac", "MaxHeap.java"], cwd=workdir, check=True, timeout=120)
    (workdir / "starter.py").write_text(STARTER, encoding="utf-8")
    for path in workdir.iterdir():
        path.chmod(0o644)
    commands = ["java|-cp|.|MaxHeap", *([f"node|-e|{NODE_HEAP}"] if shutil.which("node") else [])]
    command = [sys.executable, str(workdir / "starter.py"), str(workdir), *commands]
    if mode == "user":
        command = as_nobody(command, keep())
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=workdir)
    assert done.returncode == 0, done.stderr
    heaps = [line.split()[0] for line in done.stdout.splitlines()]
    assert len(heaps) == len(commands) and all(h.isdigit() for h in heaps), done.stdout
    assert all(0.6 * 512 <= int(h) <= 512 for h in heaps), done.stdout


FORKER = """
def attack():
    children, error = [], 0
    for _ in range(200):
        try:
            child = os.fork()
        except OSError as e:
            error = e.errno
            break
        if child == 0:
            time.sleep(30)
            os._exit(0)
        children.append(child)
    log("FORKED", len(children), error)
    for child in children:
        os.kill(child, 9)
        os.waitpid(child, 0)
"""


@pytest.mark.slow
def test_a_users_bot_is_held_to_its_processes(mode: str, workdir: Path) -> None:
    """As the user (no pids cgroup, no uid of its own), a bot forking 200 children gets --max-procs
    processes in all: RLIMIT_NPROC, set inside the sandbox, counts the processes of its own user namespace
    alone (Linux 5.14 on), so no other process of the user keeps it from starting. As root, a pids cgroup
    holds it (test_confine's fork bomb)."""
    if mode == "root":
        pytest.skip("root's bots are held by a pids cgroup or a uid of their own (test_confine)")
    if not counts_processes_per_namespace():
        pytest.skip("this kernel counts RLIMIT_NPROC per user, not per user namespace (before Linux 5.14)")
    place(workdir / "bots", {"forker": PRELUDE + FORKER + LOOP, "first": FIRST})
    done, games = tournament(mode, workdir, ["--max-procs", "16"])
    assert done.returncode == 0, done.stderr
    clean(games)
    forked = [line.split() for line in tail(games, "forker").splitlines() if line.startswith("FORKED ")]
    assert forked and all(int(n) < 16 and error == "11" for _, n, error in forked), forked  # EAGAIN
    assert "processes are not bounded per bot" not in done.stderr, done.stderr
