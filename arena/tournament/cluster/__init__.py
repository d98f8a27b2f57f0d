"""Playing a tournament's games on the workers of a Dask cluster: `arena run --cluster tcp://HOST:8786`.

The machine that runs `arena run` keeps the schedule, the store (its one writer) and the page; the workers
only play. Each game is one Dask task that needs one game slot of its worker (the worker resource `games`:
`dask worker tcp://HOST:8786 --resources games=N`, N its cores), so a worker plays at most one game per core
and a move's time means the same on every machine. The worker's side, a plugin that keeps the bots'
processes alive across games and confines them as `arena run` does locally, is arena/tournament/workers.py.

Each worker is greeted before anything of the run goes there (`_greeting`, a task whose code travels with
it, so that an older arena runs it too and says which it is): a worker that runs another arena, cannot set
the run up or lacks the sandbox asked for is dropped and named, and the others are accepted. Tasks and bots
go to accepted workers only. Bots travel by content: each bot's files are scattered to one accepted worker
(the others fetch them from there when a game of theirs needs them), and the workers keep them on disk by
digest. A game whose worker died or left is played again elsewhere (Dask does so by itself; this side sends
it again should Dask give up on it, or should its workers all be gone), and a game is stored when its
result reaches this side, once. Dask is imported only here, only when it is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import pickle
import socket
import time
import urllib.parse
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.match.bots import Bot
    from arena.match.record import GameRecord
    from arena.tournament.backend import Conditions, Instead, Machine, OnGame
    from arena.tournament.schedule import Slot

log = logging.getLogger("arena")
INSTALL = 'the cluster back end needs Dask, which is not installed here: pip install "arena[cluster]"'


class ClusterError(RuntimeError):
    """A cluster that cannot play the games as asked; the message is one line saying why and what to do."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError(INSTALL) from None
    return distributed


class Cluster:
    """The back end of a Dask cluster, reached through its scheduler at `address` ('tls://HOST:8786').

    The cluster is trusted only through TLS with the class's certificates (`certs`, a folder made by
    `arena cluster-certs`, else Dask's own TLS configuration); a plain tcp:// address is refused unless
    `insecure`. `connect_s` bounds the wait for the scheduler, `workers_s` the wait for a worker with game
    slots, `result_s` the wait for any game to come back (and for a task's games, until their pace is
    known); `idle_s` is how long a worker keeps a bot process that has no game; a game is tried on at most
    `tries` workers that died under it (or failed it) before the run stops. A worker that runs another
    arena, cannot set the run up, returns a game the rules engine does not replay to its record, answers
    that a game failed or that it will not play it, or (`require_sandbox`) has no sandbox, is dropped from
    the run: its games are played elsewhere, and it is named (`on_machine`, with `refused`); with every
    worker dropped and none other joining in `workers_s`, the run stops. `require_sandbox` is by default on
    when the games ask for the sandbox and this machine has it."""

    remote = True

    def __init__(
        self,
        address: str,
        *,
        certs: Path | None = None,
        insecure: bool = False,
        require_sandbox: bool | None = None,
        connect_s: float = 10.0,
        workers_s: float = 60.0,
        result_s: float = 600.0,
        idle_s: float = 30.0,
        tries: int = 5,
    ) -> None:
        self.address = address
        self.certs = certs
        self.insecure = insecure
        self.require_sandbox = require_sandbox
        self.connect_s = connect_s
        self.workers_s = workers_s
        self.result_s = result_s
        self.idle_s = idle_s
        self.tries = tries
        self.machines: dict[str, Machine] = {}  # every worker that reported a game, by address
        self.dropped: dict[str, str] = {}  # worker address or machine name -> why it was dropped
        self.named: dict[str, str] = {}  # each dropped worker once, as 'host (address)' -> why
        self._require = bool(require_sandbox)

    @property
    def trust(self) -> str:
        """How the cluster is trusted, in words for the page."""
        if self.insecure and not self.address.startswith("tls://"):
            return (
                f"{self.address}, plain tcp:// without TLS (--insecure-cluster): whoever reached its port "
                "could join as a worker"
            )
        return f"{self.address}, TLS with the class's certificates on both ends"

    def play(
        self,
        slots: Sequence[Slot],
        conditions: Conditions,
        on_game: OnGame,
        instead: Instead | None = None,
        on_machine: Callable[[Machine], None] | None = None,
    ) -> None:
        if not slots:
            return
        distributed = _distributed()
        from arena.tournament import identity

        ours = identity.version()
        if self.require_sandbox is None:
            from arena.match.confine import capabilities

            conf = conditions.conf
            self._require = bool(conf and conf.sandbox and capabilities(conf, True)[1].sandbox)
        else:
            self._require = self.require_sandbox
        with _dask_quiet():
            self._play(distributed, ours, slots, conditions, on_game, instead, on_machine)

    def _play(
        self,
        distributed: Any,
        ours: str,
        slots: Sequence[Slot],
        conditions: Conditions,
        on_game: OnGame,
        instead: Instead | None,
        on_machine: Callable[[Machine], None] | None,
    ) -> None:
        client = self._connect(distributed)
        try:
            self._slots(client)
            run = _Run(self, distributed, client, ours, slots, conditions, on_game, instead, on_machine)
        except BaseException:
            with contextlib.suppress(Exception):
                client.close(timeout=10)
            raise
        run.play()

    def _unfit(self, machine: Machine, ours: str) -> str:
        """Why a worker may not play this run's games ("": it may): checked when it joins, and again with
        every answer (a machine could say otherwise later)."""
        if machine.version != ours:
            return (
                f"it runs arena {machine.version or 'of an unknown version'}, this machine arena {ours}: "
                "install the same arena there"
            )
        if self._require and not machine.sandbox:
            return (
                "it has no sandbox (bubblewrap): install it there, or pass --no-require-sandbox to let "
                "unsandboxed machines play"
            )
        return ""

    def _accept(
        self,
        answer: dict[str, Any],
        batch: tuple[int, ...],
        slots: Sequence[Slot],
        conditions: Conditions,
        ours: str,
        address: str,
    ) -> tuple[Machine | None, list[tuple[int, GameRecord]], float, str]:
        """A task's answer checked: its machine, its records, seconds, and why to drop the worker ("": keep
        it; then the machine is a Machine)."""
        from arena.tournament import audit
        from arena.tournament.workers import Refused

        try:
            machine = _machine(answer["machine"], address)
        except (KeyError, TypeError, ValueError) as e:
            return None, [], 0.0, f"its answer names no machine ({type(e).__name__}: {_line(str(e))})"
        if why := self._unfit(machine, ours):
            return machine, [], 0.0, why
        records: list[tuple[int, GameRecord]] = []
        try:
            seconds = float(answer["seconds"])
            for k, data in answer["played"]:
                if type(k) is not int or not 0 <= k < len(batch) or k in {j for j, _ in records}:
                    raise audit.Forged(f"a game numbered {k!r} that its task did not have")
                slot = slots[batch[k]]
                record = audit.rebuild(data)
                try:
                    audit.check(slot, conditions.spec, record)
                except audit.Forged as e:
                    raise audit.Forged(
                        f"its game of round {slot.round}, {slot.south.name} (south) against "
                        f"{slot.north.name}: {e}"
                    ) from None
                # Where and how it was played, as the machine said of itself (checked above)
                records.append(
                    (k, dataclasses.replace(record, worker=machine.host, sandboxed=machine.sandbox))
                )
        except (audit.Forged, KeyError, TypeError, ValueError, Refused) as e:
            return machine, [], 0.0, f"it returned a game the rules engine rejects: {_line(str(e))}"
        return machine, records, seconds, ""

    def _connect(self, distributed: Any) -> Any:
        from arena.tournament import trust

        try:
            trust.check_address(self.address, self.insecure)
            security = None if self.insecure else trust.security(self.certs)
        except trust.TrustError as e:
            raise ClusterError(str(e)) from None
        try:
            _knock(self.address, self.connect_s)  # a refused connection is said at once, not after retries
            return distributed.Client(
                self.address,
                timeout=self.connect_s,
                set_as_default=False,
                security=security,
                # What comes back from a worker is read as msgpack, never unpickled: a result object
                # whose unpickling runs code would run it here.
                deserializers=["msgpack"],
            )
        except Exception as e:  # OSError, TimeoutError, ValueError for a bad address: all one line
            raise ClusterError(
                f"cannot reach the Dask scheduler at {self.address} within {self.connect_s:g} s "
                f"({type(e).__name__}: {_line(str(e))}); start it there with 'dask scheduler' (see the "
                "README, 'A lab of machines'), or check its address and certificates"
            ) from None

    def _alive(self, client: Any) -> None:
        """Raise ClusterError once the scheduler is gone for more than `connect_s` seconds."""
        deadline = time.monotonic() + self.connect_s
        while client.status != "running":
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the Dask scheduler at {self.address} is gone; the games stored so far are kept: start "
                    "it again (the workers reconnect by themselves) and run the same command to resume"
                )
            time.sleep(0.2)

    def _patiently(self, client: Any, call: Callable[[], Any]) -> Any:
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
                        f"({type(e).__name__}: {_line(str(e))}); the games stored so far are kept: run the "
                        "same command again to resume"
                    ) from None
                self._alive(client)
                time.sleep(0.5)

    def _slots(self, client: Any) -> int:
        """The game slots the cluster's workers offer, waiting up to `workers_s` for one to offer any."""
        deadline = time.monotonic() + self.workers_s
        while True:
            slots = _game_slots(client)
            if slots:
                return slots
            if time.monotonic() > deadline:
                from arena.tournament.workers import RESOURCE

                raise ClusterError(
                    f"no worker of the cluster at {self.address} offers game slots after "
                    f"{self.workers_s:g} s: start workers with 'dask worker {self.address} --nthreads N "
                    f"--resources {RESOURCE}=N', N the machine's cores"
                )
            time.sleep(0.5)


@contextlib.contextmanager
def _dask_quiet() -> Iterator[None]:
    """Dask's own log lines kept off the terminal while this side plays (restored after): Dask writes its
    retries and a lost scheduler's chained tracebacks to stderr, where the teacher is to read one line that
    says what happened and what to do (a ClusterError)."""
    tops = ("distributed", "tornado", "bokeh", "asyncio")
    known = logging.Logger.manager.loggerDict
    # Dask gives several of its loggers a handler of their own (distributed.client has one, too)
    loggers = [logging.getLogger(name) for name in tops]
    loggers += [
        lg
        for name, lg in list(known.items())
        if isinstance(lg, logging.Logger) and lg.handlers and name.split(".")[0] in tops and lg not in loggers
    ]
    before = [(lg, lg.handlers, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.handlers = [logging.NullHandler()]
        lg.propagate = False
    try:
        yield
    finally:
        for lg, handlers, propagate in before:
            lg.handlers = handlers
            lg.propagate = propagate


def _line(text: str, most: int = 300) -> str:
    """A worker's words as one bounded line (it may be hostile)."""
    one = " ".join(text.split())
    return one if len(one) <= most else one[: most - 1] + "…"


def _where(client: Any, future: Any) -> str:
    """The address of the worker that holds a finished task's result, as the scheduler knows it (not as
    the worker says)."""
    with contextlib.suppress(Exception):
        holders = client.who_has([future]).get(future.key, ())
        if holders:
            return str(holders[0])
    return "an unknown worker"


def _answer(future: Any) -> dict[str, Any] | str:
    """A finished task's answer as plain data, or why it is not one."""
    try:
        text = future.result(timeout=30)
    except Exception as e:
        return f"its answer is not arena's plain data (an older arena?): {type(e).__name__}"
    if not isinstance(text, str):
        return f"its answer is a {type(text).__name__}, not arena's JSON text (an older arena?)"
    try:
        answer = json.loads(text)
    except ValueError:
        return "its answer is not JSON"
    return answer if isinstance(answer, dict) else "its answer is not a JSON object"


def _machine(data: dict[str, Any], address: str) -> Machine:
    """A worker's account of itself, its address the scheduler's."""
    from arena.tournament.backend import Machine

    kinds = {"host": str, "cores": int, "slots": int, "sandbox": bool, "cgroups": bool, "version": str}
    for name, kind in kinds.items():
        if type(data[name]) is not kind:
            raise TypeError(f"its {name} is not a {kind.__name__}")
    notes = tuple(_line(str(n)) for n in data["notes"])
    host = _line(data["host"], 80) or address
    return Machine(
        address, host, data["cores"], data["slots"], data["sandbox"], data["cgroups"], notes, data["version"]
    )


def _knock(address: str, seconds: float) -> None:
    """Open and close a TCP connection to a tcp:// or tls:// address (OSError if nobody listens there)."""
    where = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    if where.scheme in ("tcp", "tls") and where.hostname:
        socket.create_connection((where.hostname, where.port or 8786), timeout=seconds).close()


def _game_workers(client: Any) -> dict[str, tuple[int, str]]:
    """The cluster's workers that offer game slots: how many each, and its Dask id (a worker started again
    at the same address is another worker, to greet again)."""
    from arena.tournament.workers import RESOURCE

    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    seen = {
        str(a): (int(w.get("resources", {}).get(RESOURCE, 0)), str(w.get("id", "")))
        for a, w in workers.items()
    }
    return {a: (n, id_) for a, (n, id_) in seen.items() if n > 0}


def _game_slots(client: Any) -> int:
    return sum(n for n, _ in _game_workers(client).values())


def _processing(client: Any) -> dict[str, str]:
    """Where each task the scheduler has given a worker is: task key -> worker address."""
    with contextlib.suppress(Exception):
        return {str(k): str(a) for a, keys in client.processing().items() for k in keys}
    return {}


class _Pace:
    """Games per task: Dask costs a few ms per task (~5 ms of wall time on a loaded 2-core machine), nothing
    beside a real game of seconds, but most of a random bot's game of a few ms. So a task carries one game
    until games have been timed, then as many as take about `seconds` (at most `most`): the cost is spread
    over them, and a bench or a failure still acts within a fraction of a second."""

    def __init__(self, seconds: float = 0.25, most: int = 32) -> None:
        self.seconds = seconds
        self.most = most
        self.mean: float | None = None  # seconds a game, a moving average

    def see(self, seconds: float, games: int) -> None:
        if games:
            each = seconds / games
            self.mean = each if self.mean is None else 0.8 * self.mean + 0.2 * each

    def games(self) -> int:
        if self.mean is None:
            return 1
        return max(1, min(self.most, int(self.seconds / max(self.mean, 1e-6))))

    def deadline(self, games: int, longest: float) -> float:
        """How long a task of `games` may take before it is sent again: `longest` until games have been
        timed, then twenty times their pace (at least a minute, or `longest` if shorter)."""
        if self.mean is None:
            return longest
        return max(min(60.0, longest), 20 * self.mean * games)


@dataclasses.dataclass
class _Task:
    """A task out on the cluster: its games (indices of the run's slots), when it was sent, and the workers
    it may run on."""

    games: tuple[int, ...]
    sent: float
    workers: tuple[str, ...]


def _greeting() -> Callable[[str, str, bytes], str]:
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
            from arena.tournament import identity

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
        from arena.tournament import workers

        return workers.join(plugin, arena)

    return hello


class _Run:
    """One `Cluster.play`: the workers as this run knows them, the tasks out, and the games still to play.

    A worker is greeted once when it shows up (`_greeting`): accepted if it runs this arena and can play
    as asked, else dropped. Tasks and bots go to accepted workers only (Dask's `workers=`); a worker that
    forges a game, fails its games or refuses them is dropped too, its games played elsewhere. A game whose
    task died with its worker or never answered is counted, and tried at most `tries` times; one that
    failed on `tries` workers ends the run, as does having no worker left to play for `workers_s`."""

    def __init__(
        self,
        cluster: Cluster,
        distributed: Any,
        client: Any,
        ours: str,
        slots: Sequence[Slot],
        conditions: Conditions,
        on_game: OnGame,
        instead: Instead | None,
        on_machine: Callable[[Machine], None] | None,
    ) -> None:
        from arena.tournament import workers

        self.cluster, self.client, self.ours = cluster, client, ours
        self.slots, self.conditions = slots, conditions
        self.on_game, self.instead, self.on_machine = on_game, instead, on_machine
        self.plugin = f"arena-{conditions.tag or 'run'}"
        self.arena = pickle.dumps(workers.Arena(conditions, cluster.idle_s))  # unpickled by workers.join
        self.hello = _greeting()
        self.live: dict[str, tuple[int, str]] = {}  # workers with game slots: address -> (slots, Dask id)
        self.accepted: dict[str, str] = {}  # greeted and fit to play: address -> Dask id
        self.greeting: dict[str, tuple[Any, str]] = {}  # address -> its greeting's future, Dask id
        self.joined: set[str] = set()  # where this run's plugin was set up: ended with the run
        self.looked = 0.0
        self.futures: dict[Any, _Task] = {}
        self.shipped: dict[tuple[str, str], Any] = {}  # bot version -> the future of its files
        self.deaths: Counter[int] = Counter()  # game -> its tasks that died, were lost or never answered
        self.played = 0  # games the workers returned in this run
        self.played_at: dict[int, int] = {}  # game -> `played` when its task last died
        self.failed: dict[int, set[str]] = {}  # game -> workers its tasks failed on (dropped for it)
        self.avoid: dict[int, set[str]] = {}  # game -> workers where its task hung: not sent there again
        self.waiting = deque(range(len(slots)))  # not yet sent, in schedule order; put back at the front
        self.pace = _Pace()
        self.serial = itertools.count(1)
        self.done = distributed.as_completed([], loop=client.loop)
        self.last_news = time.monotonic()

    def play(self) -> None:
        try:
            self.look(force=True)
            self.wait_for_greetings()
            while self.futures or self.waiting:
                self.look()
                self.feed()
                if not self.futures:
                    self.wait_for_workers()
                elif self.done.has_ready():
                    future = next(self.done)
                    if future in self.futures:
                        self.settle(future, self.futures.pop(future))
                else:
                    self.watch()
                    time.sleep(0.02)
        finally:
            self.close()

    # --- the workers ---------------------------------------------------------------------------------

    def look(self, force: bool = False) -> None:
        """What the scheduler knows of the workers, asked at most once a second: greet the new ones, read
        the greetings that came back, forget the workers that left, and take back the tasks that only
        workers no longer accepted could run."""
        now = time.monotonic()
        if not force and now - self.looked < 1.0:
            return
        self.looked = now
        self.live = _game_workers(self.client)
        for address, id_ in list(self.accepted.items()):
            if self.live.get(address, (0, ""))[1] != id_:  # gone, or started again at that address
                del self.accepted[address]
        for address, (future, id_) in list(self.greeting.items()):
            if self.live.get(address, (0, ""))[1] != id_:
                del self.greeting[address]
                with contextlib.suppress(Exception):
                    self.client.cancel([future], force=True)
            elif future.done():
                del self.greeting[address]
                self.welcome(address, id_, future)
        for address, (_, id_) in self.live.items():
            if address not in self.accepted and address not in self.greeting and address not in self.dropped:
                self.greet(address, id_)
        for future, task in list(self.futures.items()):
            if not set(task.workers) & set(self.accepted):
                gone = not set(task.workers) & set(self.live)
                self.withdraw(future)  # Dask would wait for one of its workers for ever
                if gone:
                    self.died(task, "its workers left")

    @property
    def dropped(self) -> dict[str, str]:
        return self.cluster.dropped

    def greet(self, address: str, id_: str) -> None:
        """Send a new worker the run's greeting, to run before anything else of the run goes there."""
        future = self.cluster._patiently(
            self.client,
            lambda: self.client.submit(
                self.hello,
                self.ours,
                self.plugin,
                self.arena,
                key=f"arena-hello-{self.conditions.tag}-{next(self.serial)}",
                workers=[address],
                pure=False,
            ),
        )
        self.greeting[address] = (future, id_)

    def welcome(self, address: str, id_: str, future: Any) -> None:
        """A worker's answer to the greeting: accept it, or drop it and say why."""
        if future.status != "finished":
            self.drop(
                address, None, f"it could not run arena's greeting ({future.status}): is it the same Python?"
            )
            return
        answer = _answer(future)
        future.release()
        if isinstance(answer, str):
            self.drop(address, None, answer)
            return
        if answer.get("version") == self.ours:
            self.joined.add(address)
        machine, why = _greeted(answer, address, self.live.get(address, (0, ""))[0])
        if machine is None:
            self.drop(address, None, why)
        elif why or (why := self.cluster._unfit(machine, self.ours)):
            self.drop(address, machine, why)
        elif machine.host in self.dropped:
            self.drop(
                address, machine, f"its machine was dropped from this run: {self.dropped[machine.host]}"
            )
        else:
            self.accepted[address] = id_

    def drop(self, address: str, machine: Machine | None, why: str) -> None:
        """Play no more games on this worker (nor on its machine), and name it. It is not retired (Dask's
        retirement waits for its tasks, without a deadline): it is sent nothing more, its tasks are taken
        back, what it still answers is not read, and the bots are sent again to the workers that remain."""
        self.dropped[address] = why
        self.accepted.pop(address, None)
        if machine is not None:
            self.dropped[machine.host] = why
            self.cluster.named[f"{machine.host} ({address})"] = why
            if self.on_machine:
                self.on_machine(dataclasses.replace(machine, address=address, refused=why))
        else:
            self.cluster.named[address] = why
            log.warning(f"worker {address} dropped from this run: {why}")
        there = {key for key, where in _processing(self.client).items() if where == address}
        for future in [f for f in self.futures if f.key in there]:
            self.withdraw(future)
        self.shipped.clear()

    def wait_for_greetings(self) -> None:
        """Before the first game: the greetings of the workers there are, up to `connect_s`, so that every
        worker that is up when the run starts has its share of the first games."""
        deadline = time.monotonic() + self.cluster.connect_s
        while self.greeting and time.monotonic() < deadline:
            time.sleep(0.05)
            self.look(force=True)

    def wait_for_workers(self) -> None:
        """Games wait and no worker may play them: wait up to `workers_s` for one that may."""
        self.again(self.draw(len(self.waiting)))  # those `instead` records need no worker
        if not self.waiting:
            return
        deadline = time.monotonic() + self.cluster.workers_s
        while not self.accepted:
            if time.monotonic() > deadline:
                raise ClusterError(self.none_left())
            self.cluster._alive(self.client)
            time.sleep(0.2)
            self.look(force=True)
        self.last_news = time.monotonic()

    def none_left(self) -> str:
        """Why no worker plays, in one line."""
        c = self.cluster
        if c.named:
            names = "; ".join(f"{name}: {why}" for name, why in c.named.items())
            return (
                f"every worker of the cluster at {c.address} was dropped: {names}; no other joined in "
                f"{c.workers_s:g} s: fix what is said (or start other workers) and run the same command "
                "again to resume"
            )
        if self.greeting:
            return (
                f"no worker of the cluster at {c.address} answered arena's greeting in {c.workers_s:g} s "
                f"({', '.join(sorted(self.greeting))}); the games stored so far are kept: run the same "
                "command again to resume"
            )
        from arena.tournament.workers import RESOURCE

        return (
            f"no worker of the cluster at {c.address} offers game slots after {c.workers_s:g} s: start "
            f"workers with 'dask worker {c.address} --nthreads N --resources {RESOURCE}=N', N the "
            "machine's cores"
        )

    # --- the games -----------------------------------------------------------------------------------

    def capacity(self) -> int:
        """Tasks to keep out: twice the accepted workers' game slots, so that a worker that finishes a
        task finds the next one waiting."""
        return 2 * max(1, sum(self.live.get(a, (0, ""))[0] for a in self.accepted))

    def feed(self) -> None:
        while len(self.futures) < self.capacity() and self.accepted:
            batch = self.draw(self.pace.games())
            if not batch:
                return
            self.submit(batch)

    def draw(self, count: int) -> tuple[int, ...]:
        """The next `count` games to play, after recording those that `instead` says need no play."""
        batch: list[int] = []
        while len(batch) < count and self.waiting:
            i = self.waiting.popleft()
            if self.instead is not None and (record := self.instead(self.slots[i])) is not None:
                self.on_game(self.slots[i], record)
            else:
                batch.append(i)
        return tuple(batch)

    def again(self, batch: tuple[int, ...]) -> None:
        self.waiting.extendleft(reversed(batch))

    def ship(self, bot: Bot, where: Sequence[str]) -> Any:
        """The bot's files, sent to one of the workers `where` (or, should those go, another accepted
        one) and never to a dropped one; the others fetch them when a game of theirs needs them, so that
        a worker sees only the bots of the games it plays."""
        from arena.tournament import workers

        key = (bot.name, bot.digest)
        if key in self.shipped and self.shipped[key].status == "finished":
            return self.shipped[key]
        _unchanged(bot)
        pack = workers.pack(bot)

        def scatter() -> Any:
            self.look(force=True)
            to = [a for a in where if a in self.accepted] or sorted(self.accepted)
            if not to:
                raise ClusterError("no accepted worker to send the bots to")
            return self.client.scatter(pack, hash=False, workers=to)

        self.shipped[key] = self.cluster._patiently(self.client, scatter)
        return self.shipped[key]

    def submit(self, batch: tuple[int, ...]) -> None:
        from arena.tournament import workers

        avoid = set().union(*(self.avoid.get(i, set()) for i in batch))
        allowed = [a for a in sorted(self.accepted) if a not in avoid] or sorted(self.accepted)
        slots = self.slots
        bots = {b.digest: self.ship(b, allowed) for i in batch for b in (slots[i].south, slots[i].north)}
        plays = tuple((slots[i].south.digest, slots[i].north.digest, slots[i].opening) for i in batch)
        # A key of its own for every task, a resubmitted one too (Dask hands back the task of a key it still
        # knows); it names the task's first game and how many it carries.
        first = slots[batch[0]]
        name = f"{next(self.serial)}-r{first.round}-{first.south.name}-{first.north.name}-x{len(batch)}"
        future = self.cluster._patiently(
            self.client,
            lambda: self.client.submit(
                workers.play_task,
                self.plugin,
                bots,
                plays,
                key=f"arena-games-{self.conditions.tag}-{name}",
                resources={workers.RESOURCE: 1},
                workers=allowed,
                pure=False,
            ),
        )
        if not self.futures:
            self.last_news = time.monotonic()  # nothing was out: the wait for news starts now
        self.futures[future] = _Task(batch, time.monotonic(), tuple(allowed))
        self.done.add(future)

    def withdraw(self, future: Any) -> None:
        """Take a task back from the cluster; its games wait to be sent again."""
        task = self.futures.pop(future)
        with contextlib.suppress(Exception):
            self.client.cancel([future], force=True)
        self.again(task.games)

    def died(self, task: _Task, how: str) -> None:
        """A task lost with its worker, given up by Dask or never answered: counted against its games (the
        caller puts them back), of which one that has died `tries` times ends the run. Only deaths with no
        game played anywhere in between count: workers that die while the others go on playing are a lab's
        churn (a machine switched off, a worker killed), which costs their games and never the run; a game
        that takes down every worker it is sent to stops everything else too."""
        for i in task.games:
            if self.played > self.played_at.get(i, self.played):
                self.deaths[i] = 0  # games were played since it last died: that death was the churn's
            self.played_at[i] = self.played
            self.deaths[i] += 1
        worst = max(task.games, key=lambda i: self.deaths[i])
        if self.deaths[worst] >= self.cluster.tries:
            slot = self.slots[worst]
            raise ClusterError(
                f"the game of round {slot.round}, {slot.south.name} (south) against {slot.north.name}, "
                f"failed on {self.deaths[worst]} workers ({how}); the games stored so far are kept: run "
                "the same command again to resume"
            )

    def failed_there(
        self, address: str, machine: Machine | None, task: _Task, failure: str, refused: bool
    ) -> None:
        """A task whose worker answered that its games failed (an error) or that it will not play them
        (refused): the worker is dropped and named, and the games are played elsewhere, unless one of
        them has now failed on `tries` workers."""
        for i in task.games:
            self.failed.setdefault(i, set()).add(address)
        self.drop(address, machine, failure if refused else f"its games fail there: {failure}")
        worst = max(task.games, key=lambda i: len(self.failed[i]))
        if len(self.failed[worst]) >= self.cluster.tries:
            slot = self.slots[worst]
            raise ClusterError(
                f"the game of round {slot.round}, {slot.south.name} (south) against {slot.north.name}, "
                f"failed on {len(self.failed[worst])} workers, the last time with {failure}"
            )
        self.again(task.games)

    def settle(self, future: Any, task: _Task) -> None:
        """A task that came back: its games stored, or played again elsewhere."""
        self.last_news = time.monotonic()
        if future.status != "finished":  # its worker died or left under it, or Dask gave up on it
            self.cluster._alive(self.client)
            self.died(task, future.status)
            self.again(task.games)
            return
        address = _where(self.client, future)
        # A dropped worker's answer is not even read (it may be gone with it): its games are played elsewhere.
        answer = "" if address in self.dropped else _answer(future)
        future.release()
        if address in self.dropped:
            self.again(task.games)
        elif isinstance(answer, str):
            self.drop(address, None, answer)
            self.again(task.games)
        elif answer.get("lost"):  # its worker does not have the run set up (it started again): greet it
            self.accepted.pop(address, None)
            self.again(task.games)
        elif failure := answer.get("refused") or answer.get("error"):
            machine, _ = _greeted(answer, address, self.live.get(address, (0, ""))[0])
            self.failed_there(address, machine, task, _line(str(failure)), bool(answer.get("refused")))
        else:
            self.store(address, answer, task)

    def store(self, address: str, answer: dict[str, Any], task: _Task) -> None:
        """A task's games, checked by the rules engine, reported; those it left unplayed wait again."""
        c = self.cluster
        machine, records, seconds, why = c._accept(
            answer, task.games, self.slots, self.conditions, self.ours, address
        )
        if why or machine is None:
            self.drop(address, machine, why)
            self.again(task.games)
            return
        self.pace.see(seconds, len(records))
        if machine.address not in c.machines:
            c.machines[machine.address] = machine
            if self.on_machine:
                self.on_machine(machine)
        for k, record in records:
            self.on_game(self.slots[task.games[k]], record)
        self.played += len(records)
        unplayed = sorted(set(range(len(task.games))) - {k for k, _ in records})
        self.again(tuple(task.games[k] for k in unplayed))

    def watch(self) -> None:
        """While nothing comes back: the scheduler alive, some game back within `result_s`, and a task
        far slower than its games' pace taken back and sent again, to another worker."""
        c = self.cluster
        c._alive(self.client)
        now = time.monotonic()
        if now - self.last_news > c.result_s:
            raise ClusterError(
                f"no game came back from the cluster at {c.address} in {c.result_s:g} s "
                f"({len(self.futures)} tasks out); the games stored so far are kept: run the same "
                "command again to resume"
            )
        late = [
            (future, task)
            for future, task in self.futures.items()
            if now - task.sent > self.pace.deadline(len(task.games), c.result_s)
        ]
        where = _processing(self.client) if late else {}
        for future, task in late:
            log.warning(f"{future.key}: no answer in {now - task.sent:.0f} s; its games are sent again")
            if future.key in where:
                for i in task.games:
                    self.avoid.setdefault(i, set()).add(where[future.key])
            self.withdraw(future)
            self.died(task, f"no answer in {now - task.sent:.0f} s")

    def close(self) -> None:
        """The run's tasks cancelled and its plugin ended on every worker that has it (each ends its
        bots), within a deadline; then the connection closed."""
        from arena.tournament import workers

        try:
            out = [f for f, _ in self.greeting.values()] + list(self.futures)
            if out:
                with contextlib.suppress(Exception):
                    self.client.cancel(out, force=True)
            with contextlib.suppress(Exception):  # clean-up must not hide why the run stopped
                there = sorted(self.joined & set(_game_workers(self.client)))
                if there:
                    # `callback_timeout` is the client's own deadline for the call (Client.sync)
                    self.client.run(
                        workers.leave, self.plugin, workers=there, on_error="return", callback_timeout=30
                    )
        finally:
            with contextlib.suppress(Exception):
                self.client.close(timeout=10)


def _unchanged(bot: Bot) -> None:
    """ClusterError if the bot's files no longer hash to the version the run plays: every worker would
    refuse them (workers.Cache), and none of them is to blame."""
    from arena.match.bots import BotError, load_bot

    try:
        now = load_bot(bot.path).digest
    except BotError as e:
        raise ClusterError(f"bot {bot.name!r} cannot be sent to the workers: {_line(str(e))}") from None
    if now != bot.digest:
        raise ClusterError(
            f"bot {bot.name!r} changed after the run began: its files hash to {now}, not to the version "
            f"{bot.digest} it plays; run the same command again to play the version there is now"
        )


def _greeted(answer: dict[str, Any], address: str, slots: int) -> tuple[Machine | None, str]:
    """A greeting's (or a failed task's) answer: the machine it names, and why it cannot play ("": the
    greeting found nothing against it; the caller checks its version and sandbox)."""
    from arena.tournament.backend import Machine

    if isinstance(answer.get("machine"), dict):
        try:
            return _machine(answer["machine"], address), _line(str(answer.get("error") or ""))
        except (KeyError, TypeError, ValueError) as e:
            return None, f"its greeting names no machine ({type(e).__name__}: {_line(str(e))})"
    host, cores, version = answer.get("host"), answer.get("cores"), answer.get("version")
    if type(host) is not str or type(version) is not str:
        return None, "its greeting names no machine and no arena version"
    machine = Machine(
        address, _line(host, 80) or address, cores if type(cores) is int else 0, slots, False, False, (),
        _line(version, 120),
    )  # fmt: skip
    error = answer.get("error")
    return machine, (f"arena could not start its games there: {_line(str(error))}" if error else "")
