"""The value types of confinement: what every bot of a tournament may use, and what this machine enforces.

Below every other module of the package: the limits are numbers and flags, and carry no process or mount.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
# Memory per bot by default. Course agents peak at 1.08 GB (a JVM), 1.22 GB (C++) and about 2.0 GB (Python)
# under their own engine: twice the largest leaves room for a deeper search, and a JVM's heap (three quarters)
# is 3 GiB. A limit is a ceiling, not a reservation: 2 games at once use at most 4 such bots, 16 GiB.
DEFAULT_MEMORY_MB = 4096


@dataclass(frozen=True, slots=True)
class Confinement:
    """What every bot of a tournament may use. `sandbox` and `drop_root` are only true once `capabilities`
    found that this machine can do them."""

    memory_mb: int = DEFAULT_MEMORY_MB
    max_procs: int = 64
    sandbox: bool = False
    drop_root: bool = False  # arena runs as root: each bot runs as an unprivileged uid of its own
    max_memory_mb: int | None = None  # the most a bot.toml's `memory` gets (--max-memory); None: memory_mb
    read_only: tuple[str, ...] = ()  # what the teacher lets every bot read (--read-only), checked by `grant`

    def memory_of(self, asked: int | None) -> tuple[int, str]:
        """A bot's memory limit and what set it: its bot.toml's `memory` (`asked`), at most the teacher's
        cap; a bot's author cannot lift their bot over what the teacher allows."""
        cap = self.max_memory_mb if self.max_memory_mb is not None else self.memory_mb
        if asked is None:
            return self.memory_mb, "--memory"
        if asked > cap:
            return cap, "--max-memory" if self.max_memory_mb is not None else "--memory, as --max-memory"
        return asked, "its bot.toml's memory"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this machine lets arena enforce; `notes` says plainly what is missing, for terminal and report."""

    sandbox: bool
    cgroups: bool
    notes: tuple[str, ...]


UID_BASE = 1_000_000_000  # bots started by root run as uids from here: far above any real user's
