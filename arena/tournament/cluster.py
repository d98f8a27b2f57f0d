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
import itertools
import socket
import time
import urllib.parse
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.match.bots import Bot
    from arena.tournament.scheduler import Games, Instead, Machine, OnGame
    from arena.tournament.store import Slot

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
    """The back end of a Dask cluster, reached through its scheduler at `address` ('tcp://HOST:8786').

    `connect_s` bounds the wait for the scheduler, `workers_s` the wait for a worker with game slots;
    `idle_s` is how long a worker keeps a bot process that has no game; a game is tried on at most `tries`
    workers that died under it before the run stops."""

    remote = True

    def __init__(
        self,
        address: str,
        *,
        connect_s: float = 10.0,
        workers_s: float = 60.0,
        idle_s: float = 30.0,
        tries: int = 5,
    ) -> None:
        self.address = address
        self.connect_s = connect_s
        self.workers_s = workers_s
        self.idle_s = idle_s
        self.tries = tries
        self.machines: dict[str, Machine] = {}  # every worker that reported a game, by address

    def play(
        self,
        slots: Sequence[Slot],
        games: Games,
        on_game: OnGame,
        instead: Instead | None = None,
        on_machine: Callable[[Machine], None] | None = None,
    ) -> None:
        if not slots:
            return
        distributed = _distributed()
        from arena.tournament import workers

        client = self._connect(distributed)
        plugin = f"arena-{games.tag or 'run'}"
        futures: dict[Any, tuple[int, ...]] = {}  # tasks on the cluster: Dask future -> their games' indices
        shipped: dict[tuple[str, str], Any] = {}  # bot version -> the future of its files on the workers
        tries: Counter[tuple[int, ...]] = Counter()
        pace = _Pace()
        serial = itertools.count(1)
        try:
            capacity = _Capacity(client, self._slots(client))
            client.register_plugin(workers.Arena(games, self.idle_s), name=plugin)
            done = distributed.as_completed([], loop=client.loop, with_results=True, raise_errors=False)
            # Games not yet sent, in schedule order; games a task left unplayed go back to its front.
            waiting = deque(range(len(slots)))

            def ship(bot: Bot) -> Any:
                key = (bot.name, bot.digest)
                if key not in shipped or shipped[key].status != "finished":
                    shipped[key] = client.scatter(workers.pack(bot), broadcast=True, hash=False)
                return shipped[key]

            def submit(batch: tuple[int, ...]) -> None:
                tries[batch] += 1
                first = slots[batch[0]]
                bots = {b.digest: ship(b) for i in batch for b in (slots[i].south, slots[i].north)}
                plays = tuple((slots[i].south.digest, slots[i].north.digest, slots[i].opening) for i in batch)
                # A key of its own for every task, a resubmitted one too (Dask hands back the task of a key
                # it still knows); it names the task's first game and how many it carries.
                name = f"{next(serial)}-r{first.round}-{first.south.name}-{first.north.name}-x{len(batch)}"
                future = client.submit(
                    workers.play,
                    plugin,
                    bots,
                    plays,
                    key=f"arena-games-{games.tag}-{name}",
                    resources={workers.RESOURCE: 1},
                    pure=False,
                )
                futures[future] = batch
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

            feed()
            while futures:
                future, result = next(done)
                batch = futures.pop(future)
                if future.status == "finished":
                    played, machine, seconds = result
                    pace.see(seconds, len(played))
                    if machine.address not in self.machines:
                        self.machines[machine.address] = machine
                        if on_machine:
                            on_machine(machine)
                    for k, record in played:
                        on_game(slots[batch[k]], record)
                    unplayed = sorted(set(range(len(batch))) - {k for k, _ in played})
                    waiting.extendleft(batch[k] for k in reversed(unplayed))
                elif isinstance(result, workers.Refused):
                    raise ClusterError(str(result))
                elif tries[batch] >= self.tries:
                    slot = slots[batch[0]]
                    raise ClusterError(
                        f"the game of round {slot.round}, {slot.south.name} (south) against "
                        f"{slot.north.name}, failed on {tries[batch]} workers, the last time with "
                        f"{type(result).__name__}: {result}"
                    )
                else:
                    submit(batch)  # its worker died or left: another one plays its games
                feed()
        finally:
            try:
                if futures:
                    client.cancel(list(futures), force=True)
                with contextlib.suppress(Exception):  # clean-up must not hide why the run stopped
                    client.unregister_worker_plugin(plugin)  # each worker ends its bots
            finally:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)

    def _connect(self, distributed: Any) -> Any:
        try:
            _knock(self.address, self.connect_s)  # a refused connection is said at once, not after retries
            return distributed.Client(self.address, timeout=self.connect_s, set_as_default=False)
        except Exception as e:  # OSError, TimeoutError, ValueError for a bad address: all one line
            raise ClusterError(
                f"cannot reach the Dask scheduler at {self.address} ({type(e).__name__}: {e}); start it "
                "there with 'dask scheduler', or give its address as tcp://HOST:8786"
            ) from None

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


def _knock(address: str, seconds: float) -> None:
    """Open and close a TCP connection to a tcp:// address (OSError if nobody listens there)."""
    where = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    if where.scheme == "tcp" and where.hostname:
        socket.create_connection((where.hostname, where.port or 8786), timeout=seconds).close()


def _game_slots(client: Any) -> int:
    from arena.tournament.workers import RESOURCE

    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    return int(sum(w.get("resources", {}).get(RESOURCE, 0) for w in workers.values()))


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
