"""Playing a tournament's games on the workers of a Dask cluster: `arena run --cluster tcp://HOST:8786`.

The machine that runs `arena run` keeps the schedule, the store (its one writer) and the page; the workers
only play. Each game is one Dask task that needs one game slot of its worker (the worker resource `games`:
`dask worker tcp://HOST:8786 --resources games=N`, N its cores), so a worker plays at most one game per core
and a move's time means the same on every machine. The worker's side, a plugin that keeps the bots'
processes alive across games and confines them as `arena run` does locally, is arena/tournament/workers.py.

Bots travel by content: each bot's files are scattered to the workers once (a worker that joins later gets
them from another worker), and the workers keep them on disk by digest. A game whose worker died or left is
played again elsewhere (Dask does so by itself; this side submits it again should Dask give up on it), and a
game is stored when its result reaches this side, once. Dask is imported only here, only when it is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
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
    `tries` workers that died under it before the run stops. A worker that runs another arena, returns a
    game the rules engine does not replay to its record, or (`require_sandbox`) has no sandbox, is dropped
    from the run: its games are played elsewhere, and it is named (`on_machine`, with `refused`).
    `require_sandbox` is by default on when the games ask for the sandbox and this machine has it."""

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
        from arena.tournament import workers

        client = self._connect(distributed)
        plugin = f"arena-{conditions.tag or 'run'}"
        futures: dict[Any, tuple[int, ...]] = {}  # tasks on the cluster: Dask future -> their games' indices
        sent: dict[Any, float] = {}  # when each task was sent
        shipped: dict[tuple[str, str], Any] = {}  # bot version -> the future of its files on the cluster
        tries: Counter[tuple[int, ...]] = Counter()
        pace = _Pace()
        serial = itertools.count(1)
        try:
            capacity = _Capacity(client, self._slots(client))
            client.register_plugin(workers.Arena(conditions, self.idle_s), name=plugin)
            done = distributed.as_completed([], loop=client.loop)
            # Games not yet sent, in schedule order; games a task left unplayed go back to its front.
            waiting = deque(range(len(slots)))
            last_news = time.monotonic()

            def ship(bot: Bot) -> Any:
                """The bot's files, sent to one worker; the others fetch them when a game of theirs needs
                them, so that a worker sees only the bots of the games it plays."""
                key = (bot.name, bot.digest)
                if key not in shipped or shipped[key].status != "finished":
                    shipped[key] = self._patiently(
                        client, lambda: client.scatter(workers.pack(bot), hash=False)
                    )
                return shipped[key]

            def submit(batch: tuple[int, ...]) -> None:
                tries[batch] += 1
                first = slots[batch[0]]
                bots = {b.digest: ship(b) for i in batch for b in (slots[i].south, slots[i].north)}
                plays = tuple((slots[i].south.digest, slots[i].north.digest, slots[i].opening) for i in batch)
                # A key of its own for every task, a resubmitted one too (Dask hands back the task of a key
                # it still knows); it names the task's first game and how many it carries.
                name = f"{next(serial)}-r{first.round}-{first.south.name}-{first.north.name}-x{len(batch)}"
                allowed = capacity.allowed(self.dropped)
                future = self._patiently(
                    client,
                    lambda: client.submit(
                        workers.play_task,
                        plugin,
                        bots,
                        plays,
                        key=f"arena-games-{conditions.tag}-{name}",
                        resources={workers.RESOURCE: 1},
                        workers=allowed,
                        pure=False,
                    ),
                )
                futures[future] = batch
                sent[future] = time.monotonic()
                done.add(future)

            def draw(count: int) -> tuple[int, ...]:
                """The next `count` games to play, after recording those that `instead` says need no play."""
                batch: list[int] = []
                while len(batch) < count and waiting:
                    i = waiting.popleft()
                    if instead is not None and (record := instead(slots[i])) is not None:
                        on_game(slots[i], record)
                    else:
                        batch.append(i)
                return tuple(batch)

            def feed() -> None:
                while len(futures) < capacity.target() and (batch := draw(pace.games())):
                    submit(batch)

            def again(batch: tuple[int, ...]) -> None:
                waiting.extendleft(reversed(batch))

            def drop(address: str, machine: Machine | None, why: str) -> None:
                """Play no more games on this worker (nor on its machine), and name it."""
                self.dropped[address] = why
                if machine is not None:
                    self.dropped[machine.host] = why
                    if on_machine:
                        on_machine(dataclasses.replace(machine, address=address, refused=why))
                else:
                    log.warning(f"worker {address} dropped from this run: {why}")
                # It is not retired (Dask's retirement waits for its tasks, without a deadline): it is sent no
                # more tasks (`allowed`), and what it still answers is not read.

            feed()
            while futures:
                if not done.has_ready():
                    self._alive(client)
                    now = time.monotonic()
                    if now - last_news > self.result_s:
                        raise ClusterError(
                            f"no game came back from the cluster at {self.address} in {self.result_s:g} s "
                            f"({len(futures)} tasks out); the games stored so far are kept: run the same "
                            "command again to resume"
                        )
                    for future, at in list(sent.items()):
                        if now - at > pace.deadline(len(futures[future]), self.result_s):
                            log.warning(
                                f"{future.key}: no answer in {now - at:.0f} s; its games are sent again"
                            )
                            client.cancel([future], force=True)
                    time.sleep(0.02)
                    continue
                future = next(done)
                if future not in futures:
                    continue
                batch = futures.pop(future)
                sent.pop(future, None)
                last_news = time.monotonic()
                if future.status == "finished":
                    address = _where(client, future)
                    # A dropped worker's answer is not even read (it may be gone with it): its games are
                    # played elsewhere.
                    answer = "" if address in self.dropped else _answer(future)
                    future.release()
                    if address in self.dropped:
                        again(batch)
                    elif isinstance(answer, str):
                        drop(address, None, answer)
                        again(batch)
                    elif answer.get("error") and tries[batch] < self.tries:
                        submit(batch)  # it failed there: another worker tries
                    elif answer.get("error"):
                        slot = slots[batch[0]]
                        raise ClusterError(
                            f"the game of round {slot.round}, {slot.south.name} (south) against "
                            f"{slot.north.name}, failed on {tries[batch]} workers, the last time with "
                            f"{_line(str(answer['error']))}"
                        )
                    else:
                        machine, records, seconds, why = self._accept(
                            answer, batch, slots, conditions, ours, address
                        )
                        if why:
                            drop(address, machine, why)
                            again(batch)
                        else:
                            pace.see(seconds, len(records))
                            if machine.address not in self.machines:
                                self.machines[machine.address] = machine
                                if on_machine:
                                    on_machine(machine)
                            for k, record in records:
                                on_game(slots[batch[k]], record)
                            unplayed = sorted(set(range(len(batch))) - {k for k, _ in records})
                            again(tuple(batch[k] for k in unplayed))
                elif tries[batch] >= self.tries:
                    self._alive(client)
                    slot = slots[batch[0]]
                    raise ClusterError(
                        f"the game of round {slot.round}, {slot.south.name} (south) against "
                        f"{slot.north.name}, failed on {tries[batch]} workers ({future.status}); the games "
                        "stored so far are kept: run the same command again to resume"
                    )
                else:
                    self._alive(client)
                    submit(batch)  # its worker died or left, or it timed out: another one plays its games
                feed()
        finally:
            try:
                if futures:
                    with contextlib.suppress(Exception):
                        client.cancel(list(futures), force=True)
                with contextlib.suppress(Exception):  # clean-up must not hide why the run stopped
                    client.unregister_worker_plugin(plugin)  # each worker ends its bots
            finally:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)

    def _accept(
        self,
        answer: dict[str, Any],
        batch: tuple[int, ...],
        slots: Sequence[Slot],
        conditions: Conditions,
        ours: str,
        address: str,
    ) -> tuple[Any, list[tuple[int, GameRecord]], float, str]:
        """A task's answer checked: its machine, its records, seconds, and why to drop the worker ("": keep
        it; then the machine is a Machine)."""
        from arena.tournament import audit
        from arena.tournament.workers import Refused

        try:
            machine = _machine(answer["machine"], address)
        except (KeyError, TypeError, ValueError) as e:
            return None, [], 0.0, f"its answer names no machine ({type(e).__name__}: {_line(str(e))})"
        if machine.version != ours:
            return (
                machine,
                [],
                0.0,
                (
                    f"it runs arena {machine.version or 'of an unknown version'}, this machine arena {ours}: "
                    "install the same arena there"
                ),
            )
        if self._require and not machine.sandbox:
            return (
                machine,
                [],
                0.0,
                (
                    "it has no sandbox (bubblewrap): install it there, or pass --no-require-sandbox to let "
                    "unsandboxed machines play"
                ),
            )
        if answer.get("refused"):
            raise ClusterError(_line(str(answer["refused"])))
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


def _game_workers(client: Any) -> dict[str, int]:
    """The cluster's workers that offer game slots, and how many each."""
    from arena.tournament.workers import RESOURCE

    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    slots = {str(a): int(w.get("resources", {}).get(RESOURCE, 0)) for a, w in workers.items()}
    return {a: n for a, n in slots.items() if n > 0}


def _game_slots(client: Any) -> int:
    return sum(_game_workers(client).values())


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
        timed, then twenty times their pace (at least a minute)."""
        if self.mean is None:
            return longest
        return max(60.0, 20 * self.mean * games)


class _Capacity:
    """How many tasks to keep on the cluster: twice its game slots, so that a worker that finishes a task
    finds the next one waiting; asked again every few seconds, as workers come and go."""

    def __init__(self, client: Any, slots: int) -> None:
        self.client = client
        self.slots = slots
        self.asked = time.monotonic()

    def target(self) -> int:
        if time.monotonic() - self.asked > 5.0:
            self.asked = time.monotonic()
            self.slots = _game_slots(self.client) or self.slots
        return 2 * max(1, self.slots)

    def allowed(self, dropped: dict[str, str]) -> list[str] | None:
        """The workers a task may go to: any (None), or once a worker was dropped, every other one."""
        if not dropped:
            return None
        return [a for a in _game_workers(self.client) if a not in dropped] or None
