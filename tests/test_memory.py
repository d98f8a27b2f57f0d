"""Memory as bots' runtimes see it, and as the referee charges it.

A JVM (and node) sizes its heap from the bot's own limit, in the sandbox and out, as root and as a user; a
Java agent holding a realistic table plays whole games under arena's defaults; a bot that runs out of memory
is charged with it (a crash naming the limit), whatever it wrote on the way out: a JVM's memory report on
stdout (read as its move), or a Python search thread's MemoryError followed by a hang (seen as a timeout).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Jailer, RlimitsOnly
from test_confine import need_cgroups, need_sandbox
from test_mankalah import heard, java_agent, java_missing, py_agent, replays, transcript

from arena.game.rules import MANKALAH, Kalah
from arena.match.bots import BotError, load_bot
from arena.match.clock import TimeControl
from arena.match.process import BotProcess
from arena.match.referee import Limits, play_game
from arena.sandbox import DEFAULT_MEMORY_MB, Confinement, Jail, Warden, capabilities
from arena.tournament.settings import MANKALAH_BANK_MS, resolve

ROOT = os.geteuid() == 0


def need_java() -> None:
    if why := java_missing():
        pytest.skip(why)


# --- what a runtime sees ----------------------------------------------------------------------------------

MAX_HEAP = """\
public class MaxHeap {
    public static void main(String[] args) {
        System.out.println(Runtime.getRuntime().maxMemory() >> 20);
    }
}
"""
NODE_HEAP = "console.log(Math.round(require('v8').getHeapStatistics().heap_size_limit / 1048576))"


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """A folder any user may read (a bot's own uid runs from it), holding MaxHeap.class."""
    folder = Path(tempfile.mkdtemp(prefix="arena-heap-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        if shutil.which("javac"):
            (folder / "MaxHeap.java").write_text(MAX_HEAP)
            subprocess.run(["javac", "MaxHeap.java"], cwd=folder, check=True, timeout=120)
            (folder / "MaxHeap.class").chmod(0o644)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def heap_seen(jail: Jail, argv: list[str], folder: Path) -> int:
    proc = BotProcess.start(argv, cwd=folder, jail=jail)
    try:
        line = proc.read_line(time.monotonic() + 30)
        assert line is not None and line.isdigit(), (line, proc.stderr_tail())
        return int(line)
    finally:
        proc.kill()


WHO = ["sandbox", "no sandbox", "no sandbox, own uid"]


@pytest.mark.parametrize("memory_mb", [512, DEFAULT_MEMORY_MB])
@pytest.mark.parametrize("who", WHO)
def test_runtimes_size_their_heap_from_the_bot_limit(shared: Path, who: str, memory_mb: int) -> None:
    """The clean environment's JAVA_TOOL_OPTIONS (-XX:MaxRAM=<limit>m, 75 %) and NODE_OPTIONS tell the JVM
    and node the bot's limit wherever it runs: in the sandbox (no cgroup visible there) as the bot's own
    uid, out of it as root or as the bot's own uid. Without them a JVM takes a quarter of the host's RAM."""
    need_java()
    if who == "sandbox":
        need_sandbox()
        conf, _ = capabilities(Confinement(memory_mb), want_sandbox=True)
    elif who == "no sandbox":
        conf = Confinement(memory_mb)
    else:
        if not ROOT or not shutil.which("setpriv"):
            pytest.skip("the bot's own uid needs arena to run as root")
        conf = Confinement(memory_mb, drop_root=True)
    warden = Warden(conf)
    try:
        java = heap_seen(warden.jail(shared), ["java", "-cp", ".", "MaxHeap"], shared)
        assert 0.6 * memory_mb <= java <= 0.75 * memory_mb, (who, memory_mb, java)
        if shutil.which("node"):
            node = heap_seen(warden.jail(shared), ["node", "-e", NODE_HEAP], shared)
            assert 0.6 * memory_mb <= node <= memory_mb, (who, memory_mb, node)
    finally:
        warden.close()


def test_a_bots_own_allowance_is_what_its_runtime_sees(shared: Path) -> None:
    need_java()
    warden = Warden(Confinement())
    try:
        jail = warden.jail(shared, memory_mb=2048)
        assert jail.environment()["ARENA_MEMORY_MB"] == "2048"
        assert 1228 <= heap_seen(jail, ["java", "-cp", ".", "MaxHeap"], shared) <= 1536
    finally:
        warden.close()


# --- course agents under the defaults ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_java_agent_holding_a_large_heap_plays_under_the_defaults(tmp_path: Path, jailer: Jailer) -> None:
    """900 MiB of live objects (a search's table; a course JVM agent peaks at 1.08 GB), sandbox on, arena's
    default memory and Manchester clock: whole games, both sides. (Under the old default of 1 GiB its heap,
    768 MiB, could not hold them: a memory fault.)"""
    need_java()
    need_sandbox()
    settings = resolve(None, {"rules": "mankalah"})
    assert (settings.clock.bank_ms, settings.memory_mb) == (MANKALAH_BANK_MS, DEFAULT_MEMORY_MB)
    conf, caps = capabilities(settings.confinement(), settings.sandbox)
    assert caps.sandbox
    warden = jailer.warden(conf)
    holder = jailer.player(java_agent(tmp_path, "holder", "first 900"), warden)
    other = jailer.player(py_agent(tmp_path, "other"), warden)
    for south, north in ((holder, other), (other, holder)):
        record = play_game(MANKALAH, south, north, settings.limits())
        assert (record.reason, record.faulty) == ("normal", None), record
        replays(record)
        assert heard(record, "holder") == transcript(record, "holder")
        log = record.stderr["holder"]
        assert "holds MiB 900" in log, log
        heap = int(log.split("max heap MiB ")[1].split()[0])
        assert 0.6 * DEFAULT_MEMORY_MB <= heap <= 0.75 * DEFAULT_MEMORY_MB, log


# --- running out of memory is charged as such -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("java", "memory_mb", "seen", "said"),
    [
        ("java", 512, "(seen as crash: exited with code 1", "java.lang.OutOfMemoryError"),
        (
            "java -Xmx1g",
            256,
            "(seen as garbled: answered what is not a move",
            "insufficient memory for the Java Runtime",
        ),
    ],
    ids=["sized-by-arena", "own-Xmx-above-limit"],
)
def test_a_java_agent_over_its_limit_is_charged_with_memory(
    tmp_path: Path, jailer: Jailer, java: str, memory_mb: int, seen: str, said: str
) -> None:
    """An agent given its own limit in its bot.toml allocates without end on its second turn. Sized by
    arena, its JVM throws OutOfMemoryError and exits; with its own -Xmx above the limit the JVM itself
    cannot get memory and prints its report on stdout, whose first line ("#") is read as the agent's move.
    Either way the record says memory, naming the bot's own limit, and what the JVM said."""
    need_java()
    need_sandbox()
    conf, _ = capabilities(Confinement(), want_sandbox=True)
    warden = jailer.warden(conf)
    toml = f"memory = {memory_mb}\n"
    hog = jailer.player(java_agent(tmp_path, "hog", "hog", toml=toml, java=java), warden)
    other = jailer.player(py_agent(tmp_path, "other"), warden)
    record = play_game(MANKALAH, hog, other, Limits(TimeControl(move_ms=20_000, startup_ms=10_000)))
    assert (record.reason, record.faulty, record.winner) == ("crash", "hog", "other"), record
    assert record.detail.startswith("out of memory: "), record.detail
    for words in (f"memory limit of {memory_mb} MiB (its bot.toml's memory)", seen, said):
        assert words in record.told(), record.told()
    assert record.moves_made["hog"] == 1, record


THREAD_DIES = """
import threading


def search(table):
    while True:
        table.append(bytearray(16 << 20))


def answer(board, moves):
    if moves >= 2:
        found = threading.Event()  # never set: the search thread dies of MemoryError, the bot waits on
        threading.Thread(target=search, args=([],), name="search").start()
        found.wait()
    say(str(first_legal(board)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("cgroups", [False, True], ids=["rlimit-only", "warden"])
def test_a_search_thread_dying_of_memory_then_a_hang_is_memory_not_timeout(
    bots, jailer: Jailer, cgroups: bool
) -> None:
    """Python prints the thread's MemoryError on stderr and the bot hangs waiting for its result: the
    clock runs out, but the record says memory."""
    if cgroups:
        need_cgroups()
    conf = Confinement(memory_mb=256)
    warden = jailer.warden(conf) if cgroups else RlimitsOnly(conf)
    hangs = jailer.player(bots.make("hangs", THREAD_DIES), warden)
    good = jailer.player(bots.make("good"), warden)
    record = play_game(Kalah(), hangs, good, Limits(TimeControl(move_ms=1500, startup_ms=5000)))
    assert (record.reason, record.faulty) == ("crash", "hangs"), record
    assert record.detail.startswith("out of memory: it ran out under the memory limit of 256 MiB"), record
    assert "MemoryError" in record.told() and "(seen as timeout: no reply within 1500 ms" in record.detail


def test_bot_toml_memory_is_the_bots_own_allowance(tmp_path: Path) -> None:
    folder = tmp_path / "mybot"
    folder.mkdir()
    (folder / "bot.toml").write_text('command = "python3 bot.py"\nmemory = 2048\n')
    assert load_bot(folder).memory_mb == 2048
    (folder / "bot.toml").write_text('command = "python3 bot.py"\n')
    assert load_bot(folder).memory_mb is None  # the tournament's --memory
    for bad in ('"2048"', "2048.5", "8", "true"):
        (folder / "bot.toml").write_text(f'command = "python3 bot.py"\nmemory = {bad}\n')
        with pytest.raises(BotError, match="'memory' is the bot's memory in MiB"):
            load_bot(folder)
