"""A scripted bot process for the referee (as python-chess's MockTransport for its engines): the lines the
referee must send, in order, and what the bot answers to each, on a clock of its own. The referee's own
code runs unchanged over it: `Player.spawn` hands it this instead of a process, and the referee's and the
protocol's `time` read the script's clock, so a bot that thinks 700 ms or never answers costs no time.

    south = Script().expect("NEWGAME 2 2 south kalah,pits=2,seeds=2").expect("MOVE 200 2 2 0 2 2 0", "2")
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena.match import protocol, referee
from arena.match.bots import Bot
from arena.match.process import Fault
from arena.match.record import Reason
from arena.match.referee import Player


@dataclass(frozen=True)
class Think:
    """The bot thinks this long before its next reply."""

    ms: float


@dataclass(frozen=True)
class Exit:
    """The bot's process ends: its stdout closes."""


class Clock:
    """time.monotonic for the referee and the wire: it moves only when a scripted bot thinks or waits."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Script:
    """One bot's side of the wire. `expect(line, *replies)`: the referee must send `line` next (None: any
    line), and the bot then answers `replies` (lines, `Think`, `Exit`) on its stdout."""

    def __init__(self) -> None:
        self.clock: Clock | None = None  # set by `seat`
        self.steps: deque[tuple[str | None, tuple[str | Think | Exit, ...]]] = deque()
        self.out: deque[str | Think | Exit] = deque()
        self.sent: list[str] = []
        self.killed = False
        self.quit_sent = False
        self.paused = False

    def expect(self, line: str | None, *replies: str | Think | Exit) -> Script:
        self.steps.append((line, replies))
        return self

    # --- what the wire asks of a BotProcess -------------------------------------------------------------

    def send(self, line: str, deadline: float) -> None:
        if self.out and isinstance(self.out[0], Exit):
            raise Fault(Reason.CRASH, "exited")
        self.sent.append(line)
        assert self.steps, f"the referee sent {line!r}, which the script does not expect"
        expected, replies = self.steps.popleft()
        assert expected is None or line == expected, f"sent {line!r}, expected {expected!r}"
        self.out.extend(replies)

    def has_output(self) -> bool:
        return bool(self.out) and not isinstance(self.out[0], Think)

    def read_line(self, deadline: float, on_slow: object = None, **_: object) -> str | None:
        clock = self.clock
        assert clock is not None
        while self.out:
            head = self.out[0]
            if isinstance(head, Exit):
                raise Fault(Reason.CRASH, "exited")
            if isinstance(head, str):
                self.out.popleft()
                return head
            if clock.now + head.ms / 1000 > deadline:  # still thinking at the deadline
                left = clock.now + head.ms / 1000 - deadline
                clock.now = max(clock.now, deadline)
                self.out[0] = Think(left * 1000)
                return None
            clock.now += head.ms / 1000
            self.out.popleft()
        clock.now = max(clock.now, deadline)  # nothing more to say: the bot is silent until the deadline
        return None

    def unread_output(self) -> str:
        return ""

    def stderr_mark(self, settle: float = 0.0) -> int:
        return 0

    def stderr_tail(self, since: int = 0) -> str:
        return ""

    def memory_verdict(self, said: str = "", settle: float = 0.0, since: int = 0) -> str:
        return ""

    def check_limits(self) -> None:
        pass

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def kill(self) -> None:
        self.killed = True

    def quit(self, line: str, grace: float) -> None:
        self.quit_sent = True

    def done(self) -> bool:
        """Whether the referee sent every line the script expects."""
        return not self.steps


class Scripted(Player):
    """A seat whose every process is the next of `scripts` (a bot restarted after a fault gets the next)."""

    def __init__(self, name: str, *scripts: Script) -> None:
        super().__init__(Bot(name, ("scripted",), Path("."), Path(name), f"{name}-digest"))
        self.scripts = deque(scripts)

    def spawn(self) -> Script:  # type: ignore[override]
        assert self.scripts, f"{self.name}: the referee started a process the test has no script for"
        return self.scripts.popleft()


def fake_time(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The scripts' clock, which the referee and the wire then read instead of time.monotonic."""
    fake = Clock()
    for module in (referee, protocol):
        monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=fake.monotonic))
    return fake


def seat(clock: Clock, name: str, *scripts: Script) -> Scripted:
    for script in scripts:
        script.clock = clock
    return Scripted(name, *scripts)
