"""Capability detection: what is asked, resolved against what this machine can enforce, and what is missing
said plainly for the terminal and the page."""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from arena.sandbox import seccomp
from arena.sandbox.command import _SETPRIV, counts_processes_per_namespace
from arena.sandbox.grants import GrantError, grant
from arena.sandbox.jail import Warden
from arena.sandbox.probe import sandbox_problem
from arena.sandbox.values import Capabilities, Confinement
from arena.sandbox.watch import MOST_FILES


def _reachable_by_others(path: str) -> bool:
    """Whether a user of no group could reach and run `path`: every folder above it searchable."""
    target = Path(os.path.realpath(path))
    return all(os.stat(p).st_mode & 0o001 for p in target.parents) and bool(os.stat(target).st_mode & 0o005)


# What holds shared memory (memfd, SysV, anonymous shared mappings: not RLIMIT_DATA's) where no cgroup does.
_SHARED_IN_SANDBOX = (
    "; shared memory is only files in the sandbox's /tmp (half the limit) and /dev/shm (a quarter): memfd, "
    "SysV, anonymous shared memory and stack regions (MAP_GROWSDOWN, mremap) are refused and a process's "
    "stack is held to a quarter of the limit (RLIMIT_STACK), but a shared mapping of /dev/zero is not counted"
)
_SHARED_WITHOUT_SANDBOX = "; shared memory (memfd, SysV, shared mappings, /dev/shm) is not bounded at all"
# What no limit but a cgroup counts, whatever the sandbox refuses: the kernel's own memory for a bot's pipes,
# sockets and files (measured on Linux 6.18: a socket pair's buffers about 0.3 MiB a descriptor at the
# host's default, a pipe's 64 KiB, a file about 1 KiB besides its blocks), and how to get a cgroup.
_KERNEL_MEMORY = (
    "; the kernel's memory for a bot's pipes and sockets is not counted (about 0.3 MiB a descriptor, "
    "{nofile} descriptors a process), nor that of its files in /tmp and /dev/shm (about 1 KiB each, at most "
    "{files} of them); to bound all of it as root does, run arena in a cgroup delegated to you: "
    "systemd-run --user --scope -p Delegate=yes arena ..."
)


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
                if drop_root or (sandbox and counts_processes_per_namespace())
                else "; processes are not bounded per bot (--max-procs is not enforced: it needs a pids "
                "cgroup, or bots that run as user ids of their own, as under root)"
            )
            + (_SHARED_IN_SANDBOX if sandbox else _SHARED_WITHOUT_SANDBOX)
            + ("" if root else _KERNEL_MEMORY.format(nofile=seccomp.NOFILE, files=MOST_FILES))
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
