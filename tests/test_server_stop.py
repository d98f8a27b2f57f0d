"""`arena serve` at a terminal: the line that tells agents where to connect is true when printed (an agent
started on reading it was refused), and Ctrl-C, which the terminal sends to every process of the group,
stops the server without a traceback from its workers (each unwound inside django.setup())."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

from tests.ports import free_port
from tests.server_kit import Server, need_extra

need_extra()


def test_the_kgp_line_comes_when_the_port_accepts_and_ctrl_c_stops_without_tracebacks(tmp_path: Path) -> None:
    kgp = free_port()
    server = Server(tmp_path / "class", args=("--kgp-port", str(kgp)))
    try:
        server.start()
        said = server.log.read_text()
        assert f"KGP agents connect to 127.0.0.1:{kgp}" in said, said
        with socket.create_connection(("127.0.0.1", kgp), timeout=5):
            pass  # accepted at once, as an agent started on reading the line would be
        assert server.proc is not None
        workers = _workers(server.proc.pid)
        assert len(workers) >= 4, workers  # checks, ladder, scrimmages, kgp
        for pid, line in workers.items():  # whenever Ctrl-C lands (inside django.setup too), not theirs
            assert _ignores_sigint(pid), line
        os.killpg(server.proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        server.proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(server.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("arena serve's children outlived its Ctrl-C")
        said = server.log.read_text()
        assert "Traceback" not in said and "KeyboardInterrupt" not in said, said
    finally:
        server.stop()


def _workers(parent: int) -> dict[int, str]:
    """arena serve's worker processes (arena.server.worker ROLE), by pid."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            ppid = int((proc / "stat").read_text().rpartition(")")[2].split()[1])
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and "arena.server.worker" in line:
            found[int(proc.name)] = line
    return found


def _ignores_sigint(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False
