"""Where connected KGP agents meet each other (arena/server/kgp.py): between its games against the ladder's
bots, a connection waits here a moment; another student's connection that comes meanwhile takes it, plays
the pair's games in its own thread with both agents' connections, and hands it back. The waiting
connection's thread only sleeps: one thread plays a game, so a connection is never read by two.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PAIR_WAIT_S = 2.0  # how long a connection waits here for another agent before it plays a ladder bot
LOOK_S = 0.1  # how often a waiting connection is looked at: one its agent closed leaves the lobby


@dataclass(eq=False)
class Waiting:
    """A connection in the lobby: whose it is, its seat, and the event its taker sets when their games
    are over. `gone` says whether its connection has closed meanwhile (then nobody takes it)."""

    slug: str
    seat: Any
    agent: str
    gone: Callable[[], bool]
    done: threading.Event = field(default_factory=threading.Event)
    taken: bool = False


class Lobby:
    """The connections waiting for another agent, oldest first."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: list[Waiting] = []

    def take(self, slug: str) -> Waiting | None:
        """The longest-waiting connection of another student (marked taken), or None."""
        with self._changed:
            for other in self._waiting:
                if other.slug != slug and not other.gone():
                    self._waiting.remove(other)
                    other.taken = True
                    self._changed.notify_all()
                    return other
            return None

    def wait(self, me: Waiting, seconds: float = PAIR_WAIT_S) -> bool:
        """Wait to be taken for up to `seconds`; if taken, until the taker's games are over. False: nobody
        came, or the agent closed its connection meanwhile (and `me` has left the lobby)."""
        until = time.monotonic() + seconds
        with self._changed:
            self._waiting.append(me)
            while not me.taken and not me.gone() and time.monotonic() < until:  # a closed one leaves at once
                self._changed.wait(timeout=min(LOOK_S, max(0.0, until - time.monotonic())))
            if not me.taken:
                self._waiting.remove(me)
                return False
        me.done.wait()
        return True
