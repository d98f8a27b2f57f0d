"""The page of a tournament while it runs: rewritten every few seconds from the store, for a classroom screen.

`LivePage` is a progress callback for `Tournament.run` (the scheduler calls it in its main process after
each game is stored). It rewrites the whole page (write beside, rename: see `page.write_report`) at most
every `every` seconds, and never spends more than about a tenth of the run on it: a write that took t
seconds waits 10 t before the next. The page it writes says how far the run is and how long is left, and
reloads itself when a newer page is written; the final page, written by the caller after the run, does not.
An adaptive run has no last game: its page says what is still open instead (the pairs, how sure each is
and a rough estimate of the games that would settle them: the terminal's words from the same verdict), not
the batch's count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from arena.report.page import Live, write_report
from arena.stats import ratings
from arena.store.writer import Store

if TYPE_CHECKING:
    from arena.match.record import GameRecord

EVERY = 3.0  # seconds between rewrites, at the least
SHARE = 10.0  # a rewrite that took t seconds is followed by at least SHARE * t seconds of games


def time_left(seconds: float) -> str:
    """'about 3 min left' in words a teacher reads at a glance."""
    if seconds < 60:
        return f"about {max(1, round(seconds))} s left"
    if seconds < 3600:
        return f"about {round(seconds / 60)} min left"
    return f"about {seconds / 3600:.1f} h left"


class LivePage:
    """Keeps FOLDER/index.html current while games finish; `then` is called after it with the same
    arguments (the terminal's progress bar), and `opened` once with the page's path after the first write."""

    def __init__(
        self,
        store: Store,
        folder: Path,
        every: float = EVERY,
        then: Callable[[int, int, GameRecord | None], None] | None = None,
        opened: Callable[[Path], None] | None = None,
    ) -> None:
        self.store = store
        self.folder = Path(folder)
        self.every = every
        self.then = then
        self.opened = opened
        self.started = time.monotonic()
        self.next_at = 0.0
        self.writes = 0
        self.page: Path | None = None

    def __call__(self, done: int, total: int, record: GameRecord | None) -> None:
        if self.then:
            self.then(done, total, record)
        now = time.monotonic()
        if done == 0:
            self.started = now
        if now < self.next_at:
            return
        elapsed = now - self.started
        stamp = time.strftime("%H:%M:%S")
        if self.store.stopping() is not None:  # adaptive: the batch's total is not the run's
            standings = ratings.standings(self.store)
            verdict = standings.verdict
            left = verdict.describe_left(3) if verdict else "playing until the ranking is settled"
            live = Live(done, total, left, stamp, open_ended=True)
            self._wrote(now, write_report(self.store, self.folder, standings, live=live))
            return
        if done and total > done:
            left = time_left(elapsed / done * (total - done))
        elif total == done:
            left = "writing the final page"
        else:
            left = "time left: after the first game"
        self._wrote(now, write_report(self.store, self.folder, live=Live(done, total, left, stamp)))

    def _wrote(self, now: float, page: Path) -> None:
        """The next write waits `every` seconds, and at least SHARE times what this one took."""
        self.page = page
        took = time.monotonic() - now
        self.writes += 1
        self.next_at = time.monotonic() + max(self.every, SHARE * took)
        if self.writes == 1 and self.opened:
            self.opened(page)
