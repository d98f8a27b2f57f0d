"""What the tests see of the machine's processes, read from /proc: one place for every test that checks
that no process of a bot is left behind."""

from __future__ import annotations

import os
from pathlib import Path


def proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat ('T' for stopped, 'Z' zombie), or '' for no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def is_running(pid: int) -> bool:
    """Alive: a zombie (dead, not yet reaped) does not count."""
    return proc_state(pid) not in ("", "Z", "X")


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def processes_mentioning(text: str) -> list[int]:
    """Live processes other than this one whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if text in cmdline(int(entry.name)) and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found
