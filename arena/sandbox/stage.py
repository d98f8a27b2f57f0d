"""Where a sandboxed bot finds its own files: at /bot, its working directory, wherever they are on the host.

The sandbox shows a bot its own file or folder, and the kernel lists every mount in /proc/self/mountinfo
with its target (where the bot sees it) and its root (the source's path inside its filesystem); the
sandbox's first process, /proc/1, shows bubblewrap's arguments. Shown at its own path, a bot read the
teacher's home, the course's folder names and the bots folder's place from all three. So the bot's files
are shown at /bot (a file bot as /bot/NAME.py), and its arguments name them there. Their root field would
still be the host's path, so arena copies a bot's files (at most `MOST` bytes of them: a millisecond for a
course bot, some 15 ms for 5 MB, 35 ms for 200 small files) into a folder of its own in a tmpfs (/dev/shm)
and shows that: the root field then reads /arena-stage-PID-RANDOM/bot. A bot larger than that is copied to
the system's temporary folder instead (up to `MOST_ON_DISK`: the root field then reads that folder's
/arena-stage-PID-RANDOM/bot, no place of the bot's); one larger still, or one that cannot be copied, is
shown from its own place (still at /bot; its root field then names that place). bubblewrap's options, with
every host path it binds, go to it on a descriptor (--args), so /proc/1/cmdline shows none of them.

What cannot be hidden: arena's Python and arena itself keep their paths (a Python installation is not
relocatable: a venv's python is a link to its base by absolute path, pyvenv.cfg names the base, pyenv's
binary finds libpython by an absolute RUNPATH, an editable install maps `arena` to its checkout), and so
do the folders the teacher grants (--read-only), which bots name by their paths.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from arena.match.bots import BotError, bot_files

INSIDE = "/bot"
MOST = 64 * 1024 * 1024  # bytes of a bot's files copied to a tmpfs; a larger bot is copied to the disk
MOST_ON_DISK = 1024 * 1024 * 1024  # and a bot larger than this is shown from its own place
_PREFIX = "arena-stage-"
_TMPFS = Path("/dev/shm")


def inside(own: Path, word: str) -> str:
    """An argument of the bot's command as the bot sees it: a path into its own file or folder at /bot."""
    top = str(own)
    if own.is_dir():
        if word == top or word.startswith(top + "/"):
            return INSIDE + word[len(top) :]
        return word
    return f"{INSIDE}/{own.name}" if word == top else word


def binds(own: Path, staged: Path | None) -> list[str]:
    """bubblewrap's options that show the bot's files at /bot, read-only: its copy, or its own place."""
    if staged is not None:
        return ["--ro-bind", str(staged), INSIDE]
    if own.is_dir():
        return ["--ro-bind", str(own), INSIDE]
    # A small tmpfs holding the file, made read-only: a folder bubblewrap makes would be the user's own, on
    # its root tmpfs, which no limit bounds.
    place = ["--perms", "0755", "--size", "65536", "--tmpfs", INSIDE]
    return [*place, "--ro-bind", str(own), f"{INSIDE}/{own.name}", "--remount-ro", INSIDE]


def _scratch() -> Path:
    """A tmpfs where there is one with room (its pages are memory, and go with the copy), else the system's
    temporary folder."""
    with contextlib.suppress(OSError):
        room = os.statvfs(_TMPFS)
        if os.access(_TMPFS, os.W_OK) and room.f_bavail * room.f_frsize > 4 * MOST:
            return _TMPFS
    return Path(tempfile.gettempdir())


def copy(own: Path) -> Path | None:
    """A copy of the bot's regular files (bots.bot_files: no link followed), readable by everyone (a bot may
    run as a uid of its own) and writable by none but arena, in STAGE/bot; STAGE (arena's alone) also holds
    `source`, the bot's path on the host, for whoever looks at the machine's staged copies, never shown to
    the bot. None where the bot is larger than `MOST` or cannot be
    copied (its files are then shown from their own place)."""
    for where, most in ((_scratch(), MOST), (Path(tempfile.gettempdir()), MOST_ON_DISK)):
        try:
            top = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=where))
        except OSError:
            continue
        folder = top / "bot"
        try:
            folder.mkdir()
            _fill(own, folder, most)
            folder.chmod(0o755)
            (top / "source").write_text(f"{own}\n", encoding="utf-8")
        except _TooLarge:
            remove(folder)
            continue  # on disk, then
        except (OSError, BotError):
            remove(folder)
            return None
        return folder
    return None


class _TooLarge(OSError):
    """A bot's files passed what one place may hold of them."""


def _fill(own: Path, folder: Path, most: int = MOST) -> None:
    """Copy the bot's files into `folder`; _TooLarge once they pass `most` bytes."""
    total, whole = 0, own.is_dir()
    made = {str(folder)}
    for file, f in bot_files(own, strict=False):
        target = os.path.join(folder, file.rel.partition("/")[2] if whole else file.rel)
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(f, out)
            total += out.tell()
            mode = file.mode & 0o755 | 0o444  # never setuid or setgid
            os.fchmod(fd, mode | (0o111 if mode & 0o100 else 0))
        if total > most:
            raise _TooLarge(f"more than {most >> 20} MiB")
    for top, folders, _ in os.walk(folder):
        for name in folders:
            os.chmod(os.path.join(top, name), 0o755)  # whatever the umask


def remove(folder: Path | None) -> None:
    """Remove a copy (when its bot's process has ended), and the folder of arena's that holds it."""
    if folder is not None:
        shutil.rmtree(folder.parent if folder.name == "bot" else folder, ignore_errors=True)


def sweep() -> None:
    """Remove the copies that arenas killed (kill -9) left: those of PIDs that are gone."""
    for where in {_scratch(), Path(tempfile.gettempdir())}:
        _sweep(where)


def _sweep(where: Path) -> None:
    with contextlib.suppress(OSError):
        for old in where.glob(f"{_PREFIX}*"):
            pid = old.name.removeprefix(_PREFIX).split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                remove(old)
