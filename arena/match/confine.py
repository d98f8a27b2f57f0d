"""Confining a bot process: least privilege, resource limits, a sandbox, and finding all its processes.

Each layer is used where the machine offers it, and what is missing is said, so nobody is misled:
- rlimits, always: RLIMIT_DATA caps each process's writable memory (unlike an address-space limit it leaves
  the JVM's huge reservations alone), RLIMIT_NPROC bounds processes for a bot with a uid of its own (not
  for an ordinary user's bots: it would count every process of that user), no core dumps.
- a clean environment, always: a fixed PATH, HOME and TMPDIR, a locale, the runtimes' own memory flags set
  from the limit (JAVA_TOOL_OPTIONS, NODE_OPTIONS: a JVM otherwise sizes its heap from the host's memory),
  ARENA_MEMORY_MB, and the few ARENA_* knobs protocol.md names (`PASSED_ON`); nothing else of arena's
  environment (tokens, credentials, arena's own ARENA_* settings).
- a cgroup per bot process (v2, or v1's memory, pids and freezer hierarchies), where arena may make them:
  an exact memory limit for all of the bot's processes together, an exact process bound, a freezer that
  pauses every process of the bot at once (daemons that left its session included, and processes started
  while it is frozen), and a list of all of them, so that all of them can be ended.
- bubblewrap (`bwrap`), where installed and working: the bot's filesystem is an allowlist (the system's
  program and library folders, arena's Python, its own file or folder, the read-only paths the teacher
  grants with --read-only, a private size-bounded /tmp, a minimal /dev, its own /proc), no network, its
  own PID namespace. A bot's bot.toml `paths` only asks: a bot is entered only if the teacher granted them.
- no privilege: started by root, a bot runs as an unprivileged user id of its own (bubblewrap sets up the
  sandbox as root, then `setpriv` drops every capability, sets no-new-privileges and changes to that uid
  before the bot's program runs); started by an ordinary user, it is that user with no capabilities.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform
import pwd
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import count
from pathlib import Path

from arena.match import bwrap, seccomp, stage

MiB = 1024 * 1024
# What runtimes print when an allocation fails, the most telling first: the JVM's report on its stdout, its
# exceptions, Python's, C++'s, C's, Go's and Rust's, and the JVM's warning when it cannot commit memory.
_OUT_OF_MEMORY = (
    "insufficient memory",
    "OutOfMemoryError",
    "MemoryError",
    "bad_alloc",
    "Cannot allocate memory",
    "out of memory",
    "error='Not enough space'",
)
# Memory per bot by default. Course agents peak at 1.08 GB (a JVM), 1.22 GB (C++) and about 2.0 GB (Python)
# under their own engine: twice the largest leaves room for a deeper search, and a JVM's heap (three quarters)
# is 3 GiB. A limit is a ceiling, not a reservation: 2 games at once use at most 4 such bots, 16 GiB.
DEFAULT_MEMORY_MB = 4096
_CGROUP_FS = Path("/sys/fs/cgroup")


@dataclass(frozen=True, slots=True)
class Confinement:
    """What every bot of a tournament may use. `sandbox` and `drop_root` are only true once `capabilities`
    found that this machine can do them."""

    memory_mb: int = DEFAULT_MEMORY_MB
    max_procs: int = 64
    sandbox: bool = False
    drop_root: bool = False  # arena runs as root: each bot runs as an unprivileged uid of its own
    max_memory_mb: int | None = None  # the most a bot.toml's `memory` gets (--max-memory); None: memory_mb
    read_only: tuple[str, ...] = ()  # what the teacher lets every bot read (--read-only), checked by `grant`

    def memory_of(self, asked: int | None) -> tuple[int, str]:
        """A bot's memory limit and what set it: its bot.toml's `memory` (`asked`), at most the teacher's
        cap; a bot's author cannot lift their bot over what the teacher allows."""
        cap = self.max_memory_mb if self.max_memory_mb is not None else self.memory_mb
        if asked is None:
            return self.memory_mb, "--memory"
        if asked > cap:
            return cap, "--max-memory" if self.max_memory_mb is not None else "--memory, as --max-memory"
        return asked, "its bot.toml's memory"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this machine lets arena enforce; `notes` says plainly what is missing, for terminal and report."""

    sandbox: bool
    cgroups: bool
    notes: tuple[str, ...]


UID_BASE = 1_000_000_000  # bots started by root run as uids from here: far above any real user's
# The system's programs, libraries and configuration: what a runtime (Python, a JVM, node, libc) needs.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_PATH = "/usr/local/bin:/usr/bin:/bin"
_SETPRIV = "setpriv"


def _arena_paths() -> list[str]:
    """Where arena's Python and arena itself live: a .py bot runs on this Python, and bots may import arena
    (botkit, the rules engine). Only the package folder, not the folder holding it (a source checkout also
    holds bots/ and reports/)."""
    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.add(str(Path(__file__).resolve().parents[1]))  # the arena package
    return sorted(p for p in paths if not any(p != q and Path(p).is_relative_to(q) for q in paths))


def _system_binds() -> list[str]:
    """The system's program and library folders, read-only; merged-/usr links stay links."""
    args: list[str] = []
    for path in _SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


# The caller's variables a bot may see, as protocol.md lists them: the bundled bots' knobs. Any other
# (ARENA_CLUSTER, a token a teacher keeps in an ARENA_* variable) stays with arena.
PASSED_ON = ("ARENA_DEPTH", "ARENA_SEED")


def environment(memory_mb: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """A bot's whole environment: fixed basics, the runtimes' memory flags, and the caller's `PASSED_ON`."""
    heap = max(16, memory_mb * 3 // 4)  # room for the runtime's own memory beside the heap
    env = {k: v for k, v in (base if base is not None else os.environ).items() if k in PASSED_ON}
    env |= {
        "PATH": _PATH,
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "JAVA_TOOL_OPTIONS": f"-XX:MaxRAM={memory_mb}m -XX:MaxRAMPercentage=75",
        "NODE_OPTIONS": f"--max-old-space-size={heap}",
        "ARENA_MEMORY_MB": str(memory_mb),
    }
    return env


def _ro_bind(path: str, made: set[str]) -> list[str]:
    """Bind `path` read-only at the same place, its folders above made searchable by anyone first:
    bubblewrap would copy their modes, and a bot's own uid could not pass through a root-only /root."""
    args: list[str] = []
    for parent in reversed(Path(path).parents[:-1]):  # from the top down, without "/"
        if str(parent) not in made and not any(Path(parent).is_relative_to(s) for s in _SYSTEM):
            made.add(str(parent))
            args += ["--perms", "0755", "--dir", str(parent)]
    return [*args, "--ro-bind", path, path]


class GrantError(ValueError):
    """A read-only path the teacher may not grant bots: the message is one line saying why."""


# Places no bot may read: the whole machine, the kernel's and the runtime's (sockets of sessions, D-Bus,
# agents), the machine's state and everyone's home. Neither they nor a folder holding one can be granted.
_PRIVATE = ("/", "/proc", "/sys", "/dev", "/run", "/tmp", "/var", "/home", "/root")
# Nothing inside these either: a bot has its own /proc, /dev and /tmp (which would hide what is granted
# there), and /sys and /run are the kernel's and the sessions' (sockets).
_PRIVATE_INSIDE = ("/proc", "/sys", "/dev", "/run", "/tmp")


def _homes() -> set[str]:
    homes = set()
    for entry in pwd.getpwall():
        if entry.pw_dir.startswith("/") and os.path.isdir(entry.pw_dir):
            homes.add(os.path.realpath(entry.pw_dir))
    return homes


def _hidden(path: str, homes: set[str]) -> list[str]:
    """The hidden entries of a home that `path` is or lies in (~/.ssh, ~/.gnupg, ~/.aws, ~/.netrc, ~/.config):
    where keys, tokens and sessions are kept. Course data in a home (~/course/weights) stays grantable."""
    found = []
    for home in sorted(homes):
        if path != home and Path(path).is_relative_to(home):
            top = Path(path).relative_to(home).parts[0]
            if top.startswith("."):
                found.append(str(Path(home, top)))
    return found


def _open_to_all(path: str) -> bool:
    """Whether `path` is a folder anyone may write (/var/tmp, a shared drop folder): everyone's files and
    sockets land there, as in /tmp."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_IWOTH)


def grant(paths: Sequence[str], private: Sequence[Path | str] = ()) -> tuple[str, ...]:
    """The teacher's read-only paths as bound (real paths, links followed), or GrantError naming the first
    that would show a bot a private place: one of `_PRIVATE`, a user's home, one of `private` (the bots
    folder, the reports folder), a folder that holds one of them, a place inside /proc, /sys, /dev, /run,
    /tmp, `private` or a home's hidden entries, or a folder anyone may write."""
    homes = _homes()
    shut = {os.path.realpath(p) for p in private}
    granted = []
    for given in paths:
        if not os.path.isabs(given):
            raise GrantError(f"--read-only {given}: give an absolute path")
        plain = os.path.normpath(given)
        try:
            real = os.path.realpath(given, strict=True)
        except OSError:
            real = plain  # judged as given (/proc/1/root), else said to be missing
        seen = f"{given} (a link to {real})" if real != plain else given
        refused = "which no bot may read; grant the folder a bot needs, e.g. /opt/conda"
        for path in dict.fromkeys((plain, real)):
            holds = [p for p in (*_PRIVATE, *sorted(homes), *sorted(shut)) if Path(p).is_relative_to(path)]
            inside = [p for p in (*sorted(shut), *_PRIVATE_INSIDE) if Path(path).is_relative_to(p)]
            inside += _hidden(path, homes)
            if holds or inside:
                where = holds[0] if holds else inside[0]
                what = "is" if path == where else ("holds" if holds else "is inside")
                raise GrantError(f"--read-only {seen}: {what} {where}, {refused}")
        if _open_to_all(real):
            raise GrantError(f"--read-only {seen}: is a folder anyone may write (others' files), {refused}")
        if not os.path.isdir(real) and not os.path.isfile(real):
            raise GrantError(f"--read-only {given}: no such folder or file on this machine")
        granted.append(real)
    return tuple(dict.fromkeys(granted))


def ungranted(asked: Sequence[str], granted: Sequence[str]) -> list[str]:
    """The paths of `asked` (a bot's bot.toml `paths`) that no granted read-only path covers."""
    return [p for p in asked if not any(Path(os.path.realpath(p)).is_relative_to(g) for g in granted)]


def _bwrap_base(
    memory_mb: int, as_root: bool, made: set[str] | None = None, read_only: Sequence[str] = ()
) -> list[str]:
    """bubblewrap's part of every sandbox: namespaces, a clean environment, the teacher's `read_only`
    paths, the private /tmp, /dev and /proc over them (whatever a path holds, those stay private), and the
    allowlisted folders (bound after /tmp, so that arena's Python may live under /tmp)."""
    made = made if made is not None else set()
    tmp, shm = str(memory_mb * MiB // 2), str(memory_mb * MiB // 4)  # files count as memory: a share
    # Found on arena's PATH, not the bot's: the bot's environment is the clean one.
    args = [bwrap.find().path or "bwrap", "--die-with-parent", "--new-session", "--clearenv"]
    for key, value in environment(memory_mb).items():
        args += ["--setenv", key, value]
    # Root keeps no user namespace: bubblewrap mounts as root, then setpriv takes a real unprivileged uid
    # (a uid mapped in a user namespace would still be root outside it, and read what root reads).
    args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if not as_root:
        args += ["--unshare-user", "--cap-drop", "ALL"]
        if "--disable-userns" in _bwrap_options(args[0]):  # bubblewrap 0.8 on
            args += ["--disable-userns"]  # no user namespace inside (seccomp denies them too)
    for path in read_only:
        args += _ro_bind(path, made)
    # /tmp and /dev/shm as on any system, writable by all and sticky, bounded by shares of the memory limit
    # (with cgroups their pages count against it too; without, these bounds are all that holds them).
    args += ["--perms", "1777", "--size", tmp, "--tmpfs", "/tmp", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", shm, "--tmpfs", "/dev/shm", "--proc", "/proc"]
    args += _system_binds()
    made |= {"/tmp", "/dev", "/proc"}  # mounted above: not to be made again (or their modes changed)
    for path in _arena_paths():
        args += _ro_bind(path, made)
    return args


@functools.cache
def _bwrap_options(path: str) -> str:
    """What this bubblewrap's --help lists (its options), '' if it does not answer."""
    try:
        return subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


# keyctl's number (asm/unistd.h) where arena knows it; KEYCTL_JOIN_SESSION_KEYRING with no name joins a new
# anonymous session keyring, so that nothing of the keyrings arena's session holds reaches the bot.
_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_JOIN_SESSION_KEYRING = 1


@functools.cache
def _syscall() -> Callable[..., int] | None:
    """libc's syscall(), resolved in arena's process (the child between fork and exec only calls it)."""
    try:
        function = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_long
    return function


def _new_session_keyring() -> None:
    """Join a new session keyring of the process's own (in the child before exec)."""
    number, syscall = _KEYCTL.get(platform.machine()), _syscall()
    if number is not None and syscall is not None:
        syscall(ctypes.c_long(number), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None))


def _drop_to(uid: int) -> list[str]:
    """The command prefix that leaves root for good before the bot's program runs."""
    return [
        _SETPRIV,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


# The sandbox hands the bot its pipes as extra descriptors, and this moves them to 0, 1 and 2 inside: so no
# process of bubblewrap's holds the bot's stdout, and a bot that closes it is seen to close it at once.
# bash, not sh: dash takes no descriptor above 9 in a redirection.
_STDIO = 'exec 0<&{0} 1>&{1} 2>&{2} {0}<&- {1}>&- {2}>&-; exec "$@"'
_SHELL = "/bin/bash"


PROBE_MB = 64  # the memory sandbox_problem's probe is sized for: `true` needs next to nothing


def sandbox_problem() -> str | None:
    """None if bubblewrap runs here, else why not (in words for the terminal and the report)."""
    found = bwrap.find()
    if found.path is None:
        return f"{found.problem}: bots run without a sandbox ({bwrap.INSTALL})"
    if not os.path.exists(_SHELL):
        return f"{_SHELL} is not installed: bots run without a sandbox (it hands a sandboxed bot its pipes)"
    try:
        root = os.geteuid() == 0
        probe = [*_bwrap_base(PROBE_MB, root), *(_drop_to(UID_BASE) if root else []), "true"]
        done = subprocess.run(probe, capture_output=True, timeout=10, env=environment(PROBE_MB))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not run here ({e}): bots run without a sandbox"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        reason = why[-1] if why else f"exit code {done.returncode}"
        return f"bubblewrap does not work here ({reason}): bots run without a sandbox"
    return None


def _reachable_by_others(path: str) -> bool:
    """Whether a user of no group could reach and run `path`: every folder above it searchable."""
    target = Path(os.path.realpath(path))
    return all(os.stat(p).st_mode & 0o001 for p in target.parents) and bool(os.stat(target).st_mode & 0o005)


# --- cgroups --------------------------------------------------------------------------------------------


def _own_cgroups() -> dict[str, Path]:
    """This process's cgroup folder per controller ('unified' for v2), from /proc/self/cgroup."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":
            for mount in (_CGROUP_FS, _CGROUP_FS / "unified"):
                if (mount / "cgroup.controllers").exists():
                    found["unified"] = mount / rel
                    break
        for controller in controllers.split(","):
            if controller in ("memory", "pids", "freezer", "cpu") and (_CGROUP_FS / controller).is_dir():
                found[controller] = _CGROUP_FS / controller / rel
    return found


# Every bot process's share of the CPU: at most one CPU, whatever it starts (a bot whose processes spin in
# sessions of their own would take the other game's core), and the same weight as every other bot.
CPU_PERIOD_US = 100_000
CPU_QUOTA_US = CPU_PERIOD_US  # one CPU
CPU_SHARES = 1024  # v1's default weight; v2's cpu.weight 100 is the same
CPU_WEIGHT = 100


class Cgroups:
    """A folder per bot process in the memory, pids, freezer and cpu controllers (cgroup v1), or one
    folder (v2)."""

    def __init__(self, folders: list[Path], v2: bool) -> None:
        self.folders = folders
        self.v2 = v2
        # The event files the limit checks read, kept open and read again from offset 0: a look is then one
        # pread, not a path lookup, an open and a close (~40 us for both files, twice a game and on every
        # wake-up of a waiting referee). None: the file does not exist here.
        self._events: dict[str, int | None] = {}
        self._controls: dict[str, int | None] = {}  # the freezer's control file, kept open likewise

    @classmethod
    def parent(cls, tag: str) -> Cgroups | None:
        """Make (or reuse) arena's own parent cgroups, or None where this machine does not allow it."""
        own = _own_cgroups()
        unified = own.get("unified")
        if unified is not None:
            enabled = (unified / "cgroup.controllers").read_text().split() if unified.exists() else []
            if {"memory", "pids"} <= set(enabled):
                return cls._make([unified / tag], v2=True, cpu="cpu" in enabled)
        if "memory" in own and "pids" in own:
            folders = [own[c] / tag for c in ("memory", "pids", "freezer") if c in own]
            made = cls._make(folders, v2=False)
            if made is not None and "cpu" in own:  # where arena may, not required
                with contextlib.suppress(OSError):
                    (own["cpu"] / tag).mkdir(exist_ok=True)
                    made.folders.append(own["cpu"] / tag)
                made._weigh()
            return made
        return None

    def _weigh(self) -> None:
        """Give arena's parent cgroup the weight of one busy process per core beside the machine's other
        processes: its bots together weigh what they weighed as processes of their own, at most one
        thinking per core (without it, all of them would weigh one process on a busy machine)."""
        cores = os.cpu_count() or 1
        with contextlib.suppress(OSError):
            if self.v2:
                self._write("cpu.weight", min(10_000, CPU_WEIGHT * cores), required=False)
            else:
                self._write("cpu.shares", CPU_SHARES * cores, required=False)

    @classmethod
    def _make(cls, folders: list[Path], v2: bool, cpu: bool = False) -> Cgroups | None:
        try:
            for folder in folders:
                folder.mkdir(exist_ok=True)
            if v2:
                (folders[0] / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            return None
        made = cls(folders, v2)
        if v2 and cpu:
            with contextlib.suppress(OSError):  # the cpu controller where the parent lets arena have it
                (folders[0] / "cgroup.subtree_control").write_text("+cpu")
                made._weigh()
        return made

    @property
    def limits_cpu(self) -> bool:
        """Whether each bot here is held to one CPU (a cpu controller arena could use)."""
        if self.v2:
            return any("cpu" in self._text(f / "cgroup.subtree_control").split() for f in self.folders)
        return any((f / "cpu.cfs_quota_us").exists() for f in self.folders)

    @staticmethod
    def _text(path: Path) -> str:
        try:
            return path.read_text()
        except OSError:
            return ""

    @classmethod
    def weighted(cls, tag: str, weight: int) -> Cgroups | None:
        """A cgroup of the cpu controller alone, `tag` beside arena's bots' parents, whose processes together
        weigh `weight` (v2's cpu.weight; v1's cpu.shares alike): for what must come before the games, as a
        server's pages do. None where this machine does not let arena make one."""
        own = _own_cgroups()
        if "cpu" in own:  # v1's cpu hierarchy (also where a v2 one without controllers is mounted beside)
            made = cls([own["cpu"] / tag], v2=False)
            name, value = "cpu.shares", weight * CPU_SHARES // CPU_WEIGHT
        elif "unified" in own:
            made = cls([own["unified"] / tag], v2=True)
            name, value = "cpu.weight", min(10_000, weight)
        else:
            return None
        try:
            made.folders[0].mkdir(exist_ok=True)
            made._write(name, value)
        except OSError:
            made.remove()
            return None
        return made

    def join(self) -> None:
        """Move the calling process in (a child before exec: its children are then born inside)."""
        pid = str(os.getpid()).encode()
        for path in self.procs_files():
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def child(self, name: str, memory_bytes: int, max_procs: int) -> Cgroups | None:
        made = Cgroups([f / name for f in self.folders], self.v2)
        try:
            for folder in made.folders:
                folder.mkdir(exist_ok=True)
            if self.v2:
                made._write("memory.max", memory_bytes)
                made._write("memory.swap.max", 0, required=False)
                made._write("pids.max", max_procs)
                made._write("cpu.max", f"{CPU_QUOTA_US} {CPU_PERIOD_US}", required=False)
                made._write("cpu.weight", CPU_WEIGHT, required=False)
            else:
                made._write("memory.limit_in_bytes", memory_bytes)
                made._write("memory.memsw.limit_in_bytes", memory_bytes, required=False)
                made._write("pids.max", max_procs)
                made._write("cpu.cfs_period_us", CPU_PERIOD_US, required=False)
                made._write("cpu.cfs_quota_us", CPU_QUOTA_US, required=False)
                made._write("cpu.shares", CPU_SHARES, required=False)
        except OSError:
            made.remove()
            return None
        return made

    def _write(self, name: str, value: int | str, required: bool = True) -> None:
        for folder in self.folders:
            target = folder / name
            if target.exists():
                target.write_text(str(value))
                return
        if required:
            raise OSError(f"no {name} in {self.folders}")

    def _read(self, name: str) -> str:
        for folder in self.folders:
            with contextlib.suppress(OSError):
                return (folder / name).read_text()
        return ""

    def _read_event(self, name: str) -> str:
        """The current text of an event file (cgroup files are generated afresh by each read at offset 0)."""
        if name not in self._events:
            fd = None
            for folder in self.folders:
                with contextlib.suppress(OSError):
                    fd = os.open(folder / name, os.O_RDONLY | os.O_CLOEXEC)
                    break
            self._events[name] = fd
        fd = self._events[name]
        if fd is None:
            return ""
        try:
            return os.pread(fd, 4096, 0).decode()
        except OSError:
            return ""

    def _close_events(self) -> None:
        for fd in [*self._events.values(), *self._controls.values()]:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._events.clear()
        self._controls.clear()

    def freeze(self, frozen: bool) -> bool:
        """Freeze (or thaw) every process of the bot at once; False where this machine has no freezer."""
        if self.v2:
            name, value = "cgroup.freeze", "1" if frozen else "0"
        else:
            name, value = "freezer.state", "FROZEN" if frozen else "THAWED"
        if name not in self._controls:
            self._controls[name] = next(
                (os.open(f / name, os.O_WRONLY | os.O_CLOEXEC) for f in self.folders if (f / name).exists()),
                None,
            )
        fd = self._controls[name]
        if fd is None:
            return False
        try:
            os.pwrite(fd, value.encode(), 0)
        except OSError:
            return False
        return True

    @property
    def can_freeze(self) -> bool:
        return any((f / ("cgroup.freeze" if self.v2 else "freezer.state")).exists() for f in self.folders)

    def procs_files(self) -> list[str]:
        return [str(f / "cgroup.procs") for f in self.folders]

    def pids(self) -> list[int]:
        return [int(p) for p in self._read("cgroup.procs").split()]

    def tasks(self) -> int | None:
        """Processes and threads now, as the pids controller counts them for `max_procs`; None if unknown."""
        text = self._read("pids.current").strip()
        return int(text) if text.isdigit() else None

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        text = self._read_event("memory.events" if self.v2 else "memory.oom_control")
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def peak_bytes(self) -> int | None:
        """The most memory the bot's processes ever held together (v1 memory.max_usage_in_bytes, v2
        memory.peak); None where the kernel does not keep it (v2 before Linux 5.19)."""
        text = self._read("memory.peak" if self.v2 else "memory.max_usage_in_bytes").strip()
        return int(text) if text.isdigit() else None

    def hit_process_limit(self) -> bool:
        text = self._read_event("pids.events")
        return any(line.split() and line.split()[-1] != "0" for line in text.splitlines())

    def kill(self) -> None:
        self.freeze(False)  # a frozen process does not die of SIGKILL until it is thawed
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the folders (only possible once empty); True when all are gone."""
        self._close_events()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()
        return not any(folder.exists() for folder in self.folders)

    def sweep_stale(self) -> None:
        """End and remove what arena processes that were killed (kill -9) left: the bots in 'arena-PID'
        folders of dead PIDs, frozen ones too. A bot's folders in every hierarchy are released as one, so
        that v1's freezer thaws it before the kill: a frozen process dies of SIGKILL only once thawed."""
        stale: dict[str, list[Path]] = {}
        for folder in self.folders:
            for old in folder.parent.glob("arena-*"):
                pid = old.name.split("-")[1]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    stale.setdefault(old.name, []).append(old)
        bots = [
            Cgroups([old / bot for old in olds], self.v2)
            for olds in stale.values()
            for bot in sorted({child.name for old in olds for child in old.glob("bot-*")})
        ]
        # Every stale bot thawed and killed first, then one wait for them all: a worker restarted after a
        # kill -9 may find dozens of frozen bots, and waiting for each in turn kept it out for minutes.
        for group in bots:
            group.kill()
        deadline = time.monotonic() + 2.0
        while (bots := [g for g in bots if not g.remove()]) and time.monotonic() < deadline:
            for group in bots:
                group.kill()
            time.sleep(0.005)
        for olds in stale.values():
            for old in olds:
                with contextlib.suppress(OSError):
                    old.rmdir()

    def release(self, patience: float = 2.0) -> None:
        """Kill every process in the cgroup and remove it, waiting for the dead to be reaped."""
        deadline = time.monotonic() + patience
        while True:
            self.kill()
            if self.remove() or time.monotonic() > deadline:
                return
            time.sleep(0.005)


# --- one bot process --------------------------------------------------------------------------------------


class Jail:
    """The confinement of one bot process: its command line and environment, what the child does before
    exec, pausing, and its processes. Made by a `Warden`, which owns the parent cgroup."""

    def __init__(
        self,
        conf: Confinement,
        cgroups: Cgroups | None,
        own: Path,
        limit: str = "--memory",
    ) -> None:
        self.conf = conf
        self.cgroups = cgroups
        self.own = own  # the bot's file or folder: the one part of the bots folder it sees
        self.limit = limit  # what set conf.memory_mb: --memory, its bot.toml's memory, --max-memory
        # A uid of its own: a bot that is not root cannot read root's files, change a mount or a cgroup,
        # and (without cgroups) its processes count against no other bot's RLIMIT_NPROC.
        self.uid = UID_BASE + secrets.randbelow(1 << 30) if conf.drop_root else None
        self.passed: list[int] = []  # descriptors the sandboxed child inherits: its seccomp filter
        self.staged: Path | None = (
            None  # the copy of its files the sandbox shows at /bot (arena/match/stage.py)
        )
        _syscall()  # resolved here, not in the child

    def _seccomp(self) -> list[str]:
        """bubblewrap's option that loads the seccomp filter (arena/match/seccomp.py), if there is one."""
        fd = seccomp.program_fd()
        if fd is None:
            return []
        self.passed.append(fd)
        return ["--seccomp", str(fd)]

    def close_passed(self) -> None:
        """Close arena's copies of the descriptors handed to the child, once it has started."""
        for fd in self.passed:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.passed.clear()

    def command(self, argv: Sequence[str], cwd: Path, stdio: tuple[int, int, int]) -> list[str]:
        """The command that runs `argv` confined, the bot's stdin, stdout and stderr being the descriptors
        `stdio` when sandboxed (bubblewrap's own processes then never hold them)."""
        prefix = _drop_to(self.uid) if self.uid is not None else []
        if not self.conf.sandbox:
            return [*prefix, *argv]
        args = _bwrap_base(self.conf.memory_mb, self.uid is not None, set(), self.conf.read_only)
        if self.staged is None:
            self.staged = stage.copy(self.own)
        args += [*stage.binds(self.own, self.staged), *self._seccomp()]
        shim = [_SHELL, "-c", _STDIO.format(*stdio), "arena-bot"]
        inside = [stage.inside(self.own, word) for word in argv]
        return [*args, "--chdir", stage.INSIDE, "--", *prefix, *shim, *inside]

    def build_command(self, argv: Sequence[str], copy: Path) -> list[str]:
        """The command that runs a bot's build step `argv` confined as the bot is, but in `copy`, a copy of
        its folder that the build's user may write, shown at /bot as the bot's files are when it plays (so
        paths look the same). Without the sandbox it runs in `copy` itself."""
        prefix = _drop_to(self.uid) if self.uid is not None else []
        if not self.conf.sandbox:
            return [*prefix, *argv]
        args = _bwrap_base(self.conf.memory_mb, self.uid is not None, set(), self.conf.read_only)
        args += ["--bind", str(copy), stage.INSIDE, *self._seccomp()]
        return [*args, "--chdir", stage.INSIDE, "--", *prefix, *argv]

    def environment(self) -> dict[str, str]:
        return environment(self.conf.memory_mb)

    def preexec(self) -> None:
        """Runs in the child between fork and exec: limits, no new privileges, then into the bot's cgroups
        (frozen or not, as the bot is at that moment)."""
        memory = self.conf.memory_mb * MiB
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.uid is not None:
            # The bot's own uid, once setpriv has changed to it, counts the bot's processes alone (root
            # ignores the limit). Never for an ordinary user's bots: it counts every task of the user, so
            # one bot holding threads, or a desktop session, would keep the others from starting.
            resource.setrlimit(resource.RLIMIT_NPROC, (self.conf.max_procs, self.conf.max_procs))
        _new_session_keyring()
        if self.cgroups is not None:
            self.cgroups.join()

    def freeze(self, frozen: bool) -> bool:
        """Pause (or resume) every process of the bot; False where only signals can (no freezer here)."""
        return self.cgroups.freeze(frozen) if self.cgroups is not None else False

    def pids(self) -> list[int]:
        return self.cgroups.pids() if self.cgroups else []

    def _limit(self) -> str:
        return f"memory limit of {self.conf.memory_mb} MiB ({self.limit})"

    def _peak(self) -> str:
        peak = self.cgroups.peak_bytes() if self.cgroups is not None else None
        return "" if peak is None else f"; it held {round(peak / MiB)} MiB at its peak"

    def breach(self) -> str:
        """Which limit the bot has run into ('' if none): the kernel refused it memory or processes."""
        if self.cgroups is None:
            return ""
        if self.cgroups.oom_kills():
            return f"out of memory: it went over the {self._limit()}, and the kernel killed it{self._peak()}"
        if self.cgroups.hit_process_limit():
            return f"it tried to run more than {self.conf.max_procs} processes at once (--max-procs)"
        return ""

    def memory_verdict(self, evidence: str) -> str:
        """Whether the bot's fault was its memory running out, asked of the kernel first: the cgroup's OOM
        kills, then what the bot wrote on the way out (`evidence`: its stderr tail and unread stdout; a JVM
        says "insufficient memory" on stdout, Python's MemoryError in a thread goes to stderr, and the bot
        may hang after it). '' when memory had no part in it; else the detail, naming the limit and the
        peak use where the kernel keeps it."""
        if self.cgroups is not None and self.cgroups.oom_kills():
            return f"out of memory: it went over the {self._limit()}, and the kernel killed it{self._peak()}"
        lines = evidence.splitlines()
        said = next((line for word in _OUT_OF_MEMORY for line in lines if word in line), "")
        if not said:
            return ""
        said = said.strip(" #\t")
        said = said if len(said) <= 100 else said[:100] + "..."
        return f"out of memory: it ran out under the {self._limit()}{self._peak()}; it said {said!r}"

    def release(self) -> None:
        """End every process of the bot (also those that left its process group), free the cgroups and
        remove the copy of its files."""
        if self.cgroups is not None:
            self.cgroups.release()
        stage.remove(self.staged)
        self.staged = None


class Warden:
    """Hands out jails for one tournament (or one `arena play`); `close` removes the cgroups it made."""

    def __init__(self, conf: Confinement) -> None:
        self.conf = conf
        self._names = count(1)
        # arena-PID-RANDOM: the PID lets a later arena sweep what a killed one left; RANDOM keeps two
        # wardens of one process (library use, tests) from sharing limits or killing each other's bots.
        self._parent = Cgroups.parent(f"arena-{os.getpid()}-{secrets.token_hex(4)}")
        if self._parent is not None:
            self._parent.sweep_stale()
        if conf.sandbox:
            stage.sweep()

    @property
    def has_cgroups(self) -> bool:
        return self._parent is not None

    def jail(self, own: Path, memory_mb: int | None = None) -> Jail:
        """A jail for one process of the bot at `own`, which may also read the teacher's read-only paths,
        with the bot's own memory allowance `memory_mb` (bot.toml `memory`, up to the teacher's cap)
        instead of the tournament's."""
        mb, limit = self.conf.memory_of(memory_mb)
        conf = replace(self.conf, memory_mb=mb)
        cgroups = None
        if self._parent is not None:
            cgroups = self._parent.child(f"bot-{next(self._names)}", conf.memory_mb * MiB, conf.max_procs)
        return Jail(conf, cgroups, own, limit)

    @property
    def can_freeze(self) -> bool:
        return self._parent is not None and self._parent.can_freeze

    @property
    def limits_cpu(self) -> bool:
        return self._parent is not None and self._parent.limits_cpu

    def close(self) -> None:
        if self._parent is not None:
            self._parent.remove()


def _shared_user_note() -> str:
    """What an ordinary user's bots share without the sandbox: they are that user. A fresh session keyring
    each does not part them: the user keyring (keyctl @u) belongs to the uid (in the sandbox, to the uid in
    the sandbox's own user namespace, so each bot has its own), and no call of arena's can take it away."""
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = f"uid {os.geteuid()}"
    return (
        f"bots run as you ({user}) without a sandbox: they can read your files and share your user keyring "
        "(keyctl @u), so a key your session or one bot leaves there reaches every bot; run with the sandbox, "
        "or as root (each bot then runs as a user id of its own)"
    )


def capabilities(conf: Confinement, want_sandbox: bool) -> tuple[Confinement, Capabilities]:
    """Resolve what is asked against what the machine can do, and say plainly what is missing."""
    notes = []
    sandbox = False
    root = os.geteuid() == 0
    if want_sandbox:
        problem = sandbox_problem()
        sandbox = problem is None
        if problem:
            notes.append(problem)
    else:
        notes.append("sandbox off (--no-sandbox): bots can read other bots' files and use the network")
    if sandbox and seccomp.problem():
        notes.append(seccomp.problem())
    granted: list[str] = []
    for path in conf.read_only:  # checked before (arena.api), but a cluster's machine may differ
        try:
            granted += grant([path])
        except GrantError as e:
            notes.append(f"{e}: bots here do not see it")
    drop_root = False
    if root:
        # Without the sandbox a bot's own uid must reach arena's Python by the ordinary file permissions.
        reachable = sandbox or all(_reachable_by_others(p) for p in (sys.executable, __file__))
        drop_root = shutil.which(_SETPRIV) is not None and reachable
        if not drop_root:
            why = "setpriv (util-linux) is not installed"
            if not reachable:
                why = "arena's Python is not readable by other users"
            notes.append(f"arena runs as root and {why}: bots run as root, with root's privileges")
    elif not sandbox:
        notes.append(_shared_user_note())
    probe = Warden(conf)
    cgroups, freezer, cpu = probe.has_cgroups, probe.can_freeze, probe.limits_cpu
    probe.close()
    if not cgroups:
        notes.append(
            "no cgroups available: memory is limited per process (RLIMIT_DATA), not per bot; a paused bot's "
            "processes that left its session are not paused; processes that leave a bot's process group may "
            "outlive it"
            + (
                ""
                if drop_root
                else "; processes are not bounded per bot (--max-procs is not enforced: it needs a pids "
                "cgroup, or bots that run as user ids of their own, as under root)"
            )
        )
    elif not freezer:
        notes.append("no cgroup freezer: a paused bot's processes that left its session keep running")
    if not cpu:
        notes.append(
            "no cpu cgroup: a bot is not held to one CPU, so one whose processes spin (also ones that left "
            "its session) can slow the bots of the other games on this machine"
        )
    resolved = replace(conf, sandbox=sandbox, drop_root=drop_root, read_only=tuple(granted))
    return resolved, Capabilities(sandbox, cgroups, tuple(notes))
