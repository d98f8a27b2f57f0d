"""Whose fault a garbled bot shipment is. Bots travel between the workers (Dask's `get_data`), so the
machine a copy arrives at did not make it: the worker that served it did. A task carries each shipment's
seal (workers.Shipment.seal), a worker that receives a copy that does not match it plays nothing with it
and names the worker that served it (Dask's own record of where the copy came from), and this side
follows the copy back: it reads the accused worker's copy itself (plain data, wire.py) and, should that
be garbled too, asks that worker where its own came from, until it reaches the first machine that held a
garbled copy it cannot pass on to another: that machine is charged (dropped and named), never the one
that found it. A machine that serves this side a whole copy but others garbled ones (it can tell them
apart by their certificates) is charged once two other machines name it; an accusation nobody repeats
costs nobody anything: the games go elsewhere and the bot is shipped again under a new key."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena.lab.plumbing import line

log = logging.getLogger("arena")
ACCUSERS = 2  # other machines naming one that served them garbled copies that charge it
READ_S = 30.0  # how long this side waits for a worker's copy, or its word on where it came from


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a garbled copy found at one worker comes to: the worker to drop (`culprit`, None: nobody
    yet) and why, in words."""

    culprit: str | None
    why: str


class Shipments:
    """One run's garbled copies, and the machines each worker was named by."""

    def __init__(self, client: Any, plugin: str, machine: Callable[[str], str]) -> None:
        self.client = client
        self.plugin = plugin
        self.machine = machine  # a worker's machine, as the run tells machines apart
        self.accused: dict[str, set[str]] = {}  # machine -> the other machines it served garbled copies

    def garbled(self, finder: str, name: str, key: str, served: str | None, seal: str) -> Verdict:
        """The worker at `finder` received a copy of bot `name`'s shipment `key` that does not match its
        `seal`, served (it says) by the worker at `served` (None: this side's own scatter)."""
        mine = self.machine(finder)
        if served is None or self.machine(served) == mine:
            return Verdict(finder, f"it says bot {name}'s files arrived garbled, from no other machine")
        at, seen = served, {finder}
        while at not in seen and len(seen) < 16:
            seen.add(at)
            copy = self.copy(at, key)
            if copy is _UNREAD or copy is _REFUSED:
                break
            from arena.lab.workers import arrived

            if arrived(copy, seal) is not None:
                break  # it serves this side a whole copy: its word against the finder's
            came = self.came_from(at, key)
            if came is None or self.machine(came) == self.machine(at):
                return Verdict(
                    at,
                    f"it served bot {name}'s files garbled (they do not hash to what this side shipped; "
                    f"found by {mine}, and read again from it by this side)",
                )
            at = came  # it fetched the garbled copy from another machine: that one is asked in turn
        accused = self.machine(served)
        by = self.accused.setdefault(accused, set())
        by.add(mine)
        if len(by) >= ACCUSERS:
            return Verdict(
                served,
                f"{len(by)} other machines ({', '.join(sorted(by))}) received bot {name}'s files "
                "garbled from it",
            )
        log.warning(f"{mine} received bot {name}'s files garbled from {accused}: shipped again")
        return Verdict(None, "")

    def copy(self, address: str, key: str) -> object:
        """The worker's copy of `key`, as it serves it to this side (plain data only), or _UNREAD."""
        from distributed.worker import get_data_from_worker

        from arena.lab import wire

        where = wire.plain(address) if address.startswith("tls://") else address

        async def ask() -> Any:
            return await asyncio.wait_for(
                get_data_from_worker(self.client.rpc, [key], where, who=None), READ_S
            )

        try:
            said = self.client.sync(ask)
        except Exception as e:  # closed for a pickle (_REFUSED), gone, slow: this side cannot tell
            log.warning(f"cannot read {key} from {address}: {type(e).__name__}: {line(str(e))}")
            return _REFUSED if "arena: " in str(e) and " refused: " in str(e) else _UNREAD
        if not isinstance(said, dict) or said.get("status") != "OK" or key not in said.get("data", {}):
            return _UNREAD
        return said["data"][key]

    def came_from(self, address: str, key: str) -> str | None:
        """Where the worker at `address` says its copy of `key` came from (None: this side's scatter)."""
        from arena.lab.workers import served_by

        try:
            said = self.client.run(served_by, self.plugin, key, workers=[address], callback_timeout=READ_S)
        except Exception:
            return None
        came = said.get(address) if isinstance(said, dict) else None
        return came if isinstance(came, str) else None

    def withheld(self, waiter: str, name: str, key: str, holders: list[str]) -> list[Verdict]:
        """The worker at `waiter` has waited past its task's deadline for shipment `key` (bot `name`),
        which `holders` hold: those that serve it as anything but plain data (which the waiter's guard
        refuses, and Dask then asks the same holder again, for ever) are charged, not the waiter."""
        verdicts = []
        for holder in holders:
            if holder != waiter and self.copy(holder, key) is _REFUSED:
                verdicts.append(
                    Verdict(
                        holder,
                        f"it served bot {name}'s files as something other than plain data (refused by the "
                        "machines that need them, and by this side)",
                    )
                )
        return verdicts


_UNREAD = object()  # a copy this side could not read
_REFUSED = object()  # a copy this side's guard refused to read (wire.py: pickled, not plain data)
