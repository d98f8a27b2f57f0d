"""Which games go where: tasks of a few games each, paced, to accepted workers only, with the bots they
need shipped once; a task whose workers are gone, that hangs or whose worker is dropped is taken back and
its games wait again, first in line."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from arena.lab.blame import Blame
from arena.lab.context import Context
from arena.lab.membership import Membership
from arena.lab.plumbing import ClusterError, distributed, line, processing
from arena.lab.retry import Tries
from arena.lab.shipments import READ_S, Shipments

if TYPE_CHECKING:
    from arena.match.bots import Bot

log = logging.getLogger("arena")


class Pace:
    """Games per task: Dask costs a few ms per task (~5 ms of wall time on a loaded 2-core machine), nothing
    beside a real game of seconds, but most of a random bot's game of a few ms. So a task carries one game
    until games have been timed, then as many as take about `seconds` (at most `most`): the cost is spread
    over them, and a bench or a failure still acts within a fraction of a second. A game's time is the
    lower median of the latest `window` tasks' times a game: a machine's first task pays for its setup (the
    warden, the bots' first start), often a hundred games' time, which a moving average carried for twenty
    tasks of a few games, the worker idle between them; one odd task, fast or slow, moves it not at all."""

    def __init__(self, seconds: float = 0.25, most: int = 128, window: int = 5) -> None:
        self.seconds = seconds
        self.most = most
        self.times: deque[float] = deque(maxlen=window)  # seconds a game, of the latest tasks

    @property
    def mean(self) -> float | None:
        """Seconds a game (None until a task has been timed)."""
        return statistics.median_low(self.times) if self.times else None

    def see(self, seconds: float, games: int) -> None:
        if games:
            self.times.append(seconds / games)

    def games(self, left: int, tasks: int) -> int:
        """Games for the next task, `left` games waiting for `tasks` tasks to carry them: near the end no
        more than an even share, so that no game slot idles while another plays a long last task (and a
        short run's games go to every machine, whose forfeits another one then confirms)."""
        mean = self.mean
        paced = 1 if mean is None else int(self.seconds / max(mean, 1e-6))
        return max(1, min(self.most, paced, math.ceil(left / max(1, tasks))))

    def deadline(self, games: int, longest: float) -> float:
        """How long a task of `games` may take before it is sent again: `longest` until games have been
        timed, then twenty times their pace (at least a minute, or `longest` if shorter)."""
        mean = self.mean
        if mean is None:
            return longest
        return max(min(60.0, longest), 20 * mean * games)


@dataclasses.dataclass
class Task:
    """A task out on the cluster: its games (indices of the run's slots), when it was sent, the workers
    it may run on, and the keys of the bots' shipments it needs (a task left waiting for a shipment that
    only a dropped machine holds is sent again with a new one, on a new clock, charged to nobody)."""

    games: tuple[int, ...]
    sent: float
    workers: tuple[str, ...]
    shipments: frozenset[str] = frozenset()


class Dispatch:
    """The run's games still to play (`waiting`) and its tasks out on the cluster (`futures`)."""

    def __init__(
        self, ctx: Context, members: Membership, tries: Tries, blame: Blame, serial: itertools.count[int]
    ) -> None:
        self.ctx = ctx
        self.members = members
        self.tries = tries
        self.blame = blame
        self.serial = serial
        self.futures: dict[Any, Task] = {}
        self.shipped: dict[tuple[str, str], Any] = {}  # bot version -> the future of its files
        self.seals: dict[str, str] = {}  # bot digest -> its shipment's seal (workers.Shipment.seal)
        # game -> machines (Membership.machine) it is not sent to again where there is another: where its
        # task hung or failed, or that made a claim another machine is to confirm
        self.avoid: dict[int, set[str]] = {}
        self.waiting = deque(range(len(ctx.slots)))  # not yet sent, in schedule order; put back at the front
        self.pace = Pace()
        self.shipments = Shipments(ctx.client, members.plugin, members.machine)
        self.shipments_s = READ_S
        self.tainted: set[str] = set()  # shipment keys found withheld, or held only by dropped machines
        self.done = distributed().as_completed([], loop=ctx.client.loop)
        self.news = threading.Event()  # set as each task finishes (from the client's thread)
        self.last_news = time.monotonic()

    def capacity(self) -> int:
        """Tasks to keep out: twice the accepted workers' game slots, so that a worker that finishes a
        task finds the next one waiting."""
        return 2 * max(1, sum(self.members.slots(a) for a in self.members.accepted))

    def feed(self) -> None:
        while len(self.futures) < (capacity := self.capacity()) and self.members.accepted:
            batch = self.draw(self.pace.games(len(self.waiting), capacity))
            if not batch:
                return
            self.submit(batch)

    def draw(self, count: int) -> tuple[int, ...]:
        """The next `count` games to play, after recording those that `instead` says need no play (and
        the forfeits of a bot charged with its failures)."""
        batch: list[int] = []
        slots, instead = self.ctx.slots, self.ctx.instead
        while len(batch) < count and self.waiting:
            i = self.waiting.popleft()
            record = self.blame.instead(slots[i])
            if record is None and instead is not None:
                record = instead(slots[i])
            if record is not None:
                self.ctx.on_game(slots[i], record)
            else:
                batch.append(i)
        return tuple(batch)

    def again(self, batch: tuple[int, ...]) -> None:
        self.waiting.extendleft(reversed(batch))

    def look(self) -> None:
        """The workers looked at again (now), and the tasks that only workers no longer accepted could run
        taken back."""
        self.members.look(force=True)
        self.orphans()

    def orphans(self) -> None:
        """Take back the tasks that only workers no longer accepted could run."""
        accepted, live = set(self.members.accepted), set(self.members.live)
        for future, task in list(self.futures.items()):
            if not set(task.workers) & accepted:
                gone = not set(task.workers) & live
                self.withdraw(future)  # Dask would wait for one of its workers for ever
                if gone:
                    self.tries.died(task.games, "its workers left")

    def ship(self, bot: Bot, where: Sequence[str]) -> Any:
        """The bot's files, sent to one of the workers `where` (or, should those go, another accepted
        one) and never to a dropped one; the others fetch them when a game of theirs needs them, so that
        a worker sees only the bots of the games it plays."""
        from arena.lab import workers

        key = (bot.name, bot.digest)
        if key in self.shipped and self.shipped[key].status == "finished":
            return self.shipped[key]
        unchanged(bot)
        shipment = workers.pack(bot)
        self.seals[bot.digest] = shipment.seal
        pack = shipment.plain()
        client = self.ctx.client

        def scatter() -> Any:
            self.look()
            to = [a for a in where if a in self.members.accepted] or sorted(self.members.accepted)
            if not to:
                raise ClusterError("no accepted worker to send the bots to")
            key = f"{workers.SHIPMENT}{bot.digest}-{next(self.serial)}"  # a key of its own
            return client.scatter({key: pack}, workers=to)[key]

        self.shipped[key] = self.ctx.patience.patiently(client, scatter)
        return self.shipped[key]

    def submit(self, batch: tuple[int, ...]) -> None:
        from arena.lab import workers

        accepted = self.members.accepted
        slots = self.ctx.slots
        avoid = set().union(*(self.avoid.get(i, set()) for i in batch))
        off = self.ctx.confirm.kept_off  # the machines a bot of the batch failed on only
        avoid |= set().union(
            *(off.get(b.name, set()) for i in batch for b in (slots[i].south, slots[i].north))
        )
        machine = self.members.machine
        allowed = [a for a in sorted(accepted) if machine(a) not in avoid] or sorted(accepted)
        bots = {b.digest: self.ship(b, allowed) for i in batch for b in (slots[i].south, slots[i].north)}
        plays = tuple((slots[i].south.digest, slots[i].north.digest, slots[i].opening) for i in batch)
        seals = {digest: (str(future.key), self.seals[digest]) for digest, future in bots.items()}
        # A key of its own for every task, a resubmitted one too (Dask hands back the task of a key it still
        # knows); it names the task's first game and how many it carries.
        first = slots[batch[0]]
        name = f"{next(self.serial)}-r{first.round}-{first.south.name}-{first.north.name}-x{len(batch)}"
        client = self.ctx.client
        future = self.ctx.patience.patiently(
            client,
            lambda: client.submit(
                workers.play_task,
                self.members.plugin,
                bots,
                plays,
                seals,
                key=f"arena-games-{self.ctx.conditions.tag}-{name}",
                resources={workers.RESOURCE: 1},
                workers=allowed,
                pure=False,
            ),
        )
        if not self.futures:
            self.last_news = time.monotonic()  # nothing was out: the wait for news starts now
        keys = frozenset(str(f.key) for f in bots.values())
        self.futures[future] = Task(batch, time.monotonic(), tuple(allowed), keys)
        self.done.add(future)
        future.add_done_callback(lambda _: self.news.set())

    def withdraw(self, future: Any) -> None:
        """Take a task back from the cluster; its games wait to be sent again."""
        task = self.futures.pop(future)
        with contextlib.suppress(Exception):
            self.ctx.client.cancel([future], force=True)
        self.again(task.games)

    def withdraw_from(self, address: str) -> None:
        """Take back the tasks the scheduler has given the worker at `address` (a dropped one), and send
        the bots again, to the workers that remain."""
        there = {key for key, at in processing(self.ctx.client).items() if at == address}
        for future in [f for f in self.futures if f.key in there]:
            self.withdraw(future)
        self.shipped.clear()
        self.stranded()

    def stranded(self, known: frozenset[str] = frozenset()) -> None:
        """Take back the tasks that need a shipment no accepted worker holds (`known`: ones found withheld),
        before they wait for it: a task of an honest worker left waiting for a copy only a dropped machine
        holds would pass its deadline, and be charged, through no fault of its own. Their games are sent
        again, with the bots shipped again under new keys, each task on a clock of its own from then."""
        from arena.lab.workers import SHIPMENT

        client = self.ctx.client
        wanted = {k for task in self.futures.values() for k in task.shipments if k.startswith(SHIPMENT)}
        if not wanted - known:
            lost = set(known)
        else:
            try:
                held = client.sync(
                    client.scheduler.who_has, keys=sorted(wanted), callback_timeout=self.shipments_s
                )
                holders = {str(k): {str(a) for a in v} for k, v in held.items()}
            except Exception:
                holders = {k: set(self.members.accepted) for k in wanted}  # not known: nothing taken back
            accepted = set(self.members.accepted)
            lost = set(known) | {k for k in wanted if not holders.get(k, set()) & accepted}
        self.tainted |= lost
        for future, task in list(self.futures.items()):
            if task.shipments & lost and future in self.futures:
                log.warning(
                    f"{future.key}: a bot's files it needs are held only by dropped machines: sent again"
                )
                self.withdraw(future)

    def late(self) -> None:
        """A task far slower than its games' pace taken back and sent again, to another worker; the
        worker that keeps it is dropped and named (a machine that holds its tasks would be waited on and
        sent them again for ever)."""
        now = time.monotonic()
        late = [
            (future, task, self.pace.deadline(len(task.games), self.ctx.patience.result_s))
            for future, task in self.futures.items()
            if now - task.sent > self.pace.deadline(len(task.games), self.ctx.patience.result_s)
        ]
        where = processing(self.ctx.client) if late else {}
        for future, task, deadline in late:
            if future not in self.futures:  # taken back with a worker dropped just before
                continue
            seconds = now - task.sent
            if task.shipments & self.tainted:  # it waited for a copy only a dropped machine held: nobody's
                log.warning(
                    f"{future.key}: it needs bots' files a dropped machine held; they are shipped again"
                )
                self.withdraw(future)
                self.shipped.clear()
                continue
            log.warning(f"{future.key}: no answer in {seconds:.0f} s; its games are sent again")
            # (asked before the task is taken back, which ends it there)
            waited = (at := where.get(future.key)) is not None and self.withheld(at, future.key)
            if future in self.futures:  # (not taken back by a worker dropped for withholding bots)
                self.withdraw(future)
            if waited:
                continue  # it waited for a bot's files another worker would not serve it plainly
            if at is not None:
                for i in task.games:
                    self.avoid.setdefault(i, set()).add(self.members.machine(at))
                if at in self.members.accepted:
                    self.members.drop(
                        at,
                        self.ctx.machines.get(at) or self.members.known.get(at),
                        f"it kept a task of {len(task.games)} games for {seconds:.0f} s without an answer "
                        f"(its deadline {deadline:.0f} s): is the machine stopped or overloaded?",
                    )
            self.tries.died(task.games, f"no answer in {seconds:.0f} s")

    def withheld(self, at: str, key: str) -> bool:
        """Whether the late task `key` on the worker at `at` still waits for bots' files: those shipped
        again, and the workers that would not serve them plainly dropped (not `at`)."""
        from arena.lab.workers import SHIPMENT, waiting_for

        client = self.ctx.client
        try:
            said = client.run(waiting_for, key, workers=[at], callback_timeout=self.shipments_s)
        except Exception:
            return False
        waits = [k for k in said.get(at) or [] if isinstance(k, str) and k.startswith(SHIPMENT)]
        if not waits:
            return False
        try:
            held = client.sync(client.scheduler.who_has, keys=waits, callback_timeout=self.shipments_s)
            holders = {str(k): [str(a) for a in v] for k, v in held.items()}
        except Exception:
            holders = {}
        for wanted in waits:
            digest = wanted.removeprefix(SHIPMENT).rsplit("-", 1)[0]
            name = self.blame.names.get(digest, digest)
            for verdict in self.shipments.withheld(at, name, wanted, holders.get(wanted, [])):
                if verdict.culprit in self.members.accepted:
                    self.members.drop(verdict.culprit, self.members.known.get(verdict.culprit), verdict.why)
            self.shipped.pop((name, digest), None)  # the next task's copy: a new key, a fresh scatter
        self.stranded(frozenset(waits))  # the other tasks waiting for those copies: sent again now
        log.warning(f"{key}: its worker {at} waited for bots' files; they are shipped again")
        return True


def unchanged(bot: Bot) -> None:
    """ClusterError if the bot's files no longer hash to the version the run plays: every worker would
    refuse them (workers.Cache), and none of them is to blame."""
    from arena.match.bots import BotError, load_bot

    try:
        now = load_bot(bot.path).digest
    except BotError as e:
        raise ClusterError(f"bot {bot.name!r} cannot be sent to the workers: {line(str(e))}") from None
    if now != bot.digest:
        raise ClusterError(
            f"bot {bot.name!r} changed after the run began: its files hash to {now}, not to the version "
            f"{bot.digest} it plays; run the same command again to play the version there is now"
        )
