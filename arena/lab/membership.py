"""Which workers play a run: each greeted once when it shows up, accepted if it runs this arena and can
play as asked, else dropped and named; forgotten when it leaves (or is started again at its address).

A machine is who the scheduler's guard says it is (`machine`: the machine its certificate names, else the
IP it connected from), not what it says of itself (`Machine.host`, its ARENA_MACHINE or host name, which
only names it on pages): one machine may run several worker processes, and the run's blame, confirmations
and drops are the machine's, all of its processes together. Where the scheduler runs without the guard
nothing is certified, and the names the workers give are all there is."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import pickle
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from arena.lab.context import Context
from arena.lab.plumbing import Listed, answer, game_workers, line, machine

if TYPE_CHECKING:
    from arena.tournament.backend import Machine

log = logging.getLogger("arena")


def greeting() -> Callable[[str, str, bytes], str]:
    """The first task of a run on each worker, before any bot or game goes there: made inside a function,
    so that Dask sends its code along (by value) and a worker whose arena is another, even one from before
    this greeting, runs it and says which arena it has. Only on a worker whose arena is this one does it
    go on to set the run up (workers.join): an older arena never unpickles anything of this run's."""

    def hello(ours: str, plugin: str, arena: bytes) -> str:
        import json
        import os
        import socket

        said = {"host": os.environ.get("ARENA_MACHINE") or socket.gethostname(), "cores": os.cpu_count() or 1}
        try:
            from arena.lab import identity

            theirs = identity.version()
        except Exception as e:  # an arena from before the version check
            try:
                import importlib.metadata

                number = importlib.metadata.version("arena")
            except Exception:
                number = "unknown"
            theirs = f"{number} (older: it cannot say its code, {type(e).__name__})"
        if theirs != ours:
            return json.dumps({**said, "version": theirs})
        from arena.lab import workers

        return workers.join(plugin, arena)

    return hello


def greeted(said: dict[str, Any], address: str, slots: int) -> tuple[Machine | None, str]:
    """A greeting's (or a failed task's) answer: the machine it names, and why it cannot play ("": the
    greeting found nothing against it; the caller checks its version and sandbox)."""
    from arena.tournament.backend import Machine

    if isinstance(said.get("machine"), dict):
        try:
            return machine(said["machine"], address), line(str(said.get("error") or ""))
        except (KeyError, TypeError, ValueError) as e:
            return None, f"its greeting names no machine ({type(e).__name__}: {line(str(e))})"
    host, cores, version = said.get("host"), said.get("cores"), said.get("version")
    if type(host) is not str or type(version) is not str:
        return None, "its greeting names no machine and no arena version"
    found = Machine(
        address, line(host, 80) or address, cores if type(cores) is int else 0, slots, False, False, (),
        line(version, 120),
    )  # fmt: skip
    error = said.get("error")
    return found, (f"arena could not start its games there: {line(str(error))}" if error else "")


class Membership:
    """The workers as one run knows them. `withdraw(address)` takes back the run's tasks on a worker
    that is dropped (the dispatcher's)."""

    def __init__(self, ctx: Context, serial: itertools.count[int], withdraw: Callable[[str], None]) -> None:
        from arena.lab import workers

        self.ctx = ctx
        self.serial = serial
        self.withdraw = withdraw
        self.plugin = f"arena-{ctx.conditions.tag or 'run'}"
        self.arena = pickle.dumps(workers.Arena(ctx.conditions, ctx.idle_s))  # unpickled by workers.join
        self.hello = greeting()
        self.live: dict[str, Listed] = {}  # workers with game slots, by address
        self.certified: dict[str, str] = {}  # address -> the machine the guard certified (the run's memory)
        self.accepted: dict[str, str] = {}  # greeted and fit to play: address -> Dask id
        self.greeting: dict[str, tuple[Any, str]] = {}  # address -> its greeting's future, Dask id
        self.answered = threading.Event()  # set as a greeting comes back (from the client's thread)
        self.joined: set[str] = set()  # where this run's plugin was set up: ended with the run
        self.known: dict[str, Machine] = {}  # accepted workers' machines, as their greetings said
        self.looked = 0.0

    @property
    def dropped(self) -> dict[str, str]:
        return self.ctx.dropped

    def slots(self, address: str) -> int:
        listed = self.live.get(address)
        return listed.slots if listed else 0

    def machine(self, address: str, found: Machine | None = None) -> str:
        """The machine of the worker at `address`, as the run tells machines apart: as the scheduler's
        guard certified it, else (no guard) as the worker named it, else its address."""
        if certified := self.certified.get(address):
            return certified
        found = found or self.known.get(address)
        return found.host if found is not None else address

    def shown(self, address: str, found: Machine | None = None) -> str:
        """The worker's machine in words: the name it gave, and what the guard certified: 'lab-3 (certified
        lab-3)', 'lab-3 (from 10.0.0.7)'."""
        found = found or self.known.get(address)
        host = found.host if found is not None else address
        certified = self.certified.get(address)
        return f"{host} ({certified})" if certified else host

    def _id(self, address: str) -> str:
        listed = self.live.get(address)
        return listed.id if listed else ""

    def look(self, force: bool = False) -> bool:
        """What the scheduler knows of the workers, asked at most once a second (True: it was asked): greet
        the new ones, read the greetings that came back, forget the workers that left."""
        now = time.monotonic()
        if not force and now - self.looked < 1.0:
            return False
        self.looked = now
        client = self.ctx.client
        self.live = game_workers(client)
        self.certified.update((a, listed.machine) for a, listed in self.live.items() if listed.machine)
        for address, id_ in list(self.accepted.items()):
            if self._id(address) != id_:  # gone, or started again at that address
                del self.accepted[address]
        for address, (future, id_) in list(self.greeting.items()):
            if self._id(address) != id_:
                del self.greeting[address]
                with contextlib.suppress(Exception):
                    client.cancel([future], force=True)
            elif future.done():
                del self.greeting[address]
                self.welcome(address, id_, future)
        for address, listed in self.live.items():
            if address not in self.accepted and address not in self.greeting and address not in self.dropped:
                self.greet(address, listed.id)
        return True

    def greet(self, address: str, id_: str) -> None:
        """Send a new worker the run's greeting, to run before anything else of the run goes there."""
        client = self.ctx.client
        future = self.ctx.patience.patiently(
            client,
            lambda: client.submit(
                self.hello,
                self.ctx.ours,
                self.plugin,
                self.arena,
                key=f"arena-hello-{self.ctx.conditions.tag}-{next(self.serial)}",
                workers=[address],
                pure=False,
            ),
        )
        future.add_done_callback(lambda _: self.answered.set())
        self.greeting[address] = (future, id_)

    def welcome(self, address: str, id_: str, future: Any) -> None:
        """A worker's answer to the greeting: accept it, or drop it and say why."""
        if future.status != "finished":
            self.drop(
                address, None, f"it could not run arena's greeting ({future.status}): is it the same Python?"
            )
            return
        said = answer(future)
        future.release()
        if isinstance(said, str):
            self.drop(address, None, said)
            return
        if said.get("version") == self.ctx.ours:
            self.joined.add(address)
        found, why = greeted(said, address, self.slots(address))
        if found is None:
            self.drop(address, None, why)
        elif why or (why := self.ctx.unfit(found)):
            self.drop(address, found, why)
        elif (mine := self.machine(address, found)) in self.dropped:
            self.drop(address, found, f"its machine was dropped from this run: {self.dropped[mine]}")
        else:
            self.accepted[address] = id_
            self.known[address] = found

    def drop(self, address: str, found: Machine | None, why: str) -> None:
        """Play no more games on this worker nor, if it answered as arena (`found`), on its machine (its
        other workers are dropped with it), and name it. It is not retired (Dask's retirement waits for its
        tasks, without a deadline): it is sent nothing more, its tasks are taken back, what it still
        answers is not read, and the bots are sent again to the workers that remain."""
        mine = self.machine(address, found)
        self.dropped[address] = why
        self.accepted.pop(address, None)
        certified = self.certified.get(address, "")
        if found is None:  # nothing arena's came back (it died in its greeting, say): this worker only
            self.ctx.named[f"{address}{f' ({certified})' if certified else ''}"] = why
            log.warning(f"worker {address} dropped from this run: {why}")
            self.withdraw(address)
            return
        self.dropped.setdefault(mine, why)  # (its first reason: the workers dropped with it say theirs)
        found = dataclasses.replace(found, address=address, refused=why, certified=certified)
        self.ctx.named[found.named()] = why
        if self.ctx.on_machine:
            self.ctx.on_machine(found)
        self.withdraw(address)
        for other in [a for a in self.accepted if self.machine(a) == mine]:
            self.drop(other, self.known.get(other), f"its machine was dropped from this run: {why}")

    def wait_for_greetings(self) -> None:
        """Before the first game: the greetings of the workers there are, up to `connect_s`, so that every
        worker that is up when the run starts has its share of the first games."""
        deadline = time.monotonic() + self.ctx.patience.connect_s
        while self.greeting and (left := deadline - time.monotonic()) > 0:
            # Woken by a greeting's own callback, not by a poll of the scheduler; at most a second, for a
            # worker that left with its greeting (whose future would wait for it for ever). Not Dask's
            # `wait`, which needs a default client: a run's is not one, and its every call failed at once,
            # a busy loop asking the scheduler about its workers (~100 times in a greeting of 0.1 s) on
            # the cores where the workers set the run up.
            self.answered.wait(min(1.0, left))
            self.answered.clear()  # before looking: a greeting answered from now on wakes the next wait
            self.look(force=True)

    def none_left(self) -> str:
        """Why no worker plays, in one line."""
        p = self.ctx.patience
        if self.ctx.named:
            names = "; ".join(f"{name}: {why}" for name, why in self.ctx.named.items())
            return (
                f"every worker of the cluster at {p.address} was dropped: {names}; no other joined in "
                f"{p.workers_s:g} s: fix what is said (or start other workers) and run the same command "
                "again to resume"
            )
        if self.greeting:
            return (
                f"no worker of the cluster at {p.address} answered arena's greeting in {p.workers_s:g} s "
                f"({', '.join(sorted(self.greeting))}); the games stored so far are kept: run the same "
                "command again to resume"
            )
        from arena.lab.workers import RESOURCE

        return (
            f"no worker of the cluster at {p.address} offers game slots after {p.workers_s:g} s: start "
            f"workers with 'dask worker {p.address} --nworkers N --nthreads 1 --resources {RESOURCE}=1', N "
            "the machine's cores"
        )
