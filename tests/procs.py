"""What the tests see of the machine's processes, read from /proc: one place for every test that checks
that no process of a bot is left behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat ('T' for stopped, 'Z' zombie), or '' for no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, every thread) a live process has used so far: what a bot spent
    thinking, whatever else the machine ran meanwhile."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    """Live processes other than this one whose command line contains `text`, and every process of a
    sandbox that shows a copy of a bot that was at `text` (arena/sandbox/stage.py) at /bot, with their
    descendants: in the sandbox a bot's files are at /bot, and its command line names them there."""
    stages = _stages_of(text)
    staged = {_identity(Path(s)) for s in stages} - {None}
    lines = {int(e.name): cmdline(int(e.name)) for e in Path("/proc").iterdir() if e.name.isdigit()}
    lines.pop(os.getpid(), None)
    found = {pid for pid, line in lines.items() if text in line or any(s in line for s in stages)}
    # bubblewrap reads its options from a descriptor, so its command line names no copy: a sandbox's
    # processes are found by their working directory, /bot, which is the copy itself
    inside = {pid for pid in lines if staged and _identity(Path(f"/proc/{pid}/cwd")) in staged}
    sandboxes = {pid for pid in found if os.path.basename(lines[pid].split(" ", 1)[0]) == "bwrap"} | inside
    return sorted(pid for pid in found | _descendants(sandboxes) | inside if is_running(pid))


def _identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of the folder `path` leads to (a bind mount keeps its source's), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _stages_of(text: str) -> list[str]:
    """The copies of bots arena made whose `source` (the bot's path on the host) contains `text`."""
    found = []
    for top in {Path("/dev/shm"), Path(tempfile.gettempdir())}:
        for stage in top.glob("arena-stage-*"):
            try:
                if text in (stage / "source").read_text(encoding="utf-8"):
                    found.append(str(stage / "bot"))
            except OSError:
                continue
    return found


def _descendants(roots: set[int]) -> set[int]:
    """The processes below `roots` (children, theirs, and so on)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int(Path(entry, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
