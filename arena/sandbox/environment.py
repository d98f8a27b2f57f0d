"""What a bot sees of the machine: its whole environment, and the system's and arena's folders bound in."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The system's programs, libraries and configuration: what a runtime (Python, a JVM, node, libc) needs.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_PATH = "/usr/local/bin:/usr/bin:/bin"


def _arena_paths() -> list[str]:
    """Where arena's Python and arena itself live: a .py bot runs on this Python, and bots may import arena
    (botkit, the rules engine). Only the package folder, not the folder holding it (a source checkout also
    holds bots/ and reports/)."""
    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.add(str(Path(__file__).resolve().parents[1]))  # the arena package
    return sorted(p for p in paths if not any(p != q and Path(p).is_relative_to(q) for q in paths))


def _system_binds() -> list[str]:
    """The system's program and library folders, read-only; merged-/usr links stay links."""
    args: list[str] = []
    for path in _SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


# The caller's variables a bot may see, as protocol.md lists them: the bundled bots' knobs. Any other
# (ARENA_CLUSTER, a token a teacher keeps in an ARENA_* variable) stays with arena.
PASSED_ON = ("ARENA_DEPTH", "ARENA_SEED")


def environment(memory_mb: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """A bot's whole environment: fixed basics, the runtimes' memory flags, and the caller's `PASSED_ON`."""
    heap = max(16, memory_mb * 3 // 4)  # room for the runtime's own memory beside the heap
    env = {k: v for k, v in (base if base is not None else os.environ).items() if k in PASSED_ON}
    env |= {
        "PATH": _PATH,
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "JAVA_TOOL_OPTIONS": f"-XX:MaxRAM={memory_mb}m -XX:MaxRAMPercentage=75",
        "NODE_OPTIONS": f"--max-old-space-size={heap}",
        "ARENA_MEMORY_MB": str(memory_mb),
    }
    return env


def _ro_bind(path: str, made: set[str]) -> list[str]:
    """Bind `path` read-only at the same place, its folders above made searchable by anyone first:
    bubblewrap would copy their modes, and a bot's own uid could not pass through a root-only /root."""
    args: list[str] = []
    for parent in reversed(Path(path).parents[:-1]):  # from the top down, without "/"
        if str(parent) not in made and not any(Path(parent).is_relative_to(s) for s in _SYSTEM):
            made.add(str(parent))
            args += ["--perms", "0755", "--dir", str(parent)]
    return [*args, "--ro-bind", path, path]
