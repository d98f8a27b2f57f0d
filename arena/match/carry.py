"""A build's files in and out of its own tmpfs (arena/sandbox/jail.py's build_command): a tar of arena's copy
written into the sandbox, and after the step the tmpfs's use and a tar of what is there read back into a new
folder of arena's, with the build's caps (bytes, files and folders) and its names checked as it comes, so that
no more than the cap ever lands on the host. While the step runs, the tmpfs is watched through the sandbox's
/proc/PID/root, which bubblewrap names on its --info-fd."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from arena.match.printable import printable
from arena.sandbox.watch import entries, sandboxed


@dataclass(frozen=True, slots=True)
class Use:
    """What a build's tmpfs holds: its blocks' bytes, its files and folders (itself not counted), and whether
    it is full (a write was or would be refused for want of room)."""

    size: int
    entries: int
    full: bool


def use_of(line: str) -> Use | None:
    """The tmpfs's use from `stat -f -c "%S %b %f %c %d"`: block size, blocks, free blocks, inodes, free."""
    try:
        block, blocks, free, inodes, free_inodes = (int(word) for word in line.split())
    except ValueError:
        return None
    return Use((blocks - free) * block, max(0, inodes - free_inodes - 1), free == 0)


class Carry:
    """The descriptors and threads that carry one build step's files in and out; `fds` are the child's ends
    (tar in, tar out, bubblewrap's info), closed in arena once the child has them."""

    def __init__(self, copy: Path, max_bytes: int, max_files: int, inside: str) -> None:
        self.copy, self.max_bytes, self.max_files, self.inside = copy, max_bytes, max_files, inside
        self.fresh = copy.with_name(copy.name + ".next")
        in_r, self._in_w = os.pipe()
        self._out_r, out_w = os.pipe()
        self._info_r, info_w = os.pipe()
        self.fds = (in_r, out_w, info_w)
        self.pid: int | None = None
        self.use: Use | None = None  # the tmpfs's after the step, as the sandbox said it
        self.problem = ""  # why what came back is not taken (over a cap, a name, a path out of the folder)
        self.complete = False  # the whole tar came back
        self._threads = [
            threading.Thread(target=self._send, daemon=True),
            threading.Thread(target=self._receive, daemon=True),
            threading.Thread(target=self._info, daemon=True),
        ]

    def start(self) -> None:
        """Close the child's ends here and start carrying."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for thread in self._threads:
            thread.start()

    def abandon(self) -> None:
        """The child never started: close every descriptor."""
        for fd in (*self.fds, self._in_w, self._out_r, self._info_r):
            with contextlib.suppress(OSError):
                os.close(fd)

    def finish(self, timeout: float = 30.0) -> None:
        """Wait for the threads (the child has ended)."""
        for thread in self._threads:
            thread.join(timeout)

    def watch(self) -> Use | None:
        """The tmpfs's use while the step runs (None until bubblewrap has said where, or once it is gone)."""
        if self.pid is None or not sandboxed(self.pid):
            return None
        try:
            info = os.statvfs(f"/proc/{self.pid}/root{self.inside}")
        except OSError:
            return None
        used = (info.f_blocks - info.f_bfree) * info.f_frsize
        elsewhere = entries(self.pid) or 0  # its /tmp's and /dev/shm's: memory as the folder's are
        return Use(used, max(0, info.f_files - info.f_ffree - 1) + elsewhere, info.f_bfree == 0)

    def _info(self) -> None:
        data = b""
        with os.fdopen(self._info_r, "rb") as info:
            while chunk := info.read1(4096):
                data += chunk
                with contextlib.suppress(ValueError):
                    self.pid = int(json.loads(data)["child-pid"])
                    return

    def _send(self) -> None:
        with (
            contextlib.suppress(OSError),
            os.fdopen(self._in_w, "wb") as pipe,
            tarfile.open(fileobj=pipe, mode="w|", format=tarfile.PAX_FORMAT) as tar,
        ):
            for top, folders, names in os.walk(self.copy):
                folders.sort()
                for name in sorted(folders) + sorted(names):
                    path = os.path.join(top, name)
                    tar.add(path, arcname=os.path.relpath(path, self.copy), recursive=False)

    def _receive(self) -> None:
        self.fresh.mkdir()
        with os.fdopen(self._out_r, "rb") as pipe:
            self.use = use_of(pipe.readline(200).decode(errors="replace"))
            if self.use is None:
                return
            try:
                with tarfile.open(fileobj=pipe, mode="r|") as tar:
                    self._extract(tar)
            except (OSError, tarfile.TarError, EOFError) as e:
                self.problem = self.problem or f"its files could not be copied back ({e})"
                return
            self.complete = not self.problem

    def _extract(self, tar: tarfile.TarFile) -> None:
        """Each member into `fresh`: folders and regular files only (links and the like are not copied back
        from a build, as before), as long as the caps and names allow."""
        total, count = 0, 0
        for member in tar:
            rel = PurePosixPath(member.name)
            if rel.parts in ((), (".",)):
                continue
            if rel.is_absolute() or ".." in rel.parts:
                self.problem = f"it made a file outside its folder ('{printable(member.name)}')"
                return
            count += 1
            if count > self.max_files:
                self.problem = too_many(count, self.max_files)
                return
            name = str(rel)
            if printable(name) != name:
                self.problem = control_name(name)
                return
            target = self.fresh / name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                target.chmod(0o755)
            elif member.isreg():
                total += member.size
                if total > self.max_bytes:
                    self.problem = f"its folder held more than {self.max_bytes >> 20} MiB after it"
                    return
                target.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                source = tar.extractfile(member)
                with os.fdopen(fd, "wb") as out:
                    if source is not None:
                        shutil.copyfileobj(source, out)
                    os.fchmod(fd, member.mode & 0o755 | 0o600)
                mtime = int(member.mtime * 1e9)
                os.utime(target, ns=(mtime, mtime))


def too_many(count: int, most: int) -> str:
    return f"it made {count} files and folders, more than the {most} a build may make"


def control_name(name: str) -> str:
    return (
        f"it made a file named '{printable(name)}', with control characters (a terminal would obey them): "
        "give its files plain names"
    )
