"""One bot subprocess and its pipes: lines out and in against deadlines, a capped stderr tail, and an end to
its whole process group. Knows nothing of Kalah; every way a process can misbehave becomes a `Fault`.

stdout is read on the caller's thread with poll() (the per-move hot path: one write, one poll, one read);
stderr is drained by a small daemon thread, so a bot that floods its logs can never block on a full pipe,
whoever's turn it is, and only the last `stderr_cap` bytes are kept.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

MAX_LINE = 1024  # bytes; a longer line is garbled (and memory stays bounded)
STDERR_CAP = 8192  # bytes of stderr tail kept per process
_POLL_SLICE = 0.05  # s; how often a wait looks whether the process has died with its pipe held open

REASONS = ("timeout", "crash", "illegal", "garbled")


class Fault(Exception):
    """A bot broke the protocol or the rules; `reason` is one of REASONS and `detail` tells its author why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


class BotProcess:
    """A running bot. Create with `BotProcess.start(...)`; always `kill()` it when done."""

    def __init__(self, popen: subprocess.Popen[bytes], stderr_cap: int = STDERR_CAP) -> None:
        self._popen = popen
        assert popen.stdin and popen.stdout and popen.stderr
        self._in = popen.stdin.fileno()
        self._out = popen.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._buffer = bytearray()
        self._eof = False
        self._poll_out = select.poll()
        self._poll_out.register(self._out, select.POLLIN)
        self._poll_in = select.poll()
        self._poll_in.register(self._in, select.POLLOUT)
        self._stderr = bytearray()
        self._stderr_cap = stderr_cap
        self._stderr_lock = threading.Lock()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()

    @classmethod
    def start(
        cls, argv: Sequence[str], cwd: Path | str | None = None, env: Mapping[str, str] | None = None
    ) -> BotProcess:
        """Start `argv` in a new session (its own process group), or raise Fault('crash')."""
        try:
            popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as e:
            raise Fault("crash", f"could not be started: {e.strerror or e} ({argv[0]})") from e
        return cls(popen)

    @property
    def pid(self) -> int:
        return self._popen.pid

    def returncode(self) -> int | None:
        return self._popen.poll()

    # --- stderr ---------------------------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        assert self._popen.stderr
        fd = self._popen.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._stderr_lock:
                self._stderr += chunk
                if len(self._stderr) > 2 * self._stderr_cap:
                    del self._stderr[: -self._stderr_cap]

    def stderr_tail(self) -> str:
        """The last bytes the bot wrote to stderr (at most the cap), as text."""
        with self._stderr_lock:
            tail = bytes(self._stderr[-self._stderr_cap :])
        return tail.decode("utf-8", errors="replace")

    def last_stderr_line(self, limit: int = 200) -> str:
        lines = [line.strip() for line in self.stderr_tail().splitlines() if line.strip()]
        return lines[-1][:limit] if lines else ""

    # --- stdin / stdout -------------------------------------------------------------------------------

    def send(self, line: str, deadline: float) -> None:
        """Write one line; Fault('crash') if the bot is gone, Fault('timeout') if it will not read."""
        data = (line + "\n").encode("ascii")
        while data:
            try:
                written = os.write(self._in, data)
                data = data[written:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                raise self._crash("while it was being sent a line") from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Fault("timeout", "does not read its input: stdin stayed full") from None
            self._poll_in.poll(min(remaining, _POLL_SLICE) * 1000)

    def read_line(self, deadline: float) -> str | None:
        """The next line from stdout (without its end of line), or None at the deadline.

        Raises Fault('crash') when stdout closes or the process dies, Fault('garbled') for a line over
        MAX_LINE bytes. A deadline in the past still returns a line that is already waiting.
        """
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                raw = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                if len(raw) > MAX_LINE:
                    raise Fault("garbled", f"wrote a line of {len(raw)} bytes; the limit is {MAX_LINE}")
                return raw.removesuffix(b"\r").decode("ascii", errors="replace")
            if len(self._buffer) > MAX_LINE:
                raise Fault("garbled", f"wrote more than {MAX_LINE} bytes without an end of line")
            if self._eof:
                raise self._crash("")
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not self._poll_out.poll(0):
                return None
            if not self._poll_out.poll(max(0.0, min(remaining, _POLL_SLICE)) * 1000):
                if self._popen.poll() is not None:
                    # Dead, but a child may still hold the pipe open: do not wait for the deadline.
                    raise self._crash("")
                continue
            try:
                chunk = os.read(self._out, 65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    def _crash(self, when: str) -> Fault:
        """A Fault('crash') that says how the process ended and what it last wrote to stderr."""
        try:
            code = self._popen.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            what = "closed its stdout but kept running"
        else:
            what = describe_exit(code)
        if when:
            what += f" {when}"
        last = self.last_stderr_line()
        return Fault("crash", f"{what}; last stderr line: {last}" if last else what)

    # --- the end --------------------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL the whole process group (grandchildren included) and reap the bot."""
        try:
            os.killpg(self._popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self._popen.stdin, self._popen.stdout):
            if stream:
                try:
                    stream.close()
                except OSError:
                    pass
        self._stderr_thread.join(timeout=1)
        if self._popen.stderr and not self._stderr_thread.is_alive():
            self._popen.stderr.close()

    def quit(self, line: str, grace: float) -> None:
        """Ask politely with `line`, wait up to `grace` seconds, then end the group anyway."""
        try:
            self.send(line, time.monotonic() + grace)
            self._popen.wait(timeout=grace)
        except (Fault, subprocess.TimeoutExpired):
            pass
        self.kill()
