"""How often a game may fail before the run stops: a lab's churn costs games, never the run; a game that
takes down or fails on every worker it is sent to stops it, in one line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from arena.lab.plumbing import ClusterError

if TYPE_CHECKING:
    from arena.tournament.schedule import Slot


class Tries:
    """The failures of a run's games (indices of its `slots`), each tried at most `tries` times."""

    def __init__(self, slots: Sequence[Slot], tries: int) -> None:
        self.slots = slots
        self.tries = tries
        self.deaths: Counter[int] = Counter()  # game -> its tasks that died, were lost or never answered
        self.played = 0  # games the workers returned in this run
        self.played_at: dict[int, int] = {}  # game -> `played` when its task last died
        self.failed: dict[int, set[str]] = {}  # game -> workers its tasks failed on
        self.failures: Counter[int] = Counter()  # game -> times its tasks failed (again on one worker too)

    def died(self, games: tuple[int, ...], how: str) -> None:
        """A task lost with its worker, given up by Dask or never answered: counted against its games (the
        caller puts them back), of which one that has died `tries` times ends the run. Only deaths with no
        game played anywhere in between count: workers that die while the others go on playing are a lab's
        churn (a machine switched off, a worker killed), which costs their games and never the run; a game
        that takes down every worker it is sent to stops everything else too."""
        for i in games:
            if self.played > self.played_at.get(i, self.played):
                self.deaths[i] = 0  # games were played since it last died: that death was the churn's
            self.played_at[i] = self.played
            self.deaths[i] += 1
        worst = max(games, key=lambda i: self.deaths[i])
        if self.deaths[worst] >= self.tries:
            slot = self.slots[worst]
            raise ClusterError(
                f"the game of round {slot.round}, {slot.south.name} (south) against {slot.north.name}, "
                f"failed on {self.deaths[worst]} workers ({how}); the games stored so far are kept: run "
                "the same command again to resume"
            )

    def failed_on(self, games: tuple[int, ...], address: str, failure: str) -> None:
        """A task whose worker answered that its games failed or that it will not play them: counted
        against each of its games, of which one that has failed `tries` times ends the run (on every
        worker there is, it is sent to one it failed on again)."""
        for i in games:
            self.failed.setdefault(i, set()).add(address)
            self.failures[i] += 1
        worst = max(games, key=lambda i: self.failures[i])
        if self.failures[worst] >= self.tries:
            slot = self.slots[worst]
            raise ClusterError(
                f"the game of round {slot.round}, {slot.south.name} (south) against {slot.north.name}, "
                f"failed on {len(self.failed[worst])} workers, the last time with {failure}"
            )
