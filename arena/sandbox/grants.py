"""The teacher's grants: the read-only paths every bot may see (--read-only), and those no bot may."""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Sequence
from pathlib import Path


class GrantError(ValueError):
    """A read-only path the teacher may not grant bots: the message is one line saying why."""


# Places no bot may read: the whole machine, the kernel's and the runtime's (sockets of sessions, D-Bus,
# agents), the machine's state and everyone's home. Neither they nor a folder holding one can be granted.
_PRIVATE = ("/", "/proc", "/sys", "/dev", "/run", "/tmp", "/var", "/home", "/root")
# Nothing inside these either: a bot has its own /proc, /dev and /tmp (which would hide what is granted
# there), and /sys and /run are the kernel's and the sessions' (sockets).
_PRIVATE_INSIDE = ("/proc", "/sys", "/dev", "/run", "/tmp")


def _homes() -> set[str]:
    homes = set()
    for entry in pwd.getpwall():
        if entry.pw_dir.startswith("/") and os.path.isdir(entry.pw_dir):
            homes.add(os.path.realpath(entry.pw_dir))
    return homes


def _hidden(path: str, homes: set[str]) -> list[str]:
    """The hidden entries of a home that `path` is or lies in (~/.ssh, ~/.gnupg, ~/.aws, ~/.netrc, ~/.config):
    where keys, tokens and sessions are kept. Course data in a home (~/course/weights) stays grantable."""
    found = []
    for home in sorted(homes):
        if path != home and Path(path).is_relative_to(home):
            top = Path(path).relative_to(home).parts[0]
            if top.startswith("."):
                found.append(str(Path(home, top)))
    return found


def _open_to_all(path: str) -> bool:
    """Whether `path` is a folder anyone may write (/var/tmp, a shared drop folder): everyone's files and
    sockets land there, as in /tmp."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_IWOTH)


def grant(paths: Sequence[str], private: Sequence[Path | str] = ()) -> tuple[str, ...]:
    """The teacher's read-only paths as bound (real paths, links followed), or GrantError naming the first
    that would show a bot a private place: one of `_PRIVATE`, a user's home, one of `private` (the bots
    folder, the reports folder), a folder that holds one of them, a place inside /proc, /sys, /dev, /run,
    /tmp, `private` or a home's hidden entries, or a folder anyone may write."""
    homes = _homes()
    shut = {os.path.realpath(p) for p in private}
    granted = []
    for given in paths:
        if not os.path.isabs(given):
            raise GrantError(f"--read-only {given}: give an absolute path")
        plain = os.path.normpath(given)
        try:
            real = os.path.realpath(given, strict=True)
        except OSError:
            real = plain  # judged as given (/proc/1/root), else said to be missing
        seen = f"{given} (a link to {real})" if real != plain else given
        refused = "which no bot may read; grant the folder a bot needs, e.g. /opt/conda"
        for path in dict.fromkeys((plain, real)):
            holds = [p for p in (*_PRIVATE, *sorted(homes), *sorted(shut)) if Path(p).is_relative_to(path)]
            inside = [p for p in (*sorted(shut), *_PRIVATE_INSIDE) if Path(path).is_relative_to(p)]
            inside += _hidden(path, homes)
            if holds or inside:
                where = holds[0] if holds else inside[0]
                what = "is" if path == where else ("holds" if holds else "is inside")
                raise GrantError(f"--read-only {seen}: {what} {where}, {refused}")
        if _open_to_all(real):
            raise GrantError(f"--read-only {seen}: is a folder anyone may write (others' files), {refused}")
        if not os.path.isdir(real) and not os.path.isfile(real):
            raise GrantError(f"--read-only {given}: no such folder or file on this machine")
        granted.append(real)
    return tuple(dict.fromkeys(granted))


def ungranted(asked: Sequence[str], granted: Sequence[str]) -> list[str]:
    """The paths of `asked` (a bot's bot.toml `paths`) that no granted read-only path covers."""
    return [p for p in asked if not any(Path(os.path.realpath(p)).is_relative_to(g) for g in granted)]
