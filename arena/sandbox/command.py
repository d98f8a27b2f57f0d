"""The bubblewrap command around a bot: namespaces, mounts, its pipes, and leaving root before it runs."""

from __future__ import annotations

import functools
import platform
import subprocess
from collections.abc import Sequence

from arena.sandbox import bwrap
from arena.sandbox.environment import _arena_paths, _ro_bind, _system_binds, environment
from arena.sandbox.values import MiB

_SETPRIV = "setpriv"


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
    args += ["--perms", "1777", "--size", shm, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    args += ["--proc", "/proc"]  # /dev read-only once its /dev/shm is made: device nodes still work
    args += _system_binds()
    made |= {"/tmp", "/dev", "/proc"}  # mounted above: not to be made again (or their modes changed)
    for path in _arena_paths():
        args += _ro_bind(path, made)
    return args


# Last of a sandbox's options, once every mount point is made: its root, the tmpfs bubblewrap makes and
# /bot's parent, read-only. A user's bot is that tmpfs's owner, and wrote gigabytes there (a tmpfs of no
# size, in memory no limit held); the writable places left are /tmp and /dev/shm, each of a set size.
SEALED = ("--remount-ro", "/")


@functools.cache
def _bwrap_options(path: str) -> str:
    """What this bubblewrap's --help lists (its options), '' if it does not answer."""
    try:
        return subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


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


def counts_processes_per_namespace() -> bool:
    """Whether this kernel counts RLIMIT_NPROC per user namespace (Linux 5.14 on, its ucounts): then a bot in
    a user namespace of its own (an ordinary user's sandbox) can be held to --max-procs by the limit alone,
    as its processes are all that count there. Before, the limit counted every process of the user."""
    try:
        major, minor = (int(part) for part in platform.release().split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def shim(stdio: tuple[int, int, int], max_procs: int | None) -> list[str]:
    """The shell that hands the bot its pipes, first holding it to `max_procs` processes and threads (both
    the soft and the hard limit, so the bot cannot lift it) where that is to be set inside the sandbox."""
    script = _STDIO.format(*stdio)
    if max_procs is not None:
        script = f"ulimit -u {max_procs} 2>/dev/null; {script}"  # a lower limit already set holds too
    return [_SHELL, "-c", script, "arena-bot"]


# A build step in its own tmpfs: the bot's files in from a tar, the step, then the tmpfs's use (block size,
# blocks, free blocks, inodes, free inodes) and a tar of what is there out. The step does not hold the
# descriptors; a step that fails still sends its files (arena reads the tmpfs's use, then drops them).
_BUILD = (
    'tar -xpf - -C {inside} <&{0} || exit 125; exec {0}<&-; "$@" </dev/null {1}>&-; code=$?; '
    'stat -f -c "%S %b %f %c %d" {inside} >&{1}; tar --format=posix -cf - -C {inside} . >&{1}; exit $code'
)


def build_shim(carry: tuple[int, int], inside: str) -> list[str]:
    """The shell around a build step in its tmpfs at `inside`: files in by descriptor carry[0] (a tar), and
    out by carry[1] after the step, as `_BUILD` says."""
    return [_SHELL, "-c", _BUILD.format(*carry, inside=inside), "arena-build"]
