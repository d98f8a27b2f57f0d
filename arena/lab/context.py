"""What one `Cluster.play` runs with, as one frozen value: the cluster's deadlines, the Dask client, the
games and where their results go, and the cluster's account of its machines (which the run fills in)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arena.lab.plumbing import ClusterError, line

if TYPE_CHECKING:
    from arena.lab.confirm import Confirm
    from arena.tournament.backend import Conditions, Instead, Machine, OnGame, Together
    from arena.tournament.schedule import Slot


@dataclass(frozen=True, slots=True)
class Patience:
    """The cluster at `address` and how long each wait on it may last (Cluster's parameters)."""

    address: str
    connect_s: float = 10.0
    workers_s: float = 60.0
    result_s: float = 600.0
    tries: int = 5

    def alive(self, client: Any) -> None:
        """Raise ClusterError once the scheduler is gone for more than `connect_s` seconds."""
        deadline = time.monotonic() + self.connect_s
        while client.status != "running":
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the Dask scheduler at {self.address} is gone; the games stored so far are kept: start "
                    "it again (the workers reconnect by themselves) and run the same command to resume"
                )
            time.sleep(0.2)

    def patiently(self, client: Any, call: Callable[[], Any]) -> Any:
        """`call` (a scatter, a submit), tried again while the cluster has no worker to take it, up to
        `workers_s` seconds."""
        deadline = time.monotonic() + self.workers_s
        while True:
            try:
                return call()
            except Exception as e:
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"the cluster at {self.address} took no work for {self.workers_s:g} s "
                        f"({type(e).__name__}: {line(str(e))}); the games stored so far are kept: run the "
                        "same command again to resume"
                    ) from None
                self.alive(client)
                time.sleep(0.5)


@dataclass(frozen=True)
class Context:
    """One run's context: `machines` (every worker that reported a game, by address), `dropped` (worker
    address or machine name -> why), `named` (each dropped worker once, 'host (address)' -> why) and
    `confirm` are the Cluster's own, filled in as the run goes."""

    patience: Patience
    client: Any
    ours: str  # this arena's version: a worker must run the same
    slots: Sequence[Slot]
    conditions: Conditions
    on_game: OnGame
    instead: Instead | None
    on_machine: Callable[[Machine], None] | None
    require_sandbox: bool
    idle_s: float
    machines: dict[str, Machine]
    dropped: dict[str, str]
    named: dict[str, str]
    confirm: Confirm  # the run's forfeits held until another machine confirms them
    together: Together | None = None  # a task's games reported inside it: stored in one commit

    def unfit(self, machine: Machine) -> str:
        """Why a worker may not play this run's games ("": it may): checked when it joins, and again with
        every answer (a machine could say otherwise later)."""
        if machine.version != self.ours:
            theirs = machine.version or "of an unknown version"
            return f"it runs arena {theirs}, this machine arena {self.ours}: install the same arena there"
        if self.require_sandbox and not machine.sandbox:
            return (
                "it has no sandbox (bubblewrap): install it there, or pass --no-require-sandbox to let "
                "unsandboxed machines play"
            )
        return ""
