"""The red team's attacks on a bot's confinement (issue 24), each in a real `arena run` (or `arena play`),
as root and as an ordinary user (tests/test_redteam.py's `mode`): what a bot's author writes cannot widen
what the bot may read, hold or call; only the teacher's flags can."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import test_redteam
from test_redteam import LOOP, PRELUDE, as_nobody

from arena.match.process import BotProcess, Fault
from arena.report import page
from arena.sandbox import Confinement, Warden, bwrap, capabilities
from arena.sandbox.command import counts_processes_per_namespace

ROOT = Path(__file__).resolve().parent.parent
RULES = "kalah,pits=3,seeds=2"  # short games: the attacks happen at the first MOVE
mode, workdir = test_redteam.mode, test_redteam.workdir  # its fixtures: root and the ordinary user
FIRST = (ROOT / "bots" / "random.py").read_text(encoding="utf-8")


def keep() -> list[Path]:
    """What the ordinary user's arena must see of /root: its Python and this checkout."""
    return [Path(sys.base_prefix), Path(sys.prefix), Path(page.__file__).parents[2]]


def arena(
    mode: str, workdir: Path, argv: list[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m arena ARGV` in `workdir`, as root or (mode 'user') as uid 65534."""
    command = [sys.executable, "-m", "arena", *argv]
    if mode == "user":
        command = as_nobody(command, keep())
    return subprocess.run(
        command, capture_output=True, text=True, env=env or dict(os.environ), timeout=timeout, cwd=workdir
    )


def place(bots: Path, sources: dict[str, str]) -> None:
    """Write each bot (name -> a .py file's text, or a folder's files) readable by every uid."""
    bots.mkdir(exist_ok=True)
    bots.chmod(0o755)
    for name, text in sources.items():
        (bots / f"{name}.py").write_text(text, encoding="utf-8")
        (bots / f"{name}.py").chmod(0o644)


def folder_bot(bots: Path, name: str, source: str, manifest: str = "") -> Path:
    """A folder bot running `source` with arena's Python, its bot.toml `manifest` lines added."""
    folder = bots / name
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(source, encoding="utf-8")
    (folder / "bot.toml").write_text('command = "python3 -P bot.py"\n' + manifest, encoding="utf-8")
    for path in (folder, *folder.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def tournament(
    mode: str,
    workdir: Path,
    flags: Sequence[str] = (),
    env: dict[str, str] | None = None,
    name: str = "default",
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """`arena run` of tournament `name` over workdir/bots, one round, and its stored games (none if it
    failed)."""
    out = workdir / "reports"
    argv = ["run", "--bots", str(workdir / "bots"), "--out", str(out), "--rounds", "1", "--rules", RULES]
    argv += ["--move-time", "2000", "--jobs", "1", "--name", name, *flags]
    done = arena(mode, workdir, argv, env)
    if done.returncode != 0:
        return done, []
    export = [sys.executable, "-m", "arena", "export", "--out", str(out), "--name", name]
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    return done, [json.loads(line) for line in lines]


def tail(games: list[dict], bot: str) -> str:
    return "\n".join(g["stderr"].get(bot, "") for g in games)


def clean(games: list[dict]) -> None:
    """Every game ended by the rules: the attacks cost nobody a game."""
    for g in games:
        assert (g["reason"], g["faulty"]) in {("normal", None), ("early", None)}, g


# --- 8: the caller's ARENA_* variables ------------------------------------------------------------------

ENVIRONMENT = """
def attack():
    log("ENV", sorted(k for k in os.environ if k.startswith("ARENA_")))
    log("TOKEN", os.environ.get("ARENA_TOKEN"))
"""


@pytest.mark.slow
def test_only_documented_variables_reach_a_bot(mode: str, workdir: Path) -> None:
    """A token the teacher keeps in an ARENA_* variable (or arena's own ARENA_CLUSTER) stays with arena; the
    variables protocol.md lists for bots (ARENA_SEED, ARENA_DEPTH, ARENA_MEMORY_MB) reach them."""
    place(workdir / "bots", {"snoop": PRELUDE + ENVIRONMENT + LOOP, "first": FIRST})
    env = {**os.environ, "ARENA_TOKEN": "hunter2", "ARENA_SEED": "7", "ARENA_BOTS": "/srv/secret-bots"}
    done, games = tournament(mode, workdir, env=env)
    assert done.returncode == 0, done.stderr
    clean(games)
    log = tail(games, "snoop")
    assert "ENV ['ARENA_MEMORY_MB', 'ARENA_SEED']" in log and "TOKEN None" in log, log
    protocol = (ROOT / "protocol.md").read_text(encoding="utf-8")
    for name in ("ARENA_MEMORY_MB", "ARENA_SEED", "ARENA_DEPTH"):
        assert f"`{name}`" in protocol


# --- mountinfo: the host's paths -------------------------------------------------------------------------

MOUNTS = """
def attack():
    for line in open("/proc/self/mountinfo").read().splitlines():
        log("MOUNT", line)
    log("CWD", os.getcwd(), "FILE", __file__)
    log("PID1", open("/proc/1/cmdline").read().replace(chr(0), " "))  # bubblewrap's arguments
"""


@pytest.mark.slow
def test_mountinfo_names_no_host_folder_of_the_bot(mode: str, workdir: Path) -> None:
    """A bot's /proc/self/mountinfo listed its own file or folder at its host path, target and root (and
    bubblewrap's arguments, /proc/1/cmdline, named it too): the bots folder, the course's folder names, the
    teacher's home. Now a bot's files are at /bot (its working directory), copied to a folder of arena's in
    a tmpfs, so that none of them names the bots folder or the run's folder. What is left: arena's Python
    and arena itself, at their own paths (a Python installation cannot be moved; arena/sandbox/stage.py says
    why), which name the checkout here."""
    from arena.sandbox import _arena_paths

    bots = workdir / "bots"
    place(bots, {"single": PRELUDE + MOUNTS + LOOP, "first": FIRST})
    folder_bot(bots, "folder", PRELUDE + MOUNTS + LOOP)
    done, games = tournament(mode, workdir)
    assert done.returncode == 0, done.stderr
    clean(games)
    arena_own = set(_arena_paths())
    for bot, file in (("single", "/bot/single.py"), ("folder", "/bot/bot.py")):
        log = tail(games, bot)
        assert f"CWD /bot FILE {file}" in log, log
        mounts = [line.split()[4:6] for line in log.splitlines() if line.startswith("MOUNT ")]
        assert mounts and not [m for m in mounts if str(workdir) in " ".join(m)], log
        assert [root for root, target in mounts if target == "/bot"][0].startswith("/arena-stage-"), log
        assert "PID1 " in log and str(workdir) not in log.split("PID1 ", 1)[1].split("\n")[0], log
        left = {target for root, target in mounts if str(ROOT) in root + target}
        assert left <= arena_own and all(root == target for root, target in mounts if target in left), log


# --- 6: bot.toml `memory` over the teacher's limit ------------------------------------------------------

GREEDY_MEMORY = """
def attack():
    tmp = os.statvfs("/tmp")
    log("TMP MiB", tmp.f_blocks * tmp.f_frsize >> 20, "LIMIT", os.environ["ARENA_MEMORY_MB"])
    held = []
    for mib in range(16, 1025, 16):
        held.append(b"x" * (16 << 20))  # written, so that it counts
        if mib % 128 == 0:
            log("HELD MiB", mib)
"""


@pytest.mark.slow
def test_a_bots_memory_request_is_capped_by_the_teacher(mode: str, workdir: Path) -> None:
    """bot.toml `memory = 1000000` under `--memory 256`: the bot gets 256 MiB (and its /tmp half of that), not
    what it asked; holding more is an out-of-memory forfeit that names the cap, and the page says so."""
    bots = workdir / "bots"
    place(bots, {"first": FIRST})
    folder_bot(bots, "hoarder", PRELUDE + GREEDY_MEMORY + LOOP, "memory = 1000000\n")
    done, games = tournament(mode, workdir, ["--memory", "256"])
    assert done.returncode == 0, done.stderr
    log = tail(games, "hoarder")
    assert "TMP MiB 128 LIMIT 256" in log, log
    assert "HELD MiB 512" not in log, log
    lost = [g for g in games if g["faulty"] == "hoarder"]
    assert len(lost) == 2 and all(
        "memory limit of 256 MiB (--memory, as --max-memory)" in g["detail"] for g in lost
    )
    page_text = (workdir / "reports" / "default" / "index.html").read_text(encoding="utf-8")
    assert "hoarder 256 MiB (asked for 1000000 MiB: capped)" in page_text


# --- 1: bot.toml `paths` ------------------------------------------------------------------------------------

THIEF = """
def attack():
    attempt("read opponent", lambda: open({opponent!r}).read(20))
    attempt("read shadow", lambda: open("/etc/shadow").read(20))
    attempt("read data", lambda: open({data!r}).read().strip())
"""


# The system and private places a teacher may not grant (arena/sandbox/__init__.py's _PRIVATE but / and /run).
PRIVATE = ("/home", "/root", "/var", "/tmp", "/sys", "/dev", "/proc")


def homes() -> set[str]:
    """Users' homes that are folders on this machine."""
    import pwd

    return {e.pw_dir for e in pwd.getpwall() if e.pw_dir.startswith("/") and os.path.isdir(e.pw_dir)}


@pytest.mark.slow
def test_only_the_teacher_grants_read_only_paths(mode: str, workdir: Path) -> None:
    """bot.toml `paths = ["/"]` no longer shows a bot the machine: it is a request, and a bot whose request
    the teacher did not grant (--read-only) is not entered, the reason naming the flag. The teacher cannot
    grant a private place either (one line, no store made); what is granted is named at the start and on
    the page, and every bot reads it."""
    bots = workdir / "bots"
    data = Path(tempfile.mkdtemp(prefix="arena-course-data-", dir="/var/tmp"))
    try:
        data.chmod(0o755)
        (data / "weights.txt").write_text("the weights\n", encoding="utf-8")
        (data / "weights.txt").chmod(0o644)
        place(bots, {"first": FIRST, "second": FIRST})
        thief = PRELUDE + THIEF.format(opponent=str(bots / "first.py"), data=str(data / "weights.txt")) + LOOP
        folder_bot(bots, "thief", thief, 'paths = ["/"]\n')
        folder_bot(bots, "student", thief, f"paths = [{str(data)!r}]\n".replace("'", '"'))
        (data / "to-root").symlink_to("/root")
        home = next((h for h in sorted(homes()) if h.startswith("/home/")), "/root")
        for refused, why in (
            ("/", "/: is /, which no bot may read"),
            (str(workdir), f"{workdir}: holds {bots}, which no bot may read"),
            ("/proc/1/root", "/proc/1/root: is inside /proc, which no bot may read"),
            ("/run", "/run: is /run, which no bot may read"),
            (str(bots / "first.py"), f"{bots / 'first.py'}: is inside {bots}, which no bot may read"),
            *((top, f"{top}: is {top}, which no bot may read") for top in PRIVATE),
            (home, f"{home}: is {home}, which no bot may read"),
            ("/root/.ssh/id_ed25519", "/root/.ssh/id_ed25519: is inside /root/.ssh, which no bot may read"),
            (str(data / "to-root"), f"{data / 'to-root'} (a link to /root): is /root, which no bot may read"),
            (f"{data}/../../../root", "/root: is /root, which no bot may read"),  # as arena keeps it
            ("/var/tmp", "/var/tmp: is a folder anyone may write (others' files), which no bot may read"),
        ):
            done, _ = tournament(mode, workdir, ["--read-only", refused], name="refused")
            assert (
                done.returncode == 2
                and done.stderr
                == f"arena: error: --read-only {why}; grant the folder a bot needs, e.g. /opt/conda\n"
            ), done.stderr
            assert not (workdir / "reports" / "refused").exists()

        done, games = tournament(mode, workdir)
        assert done.returncode == 0, done.stderr
        for name, asked in (("thief", "/"), ("student", str(data))):
            line = (
                f"arena: not entered: {name}: its bot.toml asks to read {asked}, which the teacher has not "
            )
            assert line + f"granted (--read-only {asked})" in done.stderr, done.stderr
        assert {g["south"] for g in games} == {"first", "second"}
        clean(games)

        done, games = tournament(mode, workdir, ["--read-only", str(data)], name="granted")
        assert done.returncode == 0, done.stderr
        assert f"arena: every bot may read (--read-only): {data}\n" in done.stderr
        assert "not entered: student" not in done.stderr and "not entered: thief" in done.stderr
        log = tail(games, "student")
        assert "ALLOWED read data: 'the weights'" in log and "DENIED read opponent" in log, log
        assert "DENIED read shadow" in log, log
        clean(games)
        page_text = (workdir / "reports" / "granted" / "index.html").read_text(encoding="utf-8")
        assert f"{data} (--read-only: every bot may read them)" in page_text
    finally:
        shutil.rmtree(data)


def test_the_granted_paths_lie_under_the_private_mounts() -> None:
    """Bound before the private /tmp, /dev and /proc: whatever a granted path holds, those cover it."""
    warden = Warden(Confinement(sandbox=True, read_only=("/usr/share",)))
    jail = warden.jail(ROOT / "bots" / "random.py")
    try:
        command = jail.command(["true"], ROOT, (0, 1, 2))
        # bubblewrap's options come on a descriptor (--args), so that /proc/1/cmdline shows none of them
        assert command[:2] == ["bwrap", "--args"], command
        argv = os.pread(int(command[2]), 1 << 20, 0).decode().split("\0")
    finally:
        jail.close_passed()
        jail.release()
        warden.close()
    bind = argv.index("/usr/share")
    assert argv[bind - 1] == "--ro-bind" and bind < argv.index("--tmpfs") < argv.index("--proc")


# --- 2 and 3: keyrings, and the system calls behind container escapes -------------------------------------

# System call numbers (asm/unistd.h) of the attacks, where the test knows them.
CALLS = {
    "x86_64": {"keyctl": 250, "add_key": 248, "unshare": 272, "clone": 56, "io_uring_setup": 425,
               "userfaultfd": 323, "perf_event_open": 298, "ptrace": 101, "bpf": 321, "mount": 165,
               "process_vm_readv": 310, "process_vm_writev": 311, "kexec_load": 246, "setns": 308},
    "aarch64": {"keyctl": 219, "add_key": 217, "unshare": 97, "clone": 220, "io_uring_setup": 425,
                "userfaultfd": 282, "perf_event_open": 241, "ptrace": 117, "bpf": 280, "mount": 40,
                "process_vm_readv": 270, "process_vm_writev": 271, "kexec_load": 104, "setns": 268},
}  # fmt: skip
SYSCALLS = """
import ctypes, platform, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {calls!r}[platform.machine()]
def call(name, *args):
    ctypes.set_errno(0)
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = libc.syscall(ctypes.c_long(NR[name]), *args)
    return result, ctypes.get_errno()
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def report(name, result, errno):
    log(f"CALL {{name}} {{'DENIED' if result == -1 else 'ALLOWED'}} errno {{errno}}")
def keyring_read(ring, description):
    found, errno = call("keyctl", 10, ring, b"user", description, 0)  # KEYCTL_SEARCH
    if found < 0:
        return f"DENIED errno {{errno}}"
    buffer = ctypes.create_string_buffer(64)
    size, errno = call("keyctl", 11, found, buffer, 64)  # KEYCTL_READ
    return f"READ {{buffer.raw[:max(size, 0)].decode(errors='replace')}}"
"""
KEEPER = """
def attack():
    for ring in (-4, -3):  # the user keyring, the session keyring
        report("add_key", *call("add_key", b"user", b"left-behind", b"bot-secret", 10, ring))
"""
FINDER = """
def look():  # at every move: the keeper may have played before
    log("SESSION SECRET", keyring_read(-3, b"arena-redteam-secret"))  # arena's session keyring
    for name, ring in (("USER", -4), ("SESSION", -3)):
        log(name, "LEFT", keyring_read(ring, b"left-behind"))
def attack():
    report("unshare", *call("unshare", 0x10000000))  # CLONE_NEWUSER
    child, errno = call("clone", 0x10000000 | signal.SIGCHLD, 0, 0, 0, 0)  # a child in a user namespace
    if child == 0:
        os._exit(0)
    if child > 0:
        os.waitpid(child, 0)
    report("clone", child, errno)
    params = ctypes.create_string_buffer(120)
    report("io_uring_setup", *call("io_uring_setup", 8, params))
    report("userfaultfd", *call("userfaultfd", 1))  # UFFD_USER_MODE_ONLY
    attr = ctypes.create_string_buffer(128)
    attr[4] = 128  # size; type 0 (hardware), config 0 (cycles)
    report("perf_event_open", *call("perf_event_open", attr, 0, -1, -1, 0))
    report("bpf", *call("bpf", 0, ctypes.create_string_buffer(128), 128))  # BPF_MAP_CREATE
    # Each asked so that the kernel itself would not say EPERM to the bot: only the filter does.
    report("mount", *call("mount", 0, b"/tmp", 1, 0, 0))  # the kernel: EFAULT (its type is no string)
    report("setns", *call("setns", -1, 0))  # the kernel: EBADF
    report("kexec_load", *call("kexec_load", 0, 0, 0, 0))  # the kernel: EPERM, or ENOSYS without kexec
    secret = ctypes.create_string_buffer(b"child's secret", 16)
    target = os.fork()
    if target == 0:
        time.sleep(5)
        os._exit(0)
    copy = ctypes.create_string_buffer(16)
    mine, theirs = Iovec(ctypes.addressof(copy), 16), Iovec(ctypes.addressof(secret), 16)
    for name in ("process_vm_readv", "process_vm_writev"):  # its own child's memory: the kernel allows it
        report(name, *call(name, target, ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0))
    report("ptrace", *call("ptrace", 16, target, 0, 0))  # PTRACE_ATTACH to its own child
    os.kill(target, 9)
    os.waitpid(target, 0)
"""
# Runs arena with a secret in a session keyring of its own, as a teacher's session may hold one.
WITH_SECRET = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {calls!r}[__import__("platform").machine()]
assert libc.syscall(ctypes.c_long(NR["keyctl"]), ctypes.c_long(1), None) > 0  # a new session keyring
secret = (b"user", b"arena-redteam-secret", b"hunter2", 7, ctypes.c_long(-3))  # into the session keyring
key = libc.syscall(ctypes.c_long(NR["add_key"]), *secret)
assert key > 0, ctypes.get_errno()
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


@pytest.mark.slow
def test_no_bot_reaches_a_keyring_or_the_kernels_escape_hatches(mode: str, workdir: Path) -> None:
    """A bot cannot read a key in arena's session keyring, nor leave a key for another bot, nor make a user
    namespace (unshare, clone) or join one (setns), set up io_uring or userfaultfd, open perf events, load
    BPF, ptrace or read and write its child's memory (process_vm_readv, _writev), mount or kexec: the
    seccomp filter answers EPERM, and each bot has a fresh session keyring besides. (kexec_load is EPERM for
    a bot without the filter too, where the kernel has kexec: there the test cannot tell them apart.)"""
    import platform

    if platform.machine() not in CALLS:
        pytest.skip(f"the attack's system call numbers are known for {', '.join(CALLS)} only")
    prelude = PRELUDE + SYSCALLS.format(calls=CALLS)
    looking = LOOP.replace("        moves += 1", "        look()\n        moves += 1")
    assert looking != LOOP
    bots = {"keeper": prelude + KEEPER + LOOP, "finder": prelude + FINDER + looking, "first": FIRST}
    place(workdir / "bots", bots)
    wrapper = workdir / "with_secret.py"
    wrapper.write_text(WITH_SECRET.format(calls=CALLS), encoding="utf-8")
    wrapper.chmod(0o644)
    out = workdir / "reports"
    argv = [
        str(wrapper),
        "-m",
        "arena",
        "run",
        "--rounds",
        "1",
        "--bots",
        str(workdir / "bots"),
        "--out",
        str(out),
    ]
    argv += ["--rules", RULES, "--move-time", "2000", "--jobs", "1"]
    command = [sys.executable, *argv]
    if mode == "user":
        command = as_nobody(command, keep())
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=workdir)
    assert done.returncode == 0, done.stderr
    export = [sys.executable, "-m", "arena", "export", "--out", str(out)]
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    games = [json.loads(line) for line in lines]
    clean(games)
    found, kept = tail(games, "finder"), tail(games, "keeper")
    assert kept.count("CALL add_key DENIED errno 1") == kept.count("CALL add_key") == 2, kept
    for line in ("SESSION SECRET", "USER LEFT", "SESSION LEFT"):  # at every move: never found
        assert found.count(f"{line} DENIED errno 1\n") == found.count(f"{line} ") > 0, (line, found)
    for name in (
        "unshare", "clone", "io_uring_setup", "userfaultfd", "perf_event_open", "bpf", "ptrace", "mount",
        "setns", "kexec_load", "process_vm_readv", "process_vm_writev",
    ):  # fmt: skip
        assert f"CALL {name} DENIED errno 1\n" in found, (name, found)


NEW_USERNS = """import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
result = libc.syscall(ctypes.c_long({calls!r}[platform.machine()]["unshare"]), ctypes.c_long(0x10000000))
print("UNSHARE", result, ctypes.get_errno(), flush=True)
"""
USER_KEY = """import ctypes, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {calls!r}[platform.machine()]
def call(name, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return libc.syscall(ctypes.c_long(NR[name]), *args), ctypes.get_errno()
if sys.argv[1] == "add":
    print("ADD", *call("add_key", b"user", b"left-in-u", b"bot-secret", 10, -4), flush=True)
else:
    call("keyctl", 8, -4, -3)  # the user keyring linked into its session keyring: held, if it were shared
    print("FIND", *call("keyctl", 10, -3, b"user", b"left-in-u", 0), flush=True)
"""
# Starts each probe (a script and its arguments) in arena's sandbox with the seccomp filter off, as on a
# machine without libseccomp.
UNFILTERED = """import sys, time
from pathlib import Path
from arena import sandbox as confine
from arena.sandbox import seccomp
from arena.match.process import BotProcess
seccomp._built = lambda: (b"", "no seccomp filter for bots (the test's)")
warden = confine.Warden(confine.Confinement(sandbox=True))
for probe in sys.argv[1:]:
    script, *args = probe.split()
    jail = warden.jail(Path(script))
    bot = BotProcess.start([sys.executable, script, *args], cwd=Path(script).parent, jail=jail)
    print(bot.read_line(time.monotonic() + 10), flush=True)
    bot.kill()
warden.close()
"""


def test_without_the_filter_a_users_bot_makes_no_user_namespace_and_keeps_its_keyring(
    mode: str, workdir: Path
) -> None:
    """Where the seccomp filter is missing, an ordinary user's bot (in the user namespace bubblewrap makes)
    still cannot make another user namespace: bubblewrap's --disable-userns, ENOSPC. And it shares no user
    keyring (@u) with the next bot, though both are the same user: the kernel keeps one per user namespace.
    (Root's bots have no user namespace to start from: for them the filter alone denies a new one, and each
    has a uid, so a user keyring, of its own.)"""
    import platform

    if mode == "root":
        pytest.skip("root's sandbox makes no user namespace: --disable-userns is for the user's")
    helped = subprocess.run([bwrap.find().path or "bwrap", "--help"], capture_output=True, text=True).stdout
    if "--disable-userns" not in helped:
        pytest.skip("this bubblewrap has no --disable-userns (0.8 on)")
    if platform.machine() not in CALLS:
        pytest.skip(f"the attack's system call numbers are known for {', '.join(CALLS)} only")
    scripts = {"userns.py": NEW_USERNS.format(calls=CALLS), "unfiltered.py": UNFILTERED}
    scripts["userkey.py"] = USER_KEY.format(calls=CALLS)
    for name, text in scripts.items():
        (workdir / name).write_text(text, encoding="utf-8")
        (workdir / name).chmod(0o644)
    probes = [str(workdir / "userns.py"), f"{workdir / 'userkey.py'} add", f"{workdir / 'userkey.py'} find"]
    command = as_nobody([sys.executable, str(workdir / "unfiltered.py"), *probes], keep())
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=workdir)
    lines = done.stdout.splitlines()
    assert lines[0] == "UNSHARE -1 28", (done.stdout, done.stderr)  # ENOSPC: no user namespace left
    assert lines[1].startswith("ADD ") and lines[1].endswith(" 0") and lines[2] == "FIND -1 126", lines


KEYRING_PEEK = """import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {calls!r}[platform.machine()]
search = (ctypes.c_long(10), ctypes.c_long(-3), b"user", b"{name}", None)  # KEYCTL_SEARCH, the session's
found = libc.syscall(ctypes.c_long(NR["keyctl"]), *search)
print("FOUND" if found > 0 else f"ERRNO {{ctypes.get_errno()}}", flush=True)
"""


def test_a_bot_has_a_session_keyring_of_its_own(tmp_path: Path) -> None:
    """Without the sandbox (so without the seccomp filter), a bot still cannot reach a key of arena's session
    keyring: it joins a new one of its own before its program runs."""
    import ctypes
    import platform
    import uuid

    if platform.machine() not in CALLS:
        pytest.skip(f"the attack's system call numbers are known for {', '.join(CALLS)} only")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    keyctl, add_key = (ctypes.c_long(CALLS[platform.machine()][n]) for n in ("keyctl", "add_key"))
    assert libc.syscall(keyctl, ctypes.c_long(1), None) > 0  # this test's own session keyring
    name = f"arena-test-{uuid.uuid4().hex[:8]}"
    assert libc.syscall(add_key, b"user", name.encode(), b"hunter2", 7, ctypes.c_long(-3)) > 0
    peek = tmp_path / "peek.py"
    peek.write_text(KEYRING_PEEK.format(calls=CALLS, name=name), encoding="utf-8")
    warden = Warden(Confinement(sandbox=False))
    bot = BotProcess.start([sys.executable, str(peek)], cwd=tmp_path, jail=warden.jail(peek))
    try:
        assert bot.read_line(time.monotonic() + 10) == "ERRNO 126"  # ENOKEY: not in its keyring
    finally:
        bot.kill()
        warden.close()
    plain = subprocess.run([sys.executable, str(peek)], capture_output=True, text=True, check=True)
    assert plain.stdout == "FOUND\n"  # the key is there for a process of arena's session


SHARER = """
def attack():
    report("add_key", *call("add_key", b"user", b"{name}", b"bot-secret", 10, -4))  # the user keyring
"""
PEEKER = """
def look():
    call("keyctl", 8, -4, -3)  # KEYCTL_LINK: the user keyring into its own session keyring, so it holds it
    log("USER KEY", keyring_read(-3, b"{name}"))
def attack():
    pass
"""
FORGET = """import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
keyctl = ctypes.c_long({calls!r}[platform.machine()]["keyctl"])
libc.syscall(keyctl, ctypes.c_long(1), None)  # a session keyring of its own, not the caller's
libc.syscall(keyctl, ctypes.c_long(8), ctypes.c_long(-4), ctypes.c_long(-3))  # held, as the peeker does
key = libc.syscall(keyctl, ctypes.c_long(10), ctypes.c_long(-3), b"user", b"{name}", None)  # KEYCTL_SEARCH
if key > 0:
    libc.syscall(keyctl, ctypes.c_long(21), ctypes.c_long(key))  # KEYCTL_INVALIDATE
"""


@pytest.mark.slow
def test_without_the_sandbox_the_users_shared_keyring_is_said(mode: str, workdir: Path) -> None:
    """Without the sandbox an ordinary user's bots are that user: a fresh session keyring each, but one
    user keyring (@u), where a key one bot leaves another reads; nothing arena calls can part them, so the
    terminal and the page say it. As root each bot has a uid (and so a user keyring) of its own, or arena
    says that bots run as root."""
    import platform
    import uuid

    if platform.machine() not in CALLS:
        pytest.skip(f"the attack's system call numbers are known for {', '.join(CALLS)} only")
    name = f"arena-redteam-{uuid.uuid4().hex[:8]}"
    prelude = PRELUDE + SYSCALLS.format(calls=CALLS)
    looking = LOOP.replace("        moves += 1", "        look()\n        moves += 1")
    sources = {"sharer": SHARER, "peeker": PEEKER}
    bots = {bot: prelude + text.format(name=name) + (looking if bot == "peeker" else LOOP)
            for bot, text in sources.items()}  # fmt: skip
    place(workdir / "bots", bots)
    try:
        done, games = tournament(mode, workdir, ["--no-sandbox"])
    finally:
        forget = [sys.executable, "-c", FORGET.format(calls=CALLS, name=name)]
        subprocess.run(as_nobody(forget, keep()) if mode == "user" else forget, check=True)
    assert done.returncode == 0, done.stderr
    clean(games)
    peeked = tail(games, "peeker")
    page_text = (workdir / "reports" / "default" / "index.html").read_text(encoding="utf-8")
    words = "bots run as you (nobody) without a sandbox: they can read your files and share your user keyring"
    if mode == "user":
        assert "USER KEY READ bot-secret" in peeked, peeked  # what the note is about
        assert words in done.stderr and words in page_text, done.stderr
        return
    assert "without a sandbox: they can read your files" not in done.stderr, done.stderr
    as_root = "bots run as root, with root's privileges" in done.stderr
    assert as_root or "USER KEY READ" not in peeked, (peeked, done.stderr)


# --- 4: a bot's processes spinning on every core ---------------------------------------------------------

SPINNER = """
for _ in range(5):
    if os.fork() == 0:
        os.setsid()  # out of its session: only a cgroup still holds it
        while True:
            pass
def attack():
    log("SPINNING", os.getpid())
"""
# Needs 50 ms of CPU a move, in a move time of 1.5 s: ample on a busy machine, unless a spinner's five
# processes share its core (a victim's game is on the other core when the spinner has no CPU limit).
CPU_VICTIM = """import sys, time
def first_legal(words):
    board = [int(w) for w in words[2:]]
    return next(p for p in range(1, len(board) // 2) if board[p - 1])
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        start = time.process_time()
        while time.process_time() - start < 0.05:
            pass
        print(first_legal(words), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


def cpu_limit(pid: int) -> tuple[str, ...] | None:
    """The CPU limit of the process's cgroup: v1 (quota, period, shares) or v2 (cpu.max, cpu.weight); None
    once the process is gone."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            folder = Path("/sys/fs/cgroup/cpu", path.lstrip("/"))
            names = ("cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.shares")
            return tuple(read(folder / name) for name in names)
    for line in lines:
        if line.startswith("0::"):
            for mount in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                folder = mount / line[3:].lstrip("/")
                if (folder / "cpu.max").exists():
                    return (read(folder / "cpu.max"), read(folder / "cpu.weight"))
    return ("no cpu cgroup",)


def read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "gone"


@pytest.mark.slow
def test_a_bot_spinning_on_every_core_gets_one_cpu(mode: str, workdir: Path) -> None:
    """A bot whose children leave its session and spin: every process of it is in a cgroup held to one CPU
    with the weight of every other bot, so the game on the other core keeps its core; victims in both
    games forfeit nothing. As an ordinary user (no cgroups), arena says plainly that bots are not held to
    one CPU, in the terminal and on the page."""
    bots = workdir / "bots"
    # named for the mode: the other mode's run of this test may be on another of the suite's workers, and
    # its spinner (an ordinary user's, in no cpu cgroup) must not be taken for this one's
    spinner_name = f"spinner_{mode}"
    place(bots, {spinner_name: PRELUDE + SPINNER + LOOP, "victim": CPU_VICTIM, "victim2": CPU_VICTIM})
    out = workdir / "reports"
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(out), "--rules", RULES]
    argv += ["--move-time", "1500", "--jobs", "2", "--rounds", "2"]
    command = as_nobody(argv, keep()) if mode == "user" else argv
    seen: dict[int, tuple[str, ...]] = {}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=workdir
    ) as run:
        while run.poll() is None:
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit() and int(entry.name) not in seen:
                    try:
                        spinner = f"{spinner_name}.py".encode() in (entry / "cmdline").read_bytes()
                    except OSError:
                        continue
                    if spinner and (limit := cpu_limit(int(entry.name))) is not None:
                        seen[int(entry.name)] = limit
            time.sleep(0.05)
        stderr = run.stderr.read() if run.stderr else ""
    assert run.returncode == 0, stderr
    export = [sys.executable, "-m", "arena", "export", "--out", str(out)]
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    games = [json.loads(line) for line in lines]
    page_text = (out / "default" / "index.html").read_text(encoding="utf-8")
    if mode == "user":
        words = "no cpu cgroup: a bot is not held to one CPU"
        assert words in stderr and words in page_text, stderr
        return
    assert "warning" not in stderr, stderr
    clean(games)
    assert len(seen) >= 6, seen  # the bot (and its sandbox's processes) and its five children
    limits = set(seen.values())
    assert limits <= {("100000", "100000", "1024"), ("100000 100000", "100")}, limits


# --- 5: the per-user process limit -----------------------------------------------------------------------

HOLDER = """import threading, time
for _ in range({threads}):
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
print("holding", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_threads_of_another_process_of_the_user_keep_no_bot_from_starting(mode: str, workdir: Path) -> None:
    """Another process of uid 65534 holds 100 threads (a bot holding threads, or a desktop session's
    tasks): arena as that user still starts every bot. In the sandbox on Linux 5.14 on, RLIMIT_NPROC is set
    inside the bot's own user namespace, where it counts that bot alone; elsewhere arena sets none that would
    count them, and says plainly that processes are then not bounded per bot. As root every bot has a uid of
    its own, whose limit counts that bot alone."""
    holder_source = workdir / "holder.py"
    holder_source.write_text(HOLDER.format(threads=100), encoding="utf-8")
    holder_source.chmod(0o644)
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    holder = subprocess.Popen([*drop, sys.executable, str(holder_source)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        place(workdir / "bots", {"first": FIRST, "second": FIRST})
        done, games = tournament(mode, workdir)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr
    assert len(games) == 2
    clean(games)
    if mode == "user":
        words = "processes are not bounded per bot (--max-procs is not enforced"
        page_text = (workdir / "reports" / "default" / "index.html").read_text(encoding="utf-8")
        bounded = counts_processes_per_namespace()  # the sandbox's user namespace holds them
        assert (words in done.stderr and words in page_text) != bounded, done.stderr


# A system call by i386's convention (int 0x80: getpid is 20 there) from an x86_64 program: a filter written
# for x86_64 numbers alone would let every call of the other table through.
FOREIGN_ABI = """#include <stdio.h>
int main(void) {
    long result;
    __asm__ volatile ("int $0x80" : "=a"(result) : "a"(20L) : "memory");
    printf("i386 getpid %ld\\n", result);
    return 0;
}
"""


def test_a_system_call_of_a_foreign_architecture_kills_the_bot(tmp_path: Path) -> None:
    """The seccomp filter checks the architecture first: an i386 call from an x86_64 bot kills it (SIGSYS)."""
    import platform
    import signal

    if platform.machine() != "x86_64" or shutil.which("cc") is None:
        pytest.skip("needs x86_64 and a C compiler")
    if test_redteam.sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {test_redteam.sandbox_problem()}")
    source = tmp_path / "foreign.c"
    source.write_text(FOREIGN_ABI, encoding="utf-8")
    program = tmp_path / "foreign"
    subprocess.run(["cc", "-O0", "-o", str(program), str(source)], check=True)
    plain = subprocess.run([str(program)], capture_output=True, text=True)
    assert plain.stdout.startswith("i386 getpid ") and plain.returncode == 0  # the kernel runs it
    tmp_path.chmod(0o755)
    conf = replace(capabilities(Confinement(), True)[0], sandbox=True)
    warden = Warden(conf)
    jail = warden.jail(program)
    try:
        bot = BotProcess.start([str(program)], cwd=tmp_path, jail=jail)
        with pytest.raises(Fault) as fault:
            bot.read_line(time.monotonic() + 10)
        bot.kill()
    finally:
        warden.close()
    assert f"killed by {signal.SIGSYS.name}" in fault.value.detail, fault.value.detail
