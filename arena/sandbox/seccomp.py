"""The system calls no bot may make: a seccomp filter that bubblewrap loads before the bot's program runs.

What container runtimes deny by default (Docker's profile, as a deny list), answered EPERM: the kernel
surface behind most container escapes and the calls that reach past the sandbox. New user namespaces (and
with them every other kind: `unshare`, `setns`, `clone` with a CLONE_NEW* flag; `clone3`, whose flags sit
in memory a filter cannot read, answers ENOSYS, so that the C library falls back to `clone`), the kernel's
keyrings (a session keyring shared with arena would hand a bot its keys), io_uring, userfaultfd, perf,
bpf, ptrace and process_vm_*, mounting, kexec and modules, and the machine's clock, swap, accounting and
reboot. A bot of another architecture's calling convention (i386 `int 0x80` on x86_64, x32) is killed.

Beyond Docker's list, two narrowings no bot needs more than: a socket of any family but AF_UNIX answers
EAFNOSUPPORT, as from a kernel without that family (the sandbox has no network; vsock, netlink, packet,
AF_ALG and the rest are kernel surface, and vsock's ports are shared by every sandbox and the hypervisor;
a KGP agent also makes TCP sockets, which reach only its sandbox's own loopback, where arena's relay is),
and `personality` takes only the values Docker's profile allows (Linux, UNAME26, PER_LINUX32, the query):
no READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE or MMAP_PAGE_ZERO for the program a bot starts next.

Where no cgroup holds a bot's memory (an ordinary user's arena), RLIMIT_DATA counts only private memory, and
a bot held gigabytes of shared memory past it. There the filter also answers ENOMEM (as when memory runs
out) to the ways of making shared memory outside a sized tmpfs: memfd_create, SysV shmget, and mmap with
MAP_SHARED|MAP_ANONYMOUS. POSIX shared memory (/dev/shm, as Python's multiprocessing uses it) stays, in its
tmpfs of a set size. It refuses too what RLIMIT_DATA counts as stack, not data: mmap with MAP_GROWSDOWN
(three 1 GiB regions were held under a 512 MiB limit) and mremap, which grows a stack region in place past
RLIMIT_STACK (the C library's realloc falls back to copying); the one stack a process has is held by
RLIMIT_STACK, set from the limit (arena/sandbox/jail.py).

In every mode, what holds memory or disk where no limit counts it, and no bot needs: extended attributes
(setxattr and its kin answer EOPNOTSUPP, as on a filesystem without them: on a tmpfs their bytes count
toward neither a file's size nor the tmpfs's), and fallocate with FALLOC_FL_KEEP_SIZE but not
FALLOC_FL_PUNCH_HOLE (EOPNOTSUPP), which allocates past a file's end, where neither its size nor
RLIMIT_FSIZE sees the pages (a build held 4 GiB of /dev/shm so). Punching a hole, and fallocate growing a
file (posix_fallocate's mode), stay.

Built with libseccomp (through pyseccomp's ctypes binding): the library Docker, podman, systemd and
bubblewrap's own users build their filters with, which knows every architecture's syscall numbers and its
ABI quirks (x32 on x86_64), where a hand-assembled BPF program would carry its own tables. A machine
without libseccomp runs bots without the filter, and arena says so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import socket

# Every flag of clone() that makes a new namespace (linux/sched.h): a bot stays in the sandbox's.
_CLONE_NEW = {
    "CLONE_NEWTIME": 0x00000080,
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
DENIED = (
    # namespaces: a user namespace gives a process every capability over a world of its own
    "unshare",
    "setns",
    # the kernel's keyrings: a session keyring inherited from arena, keys another bot left
    "keyctl",
    "add_key",
    "request_key",
    # kernel surfaces behind most escapes
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "perf_event_open",
    "bpf",
    # other processes' memory
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    # mounts
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "chroot",
    # files by handle, past every path check
    "open_by_handle_at",
    "name_to_handle_at",
    # the machine
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "vhangup",
    "nfsservctl",
)


# The one socket family a bot may make (socket() and socketpair()): pipes between its own processes.
ALLOWED_FAMILY = socket.AF_UNIX
# What a KGP agent may make besides: TCP to arena's relay, inside the sandbox's own network namespace, whose
# one interface is its private loopback (bubblewrap's --unshare-net), so nothing leaves the sandbox by it.
LOOPBACK_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
# What a socket may queue is its sender's SO_SNDBUF (up to twice net.core.wmem_max: 8 MiB a socket here), and
# a listening socket or a bound datagram one takes from many senders (a listener's backlog, the datagram
# queue): no memory limit but a cgroup counts any of it. So a bot makes no socket but a connected pair of
# streams (socketpair: asyncio's and multiprocessing.Pipe's), each one receiving from its peer alone, whose
# buffers stay the host's default (SO_SNDBUF and kin are answered as set and left alone), and a process has
# at most NOFILE descriptors (jail.py): about 0.3 MiB queued a descriptor. A pipe's buffer stays at most
# its default too (F_SETPIPE_SZ refused: up to 1 MiB each, else).
_SOCK_TYPE = 0xF  # the type's bits of socketpair()'s second argument; SOCK_NONBLOCK and SOCK_CLOEXEC above
BUFFER_OPTIONS = (socket.SO_SNDBUF, socket.SO_RCVBUF, 32, 33)  # and SO_SNDBUFFORCE, SO_RCVBUFFORCE
F_SETPIPE_SZ = 1031
# A listening socket (a KGP agent's sandbox: arena's relay listens there, with a backlog of 1) holds what
# each connection not yet accepted was sent: its backlog is held under 8 (listen() past it is refused).
LISTEN_BACKLOG = 7
# Descriptors a bot's process may hold (RLIMIT_NOFILE): a JVM starts with 7, node with 20, a Python pool of
# four workers with a few more; a build's compilers (javac, make, go) get more, for a time.
NOFILE = 64
BUILD_NOFILE = 256


# personality()'s values Docker's default profile allows: PER_LINUX, UNAME26, PER_LINUX32 (with UNAME26),
# and 0xffffffff, which only asks for the current one.
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
_PERSONALITY_BITS = 0x20008  # the bits of the values above, the query aside


def personality_denials() -> list[tuple[str, int, int]]:
    """Rules (each one comparison of the argument: "GT", value, 0 or "MASKED_EQ", mask, datum) that together
    match every personality() argument but `PERSONALITIES`: libseccomp takes one comparison per argument in a
    rule, so "none of these five" is written as a union. Past 32 bits: GT 0xffffffff. Below: a value is
    refused when it sets a bit outside `_PERSONALITY_BITS` (b) and clears some bit (c), which the query does
    not: a rule "b set, c clear" for each b and the next free bit in a ring (every split of the free bits
    into set and clear has a rule across it), and two more for a value whose only clear bits are 3 and 17."""
    free = [bit for bit in range(32) if not _PERSONALITY_BITS >> bit & 1]
    pairs = [(b, free[(i + 1) % len(free)]) for i, b in enumerate(free)]
    pairs += [(free[0], bit) for bit in range(32) if _PERSONALITY_BITS >> bit & 1]
    return [("GT", 0xFFFFFFFF, 0)] + [("MASKED_EQ", 1 << b | 1 << c, 1 << b) for b, c in pairs]


# mmap's flags that make anonymous shared memory (MAP_SHARED_VALIDATE, 0x03, holds MAP_SHARED's bit too).
_MAP_SHARED_ANONYMOUS = 0x01 | 0x20
MAP_GROWSDOWN = 0x0100  # a region the kernel counts as stack: RLIMIT_DATA passes it over
UNSHARED = ("memfd_create", "shmget", "mremap")  # and mmap with _MAP_SHARED_ANONYMOUS or MAP_GROWSDOWN
# Extended attributes: their bytes are kernel memory no file size or tmpfs size counts (setxattrat: 6.13).
XATTR_SETTERS = ("setxattr", "lsetxattr", "fsetxattr", "setxattrat")
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02


def family_denials(allowed: tuple[int, ...]) -> list[tuple[str, int]]:
    """Rules (each one comparison of socket()'s family: "GT" or "EQ", value) that together match every
    family but `allowed`: libseccomp takes one comparison per argument in a rule, so "none of these" is
    everything above the largest and each value below it that is not allowed."""
    top = max(allowed)
    return [("GT", top)] + [("EQ", family) for family in range(top) if family not in allowed]


@functools.cache
def _built() -> tuple[bytes, str]:
    """The filter as a BPF program for this machine's architecture, or b"" and why there is none."""
    return _build(shared_memory=True)


@functools.cache
def _built_for(shared_memory: bool, loopback: bool) -> tuple[bytes, str]:
    """The filter for a bot whose memory no cgroup holds (`shared_memory` False: no shared memory outside
    a sized tmpfs either), or for a KGP agent (`loopback`: TCP on its own private loopback too)."""
    return _build(shared_memory=shared_memory, loopback=loopback)


def _build(shared_memory: bool, loopback: bool = False) -> tuple[bytes, str]:
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as e:  # RuntimeError: pyseccomp finds no libseccomp
        return b"", f"no seccomp filter for bots ({e}; apt-get install libseccomp2)"
    deny = sc.ERRNO(errno.EPERM)
    bpf = sc.SyscallFilter(sc.ALLOW)
    with contextlib.suppress(OSError):  # a foreign architecture's call kills the process (not a thread)
        bpf.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for name in DENIED:
        try:
            bpf.add_rule(deny, name)
        except (OSError, ValueError):  # a call this kernel's architecture or this libseccomp lacks
            continue
    with_flag = ((name, flag) for name in ("clone",) for flag in _CLONE_NEW.values())
    for name, flag in with_flag:
        bpf.add_rule(deny, name, sc.Arg(0, sc.MASKED_EQ, flag, flag))
    try:
        bpf.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (OSError, ValueError):
        pass
    for name in ("socket", "socketpair"):  # compared as 64 bits: junk above a family's int is refused too
        if loopback:
            for op, family in family_denials(LOOPBACK_FAMILIES):
                bpf.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), name, sc.Arg(0, getattr(sc, op), family))
        elif name == "socket":  # a bot's one use of sockets is a pair (asyncio's, multiprocessing.Pipe's)
            bpf.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), name)
        else:
            bpf.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), name, sc.Arg(0, sc.NE, ALLOWED_FAMILY))
    for kind in range(_SOCK_TYPE + 1):  # a pair of streams only: nothing else reaches a datagram's queue
        if kind != socket.SOCK_STREAM:
            kinds = sc.Arg(1, sc.MASKED_EQ, _SOCK_TYPE, kind)
            bpf.add_rule(sc.ERRNO(errno.EPROTONOSUPPORT), "socketpair", kinds)
    for option in BUFFER_OPTIONS:  # answered as done, not done: the buffer stays the host's default
        level, name = sc.Arg(1, sc.EQ, socket.SOL_SOCKET), sc.Arg(2, sc.EQ, option)
        bpf.add_rule(sc.ERRNO(0), "setsockopt", level, name)
    bpf.add_rule(deny, "fcntl", sc.Arg(1, sc.EQ, F_SETPIPE_SZ))  # as past the user's pipe quota
    for bit in range(LISTEN_BACKLOG.bit_length(), 32):  # a backlog past it (or negative: the most there is)
        bpf.add_rule(deny, "listen", sc.Arg(1, sc.MASKED_EQ, 1 << bit, 1 << bit))
    for op, value, datum in personality_denials():
        bpf.add_rule(deny, "personality", sc.Arg(0, getattr(sc, op), value, datum))
    unsupported = sc.ERRNO(errno.EOPNOTSUPP)
    for name in XATTR_SETTERS:
        with contextlib.suppress(OSError, ValueError):  # setxattrat: a libseccomp that knows it
            bpf.add_rule(unsupported, name)
    mask = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
    bpf.add_rule(unsupported, "fallocate", sc.Arg(1, sc.MASKED_EQ, mask, FALLOC_FL_KEEP_SIZE))
    if not shared_memory:
        for name in UNSHARED:
            bpf.add_rule(sc.ERRNO(errno.ENOMEM), name)
        flags = sc.Arg(3, sc.MASKED_EQ, _MAP_SHARED_ANONYMOUS, _MAP_SHARED_ANONYMOUS)
        bpf.add_rule(sc.ERRNO(errno.ENOMEM), "mmap", flags)
        bpf.add_rule(sc.ERRNO(errno.ENOMEM), "mmap", sc.Arg(3, sc.MASKED_EQ, MAP_GROWSDOWN, MAP_GROWSDOWN))
    fd = os.memfd_create("arena-seccomp", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as out:
            bpf.export_bpf(out)
        return os.pread(fd, 1 << 20, 0), ""
    finally:
        os.close(fd)


def problem() -> str:
    """'' when bots get the filter here, else why not (for the terminal and the page)."""
    return _built()[1]


def program_fd(shared_memory: bool = True, loopback: bool = False) -> int | None:
    """A new descriptor holding the filter from its start, for bubblewrap's --seccomp (the caller passes
    it to the child and closes it); None where there is no filter. `shared_memory` False: the filter for a
    bot no cgroup holds; `loopback`: for a KGP agent, which reaches arena's relay by TCP on the sandbox's
    private loopback."""
    program, _ = _built()
    if not program:
        return None
    if loopback or not shared_memory:
        program = _built_for(shared_memory, loopback)[0] or program
    fd = os.memfd_create("arena-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
