"""One bot subprocess and its pipes: lines out and in against deadlines, a capped stderr tail, and an end to
its whole process group. Knows nothing of Kalah; every way a process can misbehave becomes a `Fault`.

All reading happens on the caller's thread with poll(): while the referee waits for a bot's stdout or for
room in its stdin, it also drains that bot's stderr, keeping only the last `stderr_cap` bytes. So a bot that
floods its logs cannot deadlock its own turn, memory stays bounded, and whatever a bot wrote to stderr before
its answer (or its exit) is in the tail when the referee looks: there is no reader thread to lag behind.
A bot that writes to stderr while it is not its turn simply waits, as it should.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from arena.match.record import Reason, told
from arena.sandbox import Jail

MAX_LINE = 1024  # bytes; a longer line is garbled (and memory stays bounded)
STDERR_CAP = 8192  # bytes of stderr tail kept per process
_POLL_SLICE = 0.05  # s; how often a wait looks whether the process has died with its pipe held open
_CHUNK = 65536
_SHOWN = 40  # characters of a bad answer quoted back in a fault
_DRAIN_CHUNKS = 64  # at most this many stderr reads per look, so a flood cannot starve the clock


class Fault(Exception):
    """A bot broke the protocol or the rules; `reason` says how and `detail` tells its author why, in
    arena's words. `said` quotes what the bot wrote that shows it (its last stderr line, its answer): the
    bot's own bytes, kept apart so that a page can show them to its author and the teacher alone."""

    def __init__(self, reason: Reason, detail: str, said: str = "") -> None:
        super().__init__(f"{reason}: {told(detail, said)}")
        self.reason = reason
        self.detail = detail
        self.said = said

    def told(self) -> str:
        """The detail with the bot's words: what its author reads."""
        return told(self.detail, self.said)


def quoted(line: str) -> str:
    """A line the bot wrote, as a fault's `said` quotes it: its start, in quotes."""
    return repr(line if len(line) <= _SHOWN else line[:_SHOWN] + "...")


def _read_now(fd: int) -> bytes | None:
    """What a non-blocking pipe holds now: None if nothing yet, b"" once it is closed (or broken)."""
    try:
        return os.read(fd, _CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _waited_for_cpu() -> float:
    """Seconds this thread has waited, runnable, for a CPU (the kernel's run delay, /proc schedstat); 0.0
    where the kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


class Channel(Protocol):
    """The far end of a game's conversation, as the wire protocols and the referee speak to it: a bot's
    process (BotProcess), or a remote agent's connection (the class server's KGP port), whose stderr,
    limits and signals are nothing."""

    def send(self, line: str, deadline: float) -> None: ...
    def read_line(
        self, deadline: float, on_slow: Callable[[], None] | None = None, slow_after: float = 0.005, *,
        limit: int = MAX_LINE,
    ) -> str | None: ...  # fmt: skip
    def quit(self, line: str, grace: float) -> None: ...
    def kill(self) -> None: ...
    def stderr_tail(self, since: int = 0) -> str: ...
    def stderr_mark(self, settle: float = 0.0) -> int: ...
    def memory_verdict(self, said: str = "", settle: float = 0.0, since: int = 0) -> str: ...
    def check_limits(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


class BotProcess:
    """A running bot. Create with `BotProcess.start(...)`; always `kill()` it when done."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        pipes: tuple[int, int, int],
        jail: Jail | None = None,
        stderr_cap: int = STDERR_CAP,
    ) -> None:
        self._popen = popen
        self._jail = jail
        self._paused = False
        self._pipes: tuple[int, ...] = pipes  # our ends: the bot's stdin, stdout and stderr
        self._in, self._out = pipes[0], pipes[1]
        self._err: int | None = pipes[2]
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._buffer = bytearray()
        self._eof = False
        self._poll_out = select.poll()  # waiting for a line: stdout and stderr
        self._poll_out.register(self._out, select.POLLIN)
        self._poll_out.register(self._err, select.POLLIN)
        self._poll_in = select.poll()  # waiting for room in stdin: stdin and stderr
        self._poll_in.register(self._in, select.POLLOUT)
        self._poll_in.register(self._err, select.POLLIN)
        self._stderr = bytearray()
        self._stderr_total = 0  # bytes ever read from stderr, so a caller can ask for "since then"
        self._stderr_cap = stderr_cap

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        jail: Jail | None = None,
    ) -> BotProcess:
        """Start `argv` in a new session (its own process group), confined by `jail` (which also gives it its
        environment), or raise Fault('crash')."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        theirs = (stdin_r, stdout_w, stderr_w)
        sandboxed = jail is not None and jail.conf.sandbox
        try:
            command = jail.command(argv, Path(cwd or "."), theirs) if jail else list(argv)
            popen = subprocess.Popen(
                command,
                cwd=cwd,
                env=jail.environment() if jail else (dict(env) if env is not None else None),
                # In the sandbox the pipes go in as extra descriptors: see confine._STDIO.
                stdin=subprocess.DEVNULL if sandboxed else stdin_r,
                stdout=subprocess.DEVNULL if sandboxed else stdout_w,
                stderr=stderr_w,
                pass_fds=(*theirs, *jail.passed) if jail is not None and sandboxed else (),
                executable=jail.program if jail is not None and sandboxed else None,  # bwrap's path
                start_new_session=True,
                preexec_fn=jail.preexec if jail else None,
            )
        except (OSError, subprocess.SubprocessError) as e:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            if jail:
                jail.release()
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise Fault(Reason.CRASH, f"could not be started: {reason} ({argv[0]})") from e
        finally:
            for fd in theirs:
                os.close(fd)
            if jail is not None:
                jail.close_passed()
        return cls(popen, (stdin_w, stdout_r, stderr_r), jail)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def jail(self) -> Jail | None:
        """Its confinement (cgroups: its processes, memory peak), for those who measure it: `arena check`."""
        return self._jail

    def returncode(self) -> int | None:
        return self._popen.poll()

    # --- stderr ---------------------------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        """Read what stderr holds now (without blocking), keeping only the tail."""
        for _ in range(_DRAIN_CHUNKS):
            if self._err is None:
                return
            chunk = _read_now(self._err)
            if chunk is None:
                return
            if not chunk:
                self._poll_out.unregister(self._err)
                self._poll_in.unregister(self._err)
                self._err = None
                return
            self._stderr += chunk
            self._stderr_total += len(chunk)
            if len(self._stderr) > 2 * self._stderr_cap:
                del self._stderr[: -self._stderr_cap]

    def _drain_stderr_to_end(self, limit: float = 0.5) -> None:
        """After the process has ended: read stderr to its end, unless a survivor holds it open."""
        deadline = time.monotonic() + limit
        while self._err is not None and time.monotonic() < deadline:
            self._drain_stderr()
            if self._err is not None:
                select.select([self._err], [], [], max(0.0, min(_POLL_SLICE, deadline - time.monotonic())))

    def stderr_mark(self, settle: float = 0.0) -> int:
        """A position in the stderr stream, for `stderr_tail(since=...)`. `settle`: up to that many seconds
        for the bot to finish writing (until its stderr stays quiet a moment), so that what it writes now
        stays before the mark."""
        self._drain_stderr()
        # A bot that never wrote to stderr costs nothing. One that logs has read what it was sent (its stdin
        # is empty: END is read), then until its stderr is quiet a moment.
        deadline, quiet = time.monotonic() + (settle if self._stderr_total else 0.0), 0.05
        while self.unread_input() and time.monotonic() < deadline and self.returncode() is None:
            time.sleep(0.002)
        while self._err is not None and time.monotonic() < deadline:
            before = self._stderr_total
            select.select([self._err], [], [], min(quiet, max(0.0, deadline - time.monotonic())))
            self._drain_stderr()
            if self._stderr_total == before:
                break
        return self._stderr_total

    def unread_input(self) -> int:
        """Bytes sent to the bot that it has not read yet (Linux counts a pipe's bytes from either end):
        while a line is unread, what the bot writes it wrote before it read that line."""
        try:
            return struct.unpack("i", fcntl.ioctl(self._in, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return 0

    def stderr_tail(self, since: int = 0) -> str:
        """The last bytes the bot wrote to stderr (after mark `since`, at most the cap), as text."""
        self._drain_stderr()
        fresh = self._stderr_total - since
        tail = bytes(self._stderr[-min(self._stderr_cap, fresh) :]) if fresh > 0 else b""
        return tail.decode("utf-8", errors="replace")

    def last_stderr_line(self, limit: int = 200) -> str:
        lines = [line.strip() for line in self.stderr_tail().splitlines() if line.strip()]
        return lines[-1][:limit] if lines else ""

    # --- stdin / stdout -------------------------------------------------------------------------------

    def send(self, line: str, deadline: float) -> None:
        """Write one line; Fault('crash') if the bot is gone, Fault('timeout') if it will not read."""
        data = (line + "\n").encode("ascii")
        try:
            written = os.write(self._in, data)  # a line fits the pipe: one write, the referee's every move
        except BlockingIOError:
            written = 0
        except (BrokenPipeError, ConnectionResetError):
            raise self._crash("stdin") from None
        if written < len(data):
            self._send_rest(data[written:], deadline)

    def _send_rest(self, data: bytes, deadline: float) -> None:
        """What a full pipe did not take, as the bot makes room, until the deadline."""
        while data:
            try:
                written = os.write(self._in, data)
                data = data[written:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                raise self._crash("stdin") from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Fault(Reason.TIMEOUT, "does not read its input: its stdin stayed full") from None
            self._poll_in.poll(min(remaining, _POLL_SLICE) * 1000)
            self._drain_stderr()

    def waiting_output(self) -> int:
        """Bytes the bot has written that were not yet taken as lines: the referee's buffer and the pipe's."""
        try:
            piped = struct.unpack("i", fcntl.ioctl(self._out, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            piped = 0
        return len(self._buffer) + piped

    def has_output(self) -> bool:
        """Whether stdout holds something not yet read as a line (cheap: one poll, no wait)."""
        return bool(self._buffer) or self._eof or bool(self._poll_out.poll(0))

    def read_line(
        self,
        deadline: float,
        on_slow: Callable[[], None] | None = None,
        slow_after: float = 0.005,
        keep_cr: bool = False,
        limit: int = MAX_LINE,
    ) -> str | None:
        """The next line from stdout (without its end of line), or None at the deadline.

        Raises Fault('crash') when stdout closes or the process dies, Fault('garbled') for a line over
        `limit` bytes (MAX_LINE unless the protocol allows more). A deadline in the past still returns a
        line that is already waiting. `on_slow` is called once if no line has come after `slow_after`
        seconds (the referee pauses the opponent then).
        A carriage return before the newline is dropped unless `keep_cr` (for a protocol that forbids it).
        """
        # The referee's hot path, run for every move: few calls, and the slow-bot bookkeeping only when asked.
        buffer = self._buffer
        slow_at = 0.0
        # A bot that logs waits for the referee to drain its stderr: the referee's waits for a CPU (a loaded
        # machine) before each drain are the machine's time, not the bot's, and the deadline moves on by them,
        # up to the wait's own length once (3 MiB of logs drained late took 530 ms of a 300 ms MOVE at load
        # 22). Counted from the second drain on, so that a quiet bot's wait costs no look at /proc.
        began, owed, moved, asleep = time.monotonic(), 0.0, 0.0, -1.0
        while True:
            if buffer:
                newline = buffer.find(b"\n")
                if newline >= 0:
                    if newline > limit:
                        raise Fault(Reason.GARBLED, f"wrote a line of {newline} bytes; the limit is {limit}")
                    raw = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    return (raw if keep_cr else raw.removesuffix(b"\r")).decode("ascii", errors="replace")
                if len(buffer) > limit:
                    raise Fault(Reason.GARBLED, f"wrote more than {limit} bytes without an end of line")
            if self._eof:
                raise self._crash("stdout")
            now = time.monotonic()
            remaining = deadline - now
            wait = remaining if remaining < _POLL_SLICE else _POLL_SLICE
            if on_slow is not None:
                if not slow_at:
                    slow_at = now + slow_after
                if slow_at - now < wait:
                    wait = slow_at - now
            events = self._poll_out.poll(wait * 1000 if wait > 0 else 0)
            readable = False
            for fd, _ in events:
                if fd == self._out:
                    readable = True
                else:
                    if asleep >= 0:
                        owed += _waited_for_cpu() - asleep
                    self._drain_stderr()  # before stdout: what it logged before answering goes with it
                    asleep = _waited_for_cpu()
            if not readable:
                if remaining <= 0:
                    extra = min(owed, deadline - moved - began)
                    if extra <= moved + 0.001:
                        return None
                    deadline, moved = deadline + extra - moved, extra
                    continue
                if on_slow is not None and time.monotonic() >= slow_at:
                    on_slow()
                    on_slow = None
                if not events and self._popen.poll() is not None:
                    # Dead, but a child may still hold the pipe open: do not wait for the deadline.
                    raise self._crash("stdout")
                self.check_limits()
                continue
            chunk = _read_now(self._out)
            if chunk is None:
                continue
            if chunk:
                buffer += chunk
            else:
                self._eof = True

    def _crash(self, stream: str) -> Fault:
        """A Fault('crash') saying how the process ended (or which pipe it closed), with its last log line."""
        try:
            code = self._popen.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            what = f"closed its {stream} but kept running"
            if stream == "stdin":
                what += " (it must read the referee's lines until QUIT)"
        else:
            self._drain_stderr_to_end()
            if self._jail and self._jail.conf.sandbox and code > 128:
                code = 128 - code  # bwrap reports a death by signal N as exit code 128+N
            what = describe_exit(code)
        last = self.last_stderr_line()
        return Fault(Reason.CRASH, what, f"last stderr line: {last}" if last else "")

    def unread_output(self) -> str:
        """What stdout holds that was not read as a line (without waiting), as text."""
        while not self._eof and len(self._buffer) < _CHUNK:
            chunk = _read_now(self._out)
            if chunk is None:
                break
            if not chunk:
                self._eof = True
            self._buffer += chunk
        return bytes(self._buffer).decode("ascii", errors="replace")

    def memory_verdict(self, said: str = "", settle: float = 0.0, since: int = 0) -> str:
        """After a fault: whether the bot ran out of memory ('' if not), the jail asking the kernel and then
        the bot's last words (`said`: the fault's own detail; its stderr tail; what it wrote to stdout and
        nobody read). `settle`: seconds to let a process that is dying finish (a JVM writes the first line
        of its memory report, "#", as a move and the rest just after); `since`: a `stderr_mark`."""
        if self._jail is None:
            return ""
        deadline = time.monotonic() + settle
        while self._popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self._popen.poll() is not None:
            self._drain_stderr_to_end(limit=0.2)
        return self._jail.memory_verdict("\n".join((self.stderr_tail(since), self.unread_output(), said)))

    def check_limits(self) -> None:
        """Fault('crash') once the bot has run into its memory or process limit, even if it lives on."""
        if self._jail and (breach := self._jail.breach()):
            raise Fault(Reason.CRASH, breach)

    # --- fair CPU -------------------------------------------------------------------------------------

    def pause(self) -> None:
        """Stop the bot: no thinking on the opponent's time. The cgroup freezer stops every process of it
        (a child that left its session, one started since); without one, SIGSTOP to its process group."""
        if not self._paused:
            if not (self._jail and self._jail.freeze(True)):
                self._signal_group(signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        if self._paused:
            if not (self._jail and self._jail.freeze(False)):
                self._signal_group(signal.SIGCONT)
            self._paused = False

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self._popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # --- the end --------------------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL the whole process group (grandchildren included) and reap the bot."""
        self.resume()  # a frozen process dies of SIGKILL only once thawed
        try:
            os.killpg(self._popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self._jail:
            self._jail.release()  # also the processes that left the group
        self._drain_stderr_to_end(limit=0.2)
        if self._err is not None:
            self._poll_out.unregister(self._err)
            self._poll_in.unregister(self._err)
        for fd in self._pipes:
            try:
                os.close(fd)
            except OSError:
                pass
        self._pipes = ()
        self._err = None

    def quit(self, line: str, grace: float) -> None:
        """Ask politely with `line`, wait up to `grace` seconds, then end the group anyway."""
        self.resume()
        try:
            self.send(line, time.monotonic() + grace)
            self._popen.wait(timeout=grace)
        except (Fault, subprocess.TimeoutExpired):
            pass
        self.kill()
