"""What a run's games are played under and where: the types every back end and the run share.

A leaf below the run (scheduler.py), the local back end (local.py) and the cluster's (cluster.py, and its
workers' side, workers.py), so that none of them imports another for these types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from arena.match.clock import Limits
from arena.match.record import GameRecord
from arena.sandbox import Confinement
from arena.tournament.schedule import Slot


@dataclass(frozen=True, slots=True)
class Conditions:
    """What every game of a run is played under, wherever it is played. `conf` is the confinement as this
    machine can enforce it for `Local`; a back end whose bots run elsewhere (`Backend.remote`) gets it as
    asked, and each of its machines resolves it for itself (`confine.capabilities`)."""

    spec: str
    limits: Limits
    conf: Confinement | None = None
    fresh: bool = False  # a new bot process for every game
    tag: str = ""  # the tournament, for a cluster to tell the workers of two tournaments' runs apart
    seed: int = 0  # the run's: what a KGP agent's random stand-in moves are drawn from (referee.play_game)


@dataclass(frozen=True, slots=True)
class Machine:
    """A cluster worker that played games, and what its machine could enforce."""

    address: str  # its Dask address, which changes when it restarts
    host: str  # its machine's name, as the games it played record it (GameRecord.worker)
    cores: int
    slots: int  # games it plays at once (its Dask resource `games`)
    sandbox: bool
    cgroups: bool
    notes: tuple[str, ...]  # what it could not enforce, in words
    version: str = ""  # the arena it runs (identity.version)
    refused: str = ""  # why the run dropped it ("": it played)
    # The machine the lab's scheduler says it is ('certified NAME': its certificate's; 'from IP': where it
    # connected from, with the class's shared certificate), which `host` may not be; "": not known
    certified: str = ""

    def named(self) -> str:
        """The worker in words: its name, its address, and the machine the scheduler certified."""
        return f"{self.host} ({self.address}{f', {self.certified}' if self.certified else ''})"

    def summary(self) -> str:
        """One line for the page and the terminal."""
        confined = f"sandbox {'on' if self.sandbox else 'off'}, cgroups {'on' if self.cgroups else 'off'}"
        slots = f"{self.slots} game slot{'s' * (self.slots != 1)} on {self.cores} cores"
        dropped = f"; dropped from the run: {self.refused}" if self.refused else ""
        return f"{self.named()}: {slots}; {confined}{dropped}"


OnGame = Callable[[Slot, GameRecord], None]
Instead = Callable[[Slot], GameRecord | None]
Together = Callable[[], AbstractContextManager[None]]  # games reported inside it: one commit


class Backend(Protocol):
    """Where a run's games are played: `play` plays `slots` and calls `on_game` in this process as each one
    ends (in any order), and `on_machine` once for each machine before its first game is reported; just
    before a game would be sent, `instead` may record it without playing (a benched bot's forfeit); games
    that reach this side at once (a cluster task's) are reported inside `together`: one commit for them.
    KeyboardInterrupt stops it, ending its bots; games already reported are kept."""

    remote: bool  # the bots run on other machines, which confine them as they can (Conditions.conf as asked)

    def play(
        self,
        slots: Sequence[Slot],
        conditions: Conditions,
        on_game: OnGame,
        instead: Instead | None = None,
        on_machine: Callable[[Machine], None] | None = None,
        together: Together | None = None,
    ) -> None: ...
