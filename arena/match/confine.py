"""Confining a bot process: resource limits, an optional bubblewrap sandbox, and finding all its processes.

Three layers, each used where the machine offers it, and each reported so nobody is misled:
- rlimits, always: RLIMIT_DATA caps each process's writable memory (unlike an address-space limit it leaves
  the JVM's huge reservations alone), RLIMIT_NPROC bounds processes for a non-root user, no core dumps.
- a cgroup per bot process (v2, or v1's memory and pids hierarchies), where arena may create them: an exact
  memory limit for all of the bot's processes together, an exact process bound, and a list of every process
  of the bot, daemons that left its process group included, so that all of them can be ended.
- bubblewrap (`bwrap`), where installed and working: the bot sees the system read-only, its own file or
  folder read-only, a private /tmp, no network, and neither the other bots nor the tournament's files.
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from itertools import count
from pathlib import Path

MiB = 1024 * 1024
# What runtimes print when an allocation fails (Python, the JVM, C++, C, Go, Rust).
_OUT_OF_MEMORY = ("MemoryError", "OutOfMemoryError", "bad_alloc", "Cannot allocate memory", "out of memory")
_CGROUP_FS = Path("/sys/fs/cgroup")


@dataclass(frozen=True, slots=True)
class Confinement:
    """What every bot of a tournament may use. `sandbox` is only true once `resolve` found bwrap working."""

    memory_mb: int = 1024
    max_procs: int = 64
    sandbox: bool = False
    hidden: tuple[str, ...] = ()  # folders no bot may see (the bots folder, the tournament's folder)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this machine lets arena enforce; `notes` says plainly what is missing, for terminal and report."""

    sandbox: bool
    cgroups: bool
    notes: tuple[str, ...]


def _python_paths() -> list[str]:
    """Where arena's Python and arena itself live: bots need them (a .py bot runs on this Python,
    alphabeta imports arena), even when they sit under /tmp, which the sandbox replaces."""
    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.add(str(Path(__file__).resolve().parents[2]))  # the folder holding the arena package
    return sorted(p for p in paths if Path(p).resolve().is_relative_to("/tmp"))


def _bwrap_base() -> list[str]:
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in _python_paths():
        args += ["--ro-bind", path, path]
    return args + [
        "--unshare-all",
        "--die-with-parent",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "HOME",
        "/tmp",
    ]


def sandbox_problem() -> str | None:
    """None if bubblewrap runs here, else why not (in words for the terminal and the report)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: bots run without a sandbox (apt-get install bubblewrap)"
    try:
        done = subprocess.run([*_bwrap_base(), "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not run here ({e}): bots run without a sandbox"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        reason = why[-1] if why else f"exit code {done.returncode}"
        return f"bubblewrap does not work here ({reason}): bots run without a sandbox"
    return None


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
            if controller in ("memory", "pids") and (_CGROUP_FS / controller).is_dir():
                found[controller] = _CGROUP_FS / controller / rel
    return found


class Cgroups:
    """A folder per bot process in the memory and pids controllers (cgroup v1), or one folder (v2)."""

    def __init__(self, folders: list[Path], v2: bool) -> None:
        self.folders = folders
        self.v2 = v2
        # The event files the limit checks read, kept open and read again from offset 0: a look is then one
        # pread, not a path lookup, an open and a close (~40 us for both files, twice a game and on every
        # wake-up of a waiting referee). None: the file does not exist here.
        self._events: dict[str, int | None] = {}

    @classmethod
    def parent(cls, tag: str) -> Cgroups | None:
        """Make (or reuse) arena's own parent cgroups, or None where this machine does not allow it."""
        own = _own_cgroups()
        unified = own.get("unified")
        if unified is not None:
            enabled = (unified / "cgroup.controllers").read_text().split() if unified.exists() else []
            if {"memory", "pids"} <= set(enabled):
                return cls._make([unified / tag], v2=True)
        if "memory" in own and "pids" in own:
            return cls._make([own["memory"] / tag, own["pids"] / tag], v2=False)
        return None

    @classmethod
    def _make(cls, folders: list[Path], v2: bool) -> Cgroups | None:
        try:
            for folder in folders:
                folder.mkdir(exist_ok=True)
            if v2:
                (folders[0] / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            return None
        return cls(folders, v2)

    def child(self, name: str, memory_bytes: int, max_procs: int) -> Cgroups | None:
        made = Cgroups([f / name for f in self.folders], self.v2)
        try:
            for folder in made.folders:
                folder.mkdir(exist_ok=True)
            if self.v2:
                made._write("memory.max", memory_bytes)
                made._write("memory.swap.max", 0, required=False)
                made._write("pids.max", max_procs)
            else:
                made._write("memory.limit_in_bytes", memory_bytes)
                made._write("memory.memsw.limit_in_bytes", memory_bytes, required=False)
                made._write("pids.max", max_procs)
        except OSError:
            made.remove()
            return None
        return made

    def _write(self, name: str, value: int, required: bool = True) -> None:
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
        for fd in self._events.values():
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._events.clear()

    def procs_files(self) -> list[str]:
        return [str(f / "cgroup.procs") for f in self.folders]

    def pids(self) -> list[int]:
        return [int(p) for p in self._read("cgroup.procs").split()]

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        text = self._read_event("memory.events" if self.v2 else "memory.oom_control")
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def hit_process_limit(self) -> bool:
        text = self._read_event("pids.events")
        return any(line.split() and line.split()[-1] != "0" for line in text.splitlines())

    def kill(self) -> None:
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
        """Remove what arena processes that were killed (kill -9) left: 'arena-PID' folders of dead PIDs."""
        for folder in self.folders:
            for stale in folder.parent.glob("arena-*"):
                pid = stale.name.split("-")[1]
                if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                    continue
                for child in stale.glob("bot-*"):
                    Cgroups([child], self.v2).release()
                with contextlib.suppress(OSError):
                    stale.rmdir()

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
    """The confinement of one bot process: its command line, what the child does before exec, and its
    processes. Made by a `Warden`, which owns the parent cgroup."""

    def __init__(self, conf: Confinement, cgroups: Cgroups | None) -> None:
        self.conf = conf
        self.cgroups = cgroups

    def command(self, argv: tuple[str, ...], own: Path, cwd: Path) -> list[str]:
        """`argv` wrapped in bubblewrap when the sandbox is on: `own` (the bot's file or folder) is the only
        part of the hidden folders it sees, read-only."""
        if not self.conf.sandbox:
            return list(argv)
        args = _bwrap_base()
        for folder in self.conf.hidden:  # an empty folder in place of each hidden one ...
            args += ["--tmpfs", folder]
        args += ["--ro-bind", str(own), str(own)]  # ... with only the bot's own file or folder in it
        for folder in self.conf.hidden:
            args += ["--remount-ro", folder]
        return [*args, "--chdir", str(cwd), *argv]

    def preexec(self) -> None:
        """Runs in the child between fork and exec: limits, then into the bot's cgroups."""
        memory = self.conf.memory_mb * MiB
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; there the cgroup bounds processes
            resource.setrlimit(resource.RLIMIT_NPROC, (self.conf.max_procs, self.conf.max_procs))
        if self.cgroups is not None:
            pid = str(os.getpid()).encode()
            for path in self.cgroups.procs_files():
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)

    def pids(self) -> list[int]:
        return self.cgroups.pids() if self.cgroups else []

    def breach(self) -> str:
        """Which limit the bot has run into ('' if none): the kernel refused it memory or processes."""
        if self.cgroups is None:
            return ""
        if self.cgroups.oom_kills():
            return f"it went over the memory limit of {self.conf.memory_mb} MiB (--memory)"
        if self.cgroups.hit_process_limit():
            return f"it tried to run more than {self.conf.max_procs} processes at once (--max-procs)"
        return ""

    def why_it_died(self, stderr_tail: str) -> str:
        """What the limits say about a process that just died: '' when they had no part in it."""
        if breach := self.breach():
            return breach
        if any(word in stderr_tail for word in _OUT_OF_MEMORY):
            return f"it ran out of memory under the memory limit of {self.conf.memory_mb} MiB (--memory)"
        return ""

    def release(self) -> None:
        """End every process of the bot (also those that left its process group) and free the cgroups."""
        if self.cgroups is not None:
            self.cgroups.release()


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

    @property
    def has_cgroups(self) -> bool:
        return self._parent is not None

    def jail(self) -> Jail:
        cgroups = None
        if self._parent is not None:
            cgroups = self._parent.child(
                f"bot-{next(self._names)}", self.conf.memory_mb * MiB, self.conf.max_procs
            )
        return Jail(self.conf, cgroups)

    def close(self) -> None:
        if self._parent is not None:
            self._parent.remove()


def capabilities(conf: Confinement, want_sandbox: bool) -> tuple[Confinement, Capabilities]:
    """Resolve what is asked against what the machine can do, and say plainly what is missing."""
    notes = []
    sandbox = False
    if want_sandbox:
        problem = sandbox_problem()
        sandbox = problem is None
        if problem:
            notes.append(problem)
    else:
        notes.append("sandbox off (--no-sandbox): bots can read other bots' files and use the network")
    probe = Warden(conf)
    cgroups = probe.has_cgroups
    probe.close()
    if not cgroups:
        notes.append(
            "no cgroups available: memory is limited per process (RLIMIT_DATA), not per bot, and processes "
            "that leave a bot's process group may outlive it"
            + ("" if os.geteuid() != 0 else "; running as root, the process bound is not enforced")
        )
    resolved = Confinement(conf.memory_mb, conf.max_procs, sandbox, conf.hidden)
    return resolved, Capabilities(sandbox, cgroups, tuple(notes))
