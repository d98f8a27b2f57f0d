"""How an arena process stops on a signal: one exception that unwinds through every clean-up, which ends
the bots (one left frozen would stay frozen for good).

Python drops an exception raised while it runs an at-fork callback or a __del__ ("Exception ignored in:
_releaseLock"), and arena forks all the time (its game workers, every bot, a check's bots): a stop that
landed there was lost, and the process played on (CI saw the ladder of a killed `arena serve` do so). A
dropped stop is sent again a moment later, from a thread, so that it is raised once Python is out of what
dropped it; `check` raises it between a loop's steps too.

A forked child inherits the handler, and with it the parent's state: a child forked after the parent's stop
(or while it landed) held a stop already taken, and ignored the SIGTERM its parent's exit then sent it, so the
parent waited for it for ever (CI saw a killed `arena serve`'s ladder worker and a game worker it had just
forked both alive and asleep). In a child that has not set up a stop of its own, the signal ends it as it
would a process without a handler.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

AGAIN_S = 0.05  # a dropped stop is sent again after this long


class Stop:
    """The handler of `signals` (those the process was not started ignoring: `nohup` goes on): the first
    calls `on_signal` with the signal, then raises `exception(signum)`. Later signals raise too when
    `repeat` (Ctrl-C pressed again in the terminal); otherwise they do nothing, so they cannot cut the
    clean-up short."""

    def __init__(
        self,
        signals: Sequence[signal.Signals],
        exception: Callable[[int], BaseException],
        *,
        repeat: bool = False,
        on_signal: Callable[[int], None] | None = None,
    ) -> None:
        self.signum = 0
        self.exception, self.repeat, self.on_signal = exception, repeat, on_signal
        self._dropped = False
        self._pid = os.getpid()  # the process whose stop this is; a forked child's copy is not its own
        for stop in signals:
            if signal.getsignal(stop) is not signal.SIG_IGN:
                signal.signal(stop, self)
        self._unraisable = sys.unraisablehook
        sys.unraisablehook = self._hook

    def __call__(self, signum: int, frame: object) -> None:
        if os.getpid() != self._pid:  # inherited by a forked child that has no stop of its own yet
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self.signum and not (self.repeat or self._dropped):
            return
        if self.on_signal is not None:
            self.on_signal(signum)
        self.signum, self._dropped = self.signum or signum, False
        raise self.exception(self.signum)

    def _hook(self, unraisable: Any) -> None:
        """Python dropped what it could not raise: a stop of ours is sent again, without a word."""
        if (
            self.signum
            and os.getpid() == self._pid
            and isinstance(unraisable.exc_value, KeyboardInterrupt | SystemExit)
        ):
            self._dropped = True
            # From a thread: a kill from here would run the handler here, at once, and be dropped again.
            again = threading.Timer(AGAIN_S, os.kill, (os.getpid(), self.signum))
            again.daemon = True
            again.start()
            return
        self._unraisable(unraisable)

    def check(self) -> None:
        """Raise the stop if one came: one Python dropped, or one a loop caught for its own."""
        if self.signum:
            raise self.exception(self.signum)

    def hold(self) -> None:
        """From now on no signal raises, not even a dropped one sent again: the clean-up has begun."""
        self.signum = self.signum or signal.SIGTERM
        self._dropped = self.repeat = False
