"""What an ordinary user's bot and build hold past their limits where no cgroup counts memory (issue 40), in
real runs as uid 65534: regions the kernel counts as stack (mmap MAP_GROWSDOWN, a stack grown by mremap or
past RLIMIT_STACK), extended attributes, which no file size or tmpfs size counts, and, for a build, pages
allocated past a file's end (fallocate FALLOC_FL_KEEP_SIZE), empty files by the thousand and file names
with terminal escapes. Each attack logs what it held; the test holds it to the limit it was given."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_redteam
from test_redteam import LOOP, PRELUDE
from test_redteam_sandbox import FIRST, clean, place, tail, tournament

from arena.sandbox import seccomp

mode, workdir = test_redteam.mode, test_redteam.workdir  # its fixtures: root and the ordinary user
MEMORY_MB = 256
PAGE_CACHE_MIB = 1  # the tolerance: what a filesystem may take beyond its size, rounding its blocks

REGIONS = """import ctypes, resource
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
C = ctypes
libc.mmap.argtypes = [C.c_void_p, C.c_size_t, C.c_int, C.c_int, C.c_int, C.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
FAILED = ctypes.c_void_p(-1).value
LIMIT = int(os.environ["ARENA_MEMORY_MB"]) << 20
KEPT = []
def growsdown():
    held = 0
    for _ in range(3):  # MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, each as large as the whole limit
        at = libc.mmap(None, LIMIT, 3, 0x02 | 0x20 | 0x100, -1, 0)
        if at in (None, FAILED):
            return held >> 20, ctypes.get_errno()
        ctypes.memset(at, 1, LIMIT)
        KEPT.append(at)
        held += LIMIT
    return held >> 20, 0
def grown():
    at = libc.mmap(None, 4096, 3, 0x02 | 0x20, -1, 0)
    moved = libc.mremap(at, 4096, 8192, 1)  # MREMAP_MAYMOVE
    return 0 if moved not in (None, FAILED) else ctypes.get_errno()
def stack():
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (OSError, ValueError):
        pass
    return resource.getrlimit(resource.RLIMIT_STACK)[1] >> 20
def attack():
    log("GROWSDOWN", *growsdown())
    log("MREMAP", grown())
    log("STACK", stack())
"""


def test_a_users_bot_holds_no_stack_regions_past_its_limit(mode: str, workdir: Path) -> None:
    """As the user, three MAP_GROWSDOWN regions as large as the limit (counted as stack, not data) are
    refused (ENOMEM), mremap too (it grows a stack region in place), and RLIMIT_STACK cannot be lifted
    past a quarter of the limit. As root, the bot's memory cgroup counts all of it (test_confine)."""
    if mode == "root":
        pytest.skip("root's bots are in a memory cgroup here, which counts every region (test_confine)")
    if seccomp.problem():
        pytest.skip(seccomp.problem())
    place(workdir / "bots", {"regions": PRELUDE + REGIONS + LOOP, "first": FIRST})
    done, games = tournament(mode, workdir, ["--memory", str(MEMORY_MB)])
    assert done.returncode == 0, done.stderr
    clean(games)
    log = tail(games, "regions")
    assert "GROWSDOWN 0 12\n" in log, log  # ENOMEM at the first
    assert "MREMAP 12\n" in log, log
    stacks = [int(line.split()[1]) for line in log.splitlines() if line.startswith("STACK ")]
    assert stacks and all(0 < mib <= MEMORY_MB // 4 for mib in stacks), log


XATTRS = """
def hoard(folder):
    held, value, target = 0, b"x" * 65536, 2 * int(os.environ["ARENA_MEMORY_MB"]) << 20
    for i in range(100000):
        path = os.path.join(folder, f"x{i}")
        open(path, "w").close()
        for j in range(64):
            try:
                os.setxattr(path, f"user.k{j}", value)
            except OSError as e:
                if j == 0:
                    return held >> 20, e.errno
                break
            held += len(value)
            if held >= target:
                return held >> 20, 0
    return held >> 20, 0
def attack():
    for folder in ("/tmp", "/dev/shm"):
        log("XATTR", folder, *hoard(folder))
"""


def test_no_bot_holds_memory_in_extended_attributes(mode: str, workdir: Path) -> None:
    """Extended attributes on a tmpfs count toward neither a file's size nor the tmpfs's: a user's bot held
    twice its limit in them in its /tmp and /dev/shm. Now setxattr answers EOPNOTSUPP, in every mode."""
    if seccomp.problem():
        pytest.skip(seccomp.problem())
    place(workdir / "bots", {"xattrs": PRELUDE + XATTRS + LOOP, "first": FIRST})
    done, games = tournament(mode, workdir, ["--memory", str(MEMORY_MB)])
    assert done.returncode == 0, done.stderr
    clean(games)
    log = tail(games, "xattrs")
    held = [line.split()[1:] for line in log.splitlines() if line.startswith("XATTR ")]
    assert held and all(int(mib) <= PAGE_CACHE_MIB and error == "95" for _, mib, error in held), log
