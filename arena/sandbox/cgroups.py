"""A cgroup driver (v2, or v1's memory, pids, freezer and cpu hierarchies): a bot's exact limits, its
freezer, and every one of its processes."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_CGROUP_FS = Path("/sys/fs/cgroup")


def _own_cgroups() -> dict[str, Path]:
    """This process's cgroup folder per controller ('unified' for v2), from /proc/self/cgroup."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":
            for mount in (_CGROUP_FS, _CGROUP_FS / "unified"):
                if (mount / "cgroup.controllers").exists():
                    found["unified"] = mount / rel
                    break
        for controller in controllers.split(","):
            if controller in ("memory", "pids", "freezer", "cpu") and (_CGROUP_FS / controller).is_dir():
                found[controller] = _CGROUP_FS / controller / rel
    return found


def _leaf() -> str:
    """The cgroup arena moves itself into when it hands its own cgroup's controllers down (_delegate)."""
    return f"arena-{os.getpid()}-main"


def _delegate(own: Path) -> bool:
    """Where an ordinary user's arena runs in a cgroup (v2) delegated to it (`systemd-run --user --scope -p
    Delegate=yes arena ...`: its files are the user's) whose children get no memory or pids controller yet:
    move arena into a leaf of its own and hand the controllers down (a cgroup with processes of its own may
    not), so that each bot is bounded as under root. False where arena may not (not delegated; another
    process in the cgroup)."""
    if not all(os.access(own / name, os.W_OK) for name in ("cgroup.procs", "cgroup.subtree_control")):
        return False
    try:
        leaf = own / _leaf()
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
        (own / "cgroup.subtree_control").write_text("+memory +pids")
    except OSError:
        return False
    with contextlib.suppress(OSError):
        (own / "cgroup.subtree_control").write_text("+cpu")
    return True


# Every bot process's share of the CPU: at most one CPU, whatever it starts (a bot whose processes spin in
# sessions of their own would take the other game's core), and the same weight as every other bot.
CPU_PERIOD_US = 100_000
CPU_QUOTA_US = CPU_PERIOD_US  # one CPU
CPU_SHARES = 1024  # v1's default weight; v2's cpu.weight 100 is the same
CPU_WEIGHT = 100


class Cgroups:
    """A folder per bot process in the memory, pids, freezer and cpu controllers (cgroup v1), or one
    folder (v2)."""

    def __init__(self, folders: list[Path], v2: bool) -> None:
        self.folders = folders
        self.v2 = v2
        # The event files the limit checks read, kept open and read again from offset 0: a look is then one
        # pread, not a path lookup, an open and a close (~40 us for both files, twice a game and on every
        # wake-up of a waiting referee). None: the file does not exist here.
        self._events: dict[str, int | None] = {}
        self._controls: dict[str, int | None] = {}  # the freezer's control file, kept open likewise

    @classmethod
    def parent(cls, tag: str) -> Cgroups | None:
        """Make (or reuse) arena's own parent cgroups, or None where this machine does not allow it."""
        own = _own_cgroups()
        unified = own.get("unified")
        if unified is not None:
            if unified.name == _leaf():  # arena moved itself there (_delegate): its parent is arena's
                unified = unified.parent
            enabled = (unified / "cgroup.controllers").read_text().split() if unified.exists() else []
            if {"memory", "pids"} <= set(enabled):
                made = cls._make([unified / tag], v2=True, cpu="cpu" in enabled)
                if made is None and os.geteuid() != 0 and _delegate(unified):
                    made = cls._make([unified / tag], v2=True, cpu="cpu" in enabled)
                return made
        if "memory" in own and "pids" in own:
            folders = [own[c] / tag for c in ("memory", "pids", "freezer") if c in own]
            made = cls._make(folders, v2=False)
            if made is not None and "cpu" in own:  # where arena may, not required
                with contextlib.suppress(OSError):
                    (own["cpu"] / tag).mkdir(exist_ok=True)
                    made.folders.append(own["cpu"] / tag)
                made._weigh()
            return made
        return None

    def _weigh(self) -> None:
        """Give arena's parent cgroup the weight of one busy process per core beside the machine's other
        processes: its bots together weigh what they weighed as processes of their own, at most one
        thinking per core (without it, all of them would weigh one process on a busy machine)."""
        cores = os.cpu_count() or 1
        with contextlib.suppress(OSError):
            if self.v2:
                self._write("cpu.weight", min(10_000, CPU_WEIGHT * cores), required=False)
            else:
                self._write("cpu.shares", CPU_SHARES * cores, required=False)

    @classmethod
    def _make(cls, folders: list[Path], v2: bool, cpu: bool = False) -> Cgroups | None:
        try:
            for folder in folders:
                folder.mkdir(exist_ok=True)
            if v2:
                (folders[0] / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            return None
        made = cls(folders, v2)
        if v2 and cpu:
            with contextlib.suppress(OSError):  # the cpu controller where the parent lets arena have it
                (folders[0] / "cgroup.subtree_control").write_text("+cpu")
                made._weigh()
        return made

    @property
    def limits_cpu(self) -> bool:
        """Whether each bot here is held to one CPU (a cpu controller arena could use)."""
        if self.v2:
            return any("cpu" in self._text(f / "cgroup.subtree_control").split() for f in self.folders)
        return any((f / "cpu.cfs_quota_us").exists() for f in self.folders)

    @staticmethod
    def _text(path: Path) -> str:
        try:
            return path.read_text()
        except OSError:
            return ""

    @classmethod
    def weighted(cls, tag: str, weight: int) -> Cgroups | None:
        """A cgroup of the cpu controller alone, `tag` beside arena's bots' parents, whose processes together
        weigh `weight` (v2's cpu.weight; v1's cpu.shares alike): for what must come before the games, as a
        server's pages do. None where this machine does not let arena make one."""
        own = _own_cgroups()
        if "cpu" in own:  # v1's cpu hierarchy (also where a v2 one without controllers is mounted beside)
            made = cls([own["cpu"] / tag], v2=False)
            name, value = "cpu.shares", weight * CPU_SHARES // CPU_WEIGHT
        elif "unified" in own:
            made = cls([own["unified"] / tag], v2=True)
            name, value = "cpu.weight", min(10_000, weight)
        else:
            return None
        try:
            made.folders[0].mkdir(exist_ok=True)
            made._write(name, value)
        except OSError:
            made.remove()
            return None
        return made

    def join(self) -> None:
        """Move the calling process in (a child before exec: its children are then born inside)."""
        pid = str(os.getpid()).encode()
        for path in self.procs_files():
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def child(self, name: str, memory_bytes: int, max_procs: int) -> Cgroups | None:
        made = Cgroups([f / name for f in self.folders], self.v2)
        try:
            for folder in made.folders:
                folder.mkdir(exist_ok=True)
            if self.v2:
                made._write("memory.max", memory_bytes)
                made._write("memory.swap.max", 0, required=False)
                made._write("pids.max", max_procs)
                made._write("cpu.max", f"{CPU_QUOTA_US} {CPU_PERIOD_US}", required=False)
                made._write("cpu.weight", CPU_WEIGHT, required=False)
            else:
                made._write("memory.limit_in_bytes", memory_bytes)
                made._write("memory.memsw.limit_in_bytes", memory_bytes, required=False)
                made._write("pids.max", max_procs)
                made._write("cpu.cfs_period_us", CPU_PERIOD_US, required=False)
                made._write("cpu.cfs_quota_us", CPU_QUOTA_US, required=False)
                made._write("cpu.shares", CPU_SHARES, required=False)
        except OSError:
            made.remove()
            return None
        return made

    def _write(self, name: str, value: int | str, required: bool = True) -> None:
        for folder in self.folders:
            target = folder / name
            if target.exists():
                target.write_text(str(value))
                return
        if required:
            raise OSError(f"no {name} in {self.folders}")

    def _read(self, name: str) -> str:
        for folder in self.folders:
            with contextlib.suppress(OSError):
                return (folder / name).read_text()
        return ""

    def _read_event(self, name: str) -> str:
        """The current text of an event file (cgroup files are generated afresh by each read at offset 0)."""
        if name not in self._events:
            fd = None
            for folder in self.folders:
                with contextlib.suppress(OSError):
                    fd = os.open(folder / name, os.O_RDONLY | os.O_CLOEXEC)
                    break
            self._events[name] = fd
        fd = self._events[name]
        if fd is None:
            return ""
        try:
            return os.pread(fd, 4096, 0).decode()
        except OSError:
            return ""

    def _close_events(self) -> None:
        for fd in [*self._events.values(), *self._controls.values()]:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._events.clear()
        self._controls.clear()

    def freeze(self, frozen: bool) -> bool:
        """Freeze (or thaw) every process of the bot at once; False where this machine has no freezer."""
        if self.v2:
            name, value = "cgroup.freeze", "1" if frozen else "0"
        else:
            name, value = "freezer.state", "FROZEN" if frozen else "THAWED"
        if name not in self._controls:
            self._controls[name] = next(
                (os.open(f / name, os.O_WRONLY | os.O_CLOEXEC) for f in self.folders if (f / name).exists()),
                None,
            )
        fd = self._controls[name]
        if fd is None:
            return False
        try:
            os.pwrite(fd, value.encode(), 0)
        except OSError:
            return False
        return True

    @property
    def can_freeze(self) -> bool:
        return any((f / ("cgroup.freeze" if self.v2 else "freezer.state")).exists() for f in self.folders)

    def procs_files(self) -> list[str]:
        return [str(f / "cgroup.procs") for f in self.folders]

    def pids(self) -> list[int]:
        return [int(p) for p in self._read("cgroup.procs").split()]

    def tasks(self) -> int | None:
        """Processes and threads now, as the pids controller counts them for `max_procs`; None if unknown."""
        text = self._read("pids.current").strip()
        return int(text) if text.isdigit() else None

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        text = self._read_event("memory.events" if self.v2 else "memory.oom_control")
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def peak_bytes(self) -> int | None:
        """The most memory the bot's processes ever held together (v1 memory.max_usage_in_bytes, v2
        memory.peak); None where the kernel does not keep it (v2 before Linux 5.19)."""
        text = self._read("memory.peak" if self.v2 else "memory.max_usage_in_bytes").strip()
        return int(text) if text.isdigit() else None

    def hit_process_limit(self) -> bool:
        text = self._read_event("pids.events")
        return any(line.split() and line.split()[-1] != "0" for line in text.splitlines())

    def kill(self) -> None:
        self.freeze(False)  # a frozen process does not die of SIGKILL until it is thawed
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the folders (only possible once empty); True when all are gone."""
        self._close_events()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()
        return not any(folder.exists() for folder in self.folders)

    def sweep_stale(self) -> None:
        """End and remove what arena processes that were killed (kill -9) left: the bots in 'arena-PID'
        folders of dead PIDs, frozen ones too. A bot's folders in every hierarchy are released as one, so
        that v1's freezer thaws it before the kill: a frozen process dies of SIGKILL only once thawed."""
        stale: dict[str, list[Path]] = {}
        for folder in self.folders:
            for old in folder.parent.glob("arena-*"):
                pid = old.name.split("-")[1]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    stale.setdefault(old.name, []).append(old)
        bots = [
            Cgroups([old / bot for old in olds], self.v2)
            for olds in stale.values()
            for bot in sorted({child.name for old in olds for child in old.glob("bot-*")})
        ]
        _end(bots)
        for olds in stale.values():
            for old in olds:
                with contextlib.suppress(OSError):
                    old.rmdir()

    def release_children(self) -> None:
        """End and remove the bots' cgroups still in this parent: a bot whose start a stop cut short (its
        cgroup made, its process not yet handed to anyone who would release it) left one, and the parent
        could then not be removed (CI saw bot-2's folders outlive an arena whose terminal was closed)."""
        names = sorted({child.name for folder in self.folders for child in folder.glob("bot-*")})
        _end([Cgroups([folder / name for folder in self.folders], self.v2) for name in names])

    def release(self, patience: float = 2.0) -> None:
        """Kill every process in the cgroup and remove it, waiting for the dead to be reaped."""
        deadline = time.monotonic() + patience
        while True:
            self.kill()
            if self.remove() or time.monotonic() > deadline:
                return
            time.sleep(0.005)


def _end(bots: list[Cgroups], patience: float = 2.0) -> None:
    """Thaw and kill every process of `bots`, then one wait for them all to be removable: a worker restarted
    after a kill -9 may find dozens of frozen bots, and waiting for each in turn kept it out for minutes."""
    for group in bots:
        group.kill()
    deadline = time.monotonic() + patience
    while (bots := [g for g in bots if not g.remove()]) and time.monotonic() < deadline:
        for group in bots:
            group.kill()
        time.sleep(0.005)
