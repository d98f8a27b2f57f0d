"""Counting the files in a sandbox's tmpfs, which their sizes do not bound: each file or folder holds about
1 KiB of the kernel's memory beside its blocks (measured on Linux 6.18), a tmpfs takes about one for every
two pages of the machine's memory (three million here), and without a cgroup nothing counts that memory. A
thread looks at the sandbox's /tmp and /dev/shm through its /proc/PID/root ten times a second (bubblewrap
names the PID on its --info-fd) and ends the sandbox, all of it, once they hold more than `MOST_FILES`; a
bot makes some 20,000 files a second, so it holds at most a few MiB past the count."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading

MOST_FILES = 10_000  # files and folders a bot's /tmp and /dev/shm may hold together
PLACES = ("/tmp", "/dev/shm")
_LOOK = 0.1


def entries(pid: int, places: tuple[str, ...] = PLACES) -> int | None:
    """The files and folders in the sandbox of `pid`'s `places` (each a tmpfs of its own, its root not
    counted); None once the sandbox is gone or cannot be seen."""
    if not sandboxed(pid):
        return 0
    total = 0
    for place in places:
        try:
            info = os.statvfs(f"/proc/{pid}/root{place}")
        except OSError:
            return None
        total += max(0, info.f_files - info.f_ffree - 1)
    return total


def sandboxed(pid: int) -> bool:
    """Whether `pid`'s root is the sandbox's yet: bubblewrap names the PID before the process has left the
    host's root (its /tmp then is the host's)."""
    try:
        theirs, ours = os.stat(f"/proc/{pid}/root"), os.stat("/")
    except OSError:
        return True  # gone: the look that follows says so
    return (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino)


def child_pid(fd: int) -> int | None:
    """The sandbox's PID, from bubblewrap's --info-fd (read end `fd`, closed here); None if it never says."""
    data = b""
    with os.fdopen(fd, "rb") as info:
        while chunk := info.read1(4096):
            data += chunk
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return int(json.loads(data)["child-pid"])
    return None


class FileWatch:
    """The thread that ends a sandbox holding more than `most` files; `flooded` then says so."""

    def __init__(self, info_fd: int, most: int = MOST_FILES) -> None:
        self.most = most
        self.flooded = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(info_fd,), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self, info_fd: int) -> None:
        pid = child_pid(info_fd)
        while pid is not None and not self._stop.wait(_LOOK):
            held = entries(pid)
            if held is None:
                return
            if held > self.most:
                self.flooded = (
                    f"it made {held} files and folders in /tmp and /dev/shm, more than the {self.most} a bot "
                    "may (each holds memory no limit counts): ended"
                )
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)  # the sandbox's first process: all of it goes
                return
