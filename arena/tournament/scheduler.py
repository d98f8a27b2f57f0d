"""Who plays whom, and where the games are played.

A round is every ordered pair once (each pair meets twice, each bot once as south). The order inside a round
comes from a hash of (seed, round, south, north): the same seed and bots give the same schedule, and adding
a bot or a round inserts its games without reshuffling the others. Ratings are computed in this order, never
in the order games happen to finish, so parallel play does not change them.

Games are played by a back end (`Backend`): `Local`, worker processes (multiprocess) on this machine, or
`arena.tournament.cluster.Cluster`, the workers of a Dask cluster. Either way the workers keep their bots'
processes alive across games (NEWGAME, a `Pool`) and restart them after a fault, and this process stays the
store's one writer, committing every game at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import pickle
import queue
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

import multiprocess

from arena.game.openings import Book, Opening
from arena.game.openings import play as play_opening
from arena.game.rules import NORTH, SOUTH, Rules, parse_rules
from arena.match.bots import Bot
from arena.match.confine import Confinement, Warden
from arena.match.record import GameRecord
from arena.match.referee import Limits, Player, check_rules, play_game, starts_anywhere
from arena.tournament.settings import BENCH_AFTER
from arena.tournament.store import Slot, Store

MAX_IDLE_PLAYERS = 16  # bot processes a worker keeps alive between games, per game slot
log = logging.getLogger("arena")


def _ordinal(seed: int, rnd: int, south: str, north: str) -> str:
    return hashlib.blake2b(f"{seed}:{rnd}:{south}:{north}".encode(), digest_size=8).hexdigest()


def round_robin(bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None) -> list[Slot]:
    """Every ordered pair of distinct bots once per round, in the seeded order. All games of a round start
    from the round's opening, so each pair plays it once from each side; games of a bot whose protocol
    cannot begin at an opening (a Manchester agent) start from the start position."""
    slots = [
        Slot(r, _ordinal(seed, r, s.name, n.name), s, n, _opening(book, r, s, n))
        for r in range(1, rounds + 1)
        for s in bots
        for n in bots
        if s.name != n.name
    ]
    return sorted(slots, key=lambda s: (s.round, s.ordinal))


def _opening(book: Book | None, rnd: int, south: Bot, north: Bot) -> Opening:
    if book is None or not (starts_anywhere(south) and starts_anywhere(north)):
        return ()
    return book.for_round(rnd)


def gauntlet(hero: Bot, bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None) -> list[Slot]:
    """The round robin's games that involve `hero`: it meets every other bot twice a round."""
    return [s for s in round_robin(bots, rounds, seed, book) if hero.name in (s.south.name, s.north.name)]


@dataclass(frozen=True, slots=True)
class RunResult:
    scheduled: int  # games in the whole schedule
    before: int  # of those, already in the store when this run started
    played: int  # played and stored by this run
    interrupted: bool


@dataclass(frozen=True, slots=True)
class Games:
    """What every game of a run is played under, wherever it is played. `conf` is the confinement as this
    machine can enforce it for `Local`; a back end whose bots run elsewhere (`Backend.remote`) gets it as
    asked, and each of its machines resolves it for itself (`confine.capabilities`)."""

    spec: str
    limits: Limits
    conf: Confinement | None = None
    fresh: bool = False  # a new bot process for every game
    tag: str = ""  # the tournament, for a cluster to tell the workers of two tournaments' runs apart


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

    def summary(self) -> str:
        """One line for the page and the terminal."""
        confined = f"sandbox {'on' if self.sandbox else 'off'}, cgroups {'on' if self.cgroups else 'off'}"
        slots = f"{self.slots} game slot{'s' * (self.slots != 1)} on {self.cores} cores"
        dropped = f"; dropped from the run: {self.refused}" if self.refused else ""
        return f"{self.host} ({self.address}): {slots}; {confined}{dropped}"


OnGame = Callable[[Slot, GameRecord], None]
Instead = Callable[[Slot], GameRecord | None]


class Backend(Protocol):
    """Where a run's games are played: `play` plays `slots` and calls `on_game` in this process as each one
    ends (in any order), and `on_machine` once for each machine before its first game is reported; just
    before a game would be sent, `instead` may record it without playing (a benched bot's forfeit).
    KeyboardInterrupt stops it, ending its bots; games already reported are kept."""

    remote: bool  # the bots run on other machines, which confine them as they can (Games.conf as asked)

    def play(
        self,
        slots: Sequence[Slot],
        games: Games,
        on_game: OnGame,
        instead: Instead | None = None,
        on_machine: Callable[[Machine], None] | None = None,
    ) -> None: ...


class Pool:
    """The bot processes a worker keeps alive between games: a game takes the players it needs out and
    gives them back, and at most `keep` wait idle (the least recently used are ended first). Thread-safe,
    since a cluster worker plays several games at once."""

    def __init__(self, warden: Warden | None, grace_ms: int, keep: int = MAX_IDLE_PLAYERS) -> None:
        self.warden = warden
        self.grace_ms = grace_ms
        self.keep = keep
        self._idle: list[tuple[Player, float]] = []  # oldest first, with when each came back
        self._busy: set[Player] = set()
        self._lock = threading.Lock()
        self._closed = False

    def take(self, bot: Bot) -> Player:
        """An idle player of this bot version (its process may have ended after a fault), else a new one."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the bot processes of this worker have been ended: it plays no more games")
            found = next((i for i, (p, _) in enumerate(self._idle) if p.bot == bot), None)
            player = self._idle.pop(found)[0] if found is not None else Player(bot, warden=self.warden)
            self._busy.add(player)
            return player

    def give(self, player: Player, keep: bool = True) -> None:
        """A game is over: keep the player for the next game of its bot, or end its process."""
        with self._lock:
            self._busy.discard(player)
            ending = [player] if not keep or self._closed else []
            if not ending:
                self._idle.append((player, time.monotonic()))
            while len(self._idle) > self.keep:
                ending.append(self._idle.pop(0)[0])
        for p in ending:
            p.close(self.grace_ms)

    def end_idle(self, older_than: float) -> None:
        """End the processes that have waited more than `older_than` seconds for a game."""
        cut = time.monotonic() - older_than
        with self._lock:
            ending = [p for p, since in self._idle if since < cut]
            self._idle = [(p, since) for p, since in self._idle if since >= cut]
        for p in ending:
            p.close(self.grace_ms)

    def kill(self) -> None:
        """End every process now, also those of games still being played (which then end in a fault whose
        record nobody wants); the pool takes no player back after this."""
        with self._lock:
            self._closed = True
            players = [p for p, _ in self._idle] + list(self._busy)
            self._idle = []
        for p in players:
            p.kill()


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this worker when the tournament process dies, even by kill -9."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class _Stop:
    """A worker's stop signals: SIGTERM (the tournament stops, or died: PR_SET_PDEATHSIG) and SIGHUP (the
    terminal closed, which reaches the whole foreground group). The first raises SystemExit, which unwinds
    through the worker's finally that ends its (maybe frozen) bots. Python drops an exception raised while
    it runs an at-fork callback or a __del__ (a bot's start forks), so `check` raises it again between
    games. Later signals do nothing: they must not cut the clean-up short."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.signum = 0
        for stop in self.SIGNALS:
            if signal.getsignal(stop) is not signal.SIG_IGN:  # nohup arena run: a closed terminal is no stop
                signal.signal(stop, self)

    def __call__(self, signum: int, frame: object) -> None:
        if not self.signum:
            self.signum = signum
            raise SystemExit(128 + signum)

    def check(self) -> None:
        if self.signum:
            raise SystemExit(128 + self.signum)


def _worker(tasks, results, games: Games) -> None:  # type: ignore[no-untyped-def]
    """Play games from `tasks` until a None arrives; every exit path ends this worker's bot processes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler: this process's own
    stop = _Stop()
    _die_with_parent()
    rules = parse_rules(games.spec)
    warden = Warden(games.conf) if games.conf else None
    pool = Pool(warden, games.limits.quit_grace_ms)
    try:
        while True:
            stop.check()
            try:
                task = tasks.get(timeout=0.5)
            except queue.Empty:
                continue
            if task is None:
                break
            index, south_bot, north_bot, opening = pickle.loads(task)
            south, north = pool.take(south_bot), pool.take(north_bot)
            record = play_game(rules, south, north, games.limits, opening=opening)
            pool.give(south, keep=not games.fresh)
            pool.give(north, keep=not games.fresh)
            results.put(pickle.dumps((index, record)))
    finally:
        stop.signum = stop.signum or signal.SIGTERM  # from here on, no signal raises
        pool.kill()
        if warden:
            warden.close()


def play_slots(
    slots: Sequence[Slot],
    spec: str,
    limits: Limits,
    jobs: int,
    fresh: bool,
    on_game: OnGame,
    conf: Confinement | None = None,
    instead: Instead | None = None,
) -> None:
    """Play `slots` on `jobs` worker processes of this machine (the `Local` back end)."""
    Local(jobs).play(slots, Games(spec, limits, conf, fresh), on_game, instead)


class Local:
    """The back end of one machine: `jobs` worker processes (default: one per core).

    Games are handed out a few at a time (one more than the workers), so that `instead` can still decide,
    just before a game would be sent, to record it without playing (a benched bot's forfeit).
    KeyboardInterrupt (Ctrl-C) stops the workers, which end their bots; games already reported are kept.
    """

    remote = False

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or os.cpu_count() or 1

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
        jobs = max(1, min(self.jobs, len(slots)))
        ctx = multiprocess.get_context("fork")
        tasks, results = ctx.Queue(), ctx.Queue()
        pending = iter(enumerate(slots))
        sent = 0  # games handed to workers and not yet reported back
        exhausted = False

        def feed() -> None:
            nonlocal sent, exhausted
            while not exhausted and sent <= jobs:
                item = next(pending, None)
                if item is None:
                    exhausted = True
                    for _ in range(jobs):
                        tasks.put(None)  # after the last game, each worker ends its bots and leaves
                    return
                i, slot = item
                record = instead(slot) if instead else None
                if record is not None:
                    on_game(slot, record)
                    continue
                # Plain pickle, handed over as bytes: multiprocess's dill costs ~0.25 ms per object.
                tasks.put(pickle.dumps((i, slot.south, slot.north, slot.opening)))
                sent += 1

        workers = [ctx.Process(target=_worker, args=(tasks, results, games)) for _ in range(jobs)]
        for w in workers:
            w.start()
        finished = False
        try:
            feed()
            while sent:
                while True:
                    try:
                        index, record = pickle.loads(results.get(timeout=1.0))
                        break
                    except queue.Empty:
                        if not any(w.is_alive() for w in workers):
                            raise RuntimeError("all game workers died; see the messages above") from None
                sent -= 1
                on_game(slots[index], record)
                feed()
            finished = True
        finally:
            for w in workers:
                if finished:
                    w.join(timeout=5)  # after the None, a worker ends its bots and leaves by itself
                if w.is_alive():
                    w.terminate()
            for w in workers:
                w.join(timeout=10)
            tasks.cancel_join_thread()
            results.cancel_join_thread()


def backend(jobs: int | None = None, cluster: str | Backend | None = None) -> Backend:
    """Where to play: this machine's cores (`jobs` processes), or a cluster, given as a back end or as the
    address of its Dask scheduler ('tcp://HOST:8786'; Dask is imported only then)."""
    if cluster is None:
        return Local(jobs)
    if isinstance(cluster, str):
        from arena.tournament.cluster import Cluster

        return Cluster(cluster)
    return cluster


class Bench:
    """Bots that failed to give a first answer in `after` games in a row (a hang, a crash or a missing
    interpreter at start) sit out the rest of the run: their games are recorded as 'benched' forfeits
    without starting them again, so one broken bot costs a few startup allowances, not one per game."""

    def __init__(self, rules: Rules, after: int = BENCH_AFTER) -> None:
        self.rules = rules
        self.after = after
        self.misses: dict[str, list[GameRecord]] = {}  # each bot's latest games in a row without an answer
        self.benched: dict[str, str] = {}  # bot name -> why, for the detail of its benched games

    def see(self, record: GameRecord) -> None:
        """Count a played game: a bot that moved is healthy again; one at fault before its first move
        comes closer to the bench."""
        for name in (record.south, record.north):
            if record.moves_made.get(name, 0):
                self.misses.pop(name, None)
        culprit = record.faulty
        if culprit and record.reason in ("timeout", "crash") and not record.moves_made.get(culprit, 0):
            misses = self.misses.setdefault(culprit, [])
            misses.append(record)
            if self.after and len(misses) >= self.after and culprit not in self.benched:
                kinds = ", ".join(f"{n} {r}" for r, n in sorted(Counter(m.reason for m in misses).items()))
                self.benched[culprit] = (
                    f"benched for the rest of this run: no first answer in {len(misses)} games in a row "
                    f"({kinds}; the last: {misses[-1].reason}: {misses[-1].detail}); the next run tries it "
                    "again"
                )

    def instead(self, slot: Slot) -> GameRecord | None:
        """The forfeit to record for a game of a benched bot, or None to play it."""
        culprit = next((b.name for b in (slot.south, slot.north) if b.name in self.benched), None)
        if culprit is None:
            return None
        winner = slot.north.name if culprit == slot.south.name else slot.south.name
        pos = play_opening(self.rules, slot.opening)
        names = (slot.south.name, slot.north.name)
        return GameRecord(
            rules=self.rules.spec,
            south=slot.south.name,
            north=slot.north.name,
            moves=(),
            south_store=pos.store(SOUTH),
            north_store=pos.store(NORTH),
            winner=winner,
            reason="benched",
            faulty=culprit,
            detail=self.benched[culprit],
            move_ms=(),
            think_ms=dict.fromkeys(names, 0.0),
            moves_made=dict.fromkeys(names, 0),
            stderr=dict.fromkeys(names, ""),
            opening=slot.opening,
        )


def run(
    store: Store,
    bots: Sequence[Bot],
    rounds: int,
    conf: Confinement,
    *,
    book: Book | None = None,
    jobs: int | None = None,
    fresh: bool = False,
    hero: Bot | None = None,
    progress: Callable[[int, int, GameRecord | None], None] | None = None,
    bench_after: int = BENCH_AFTER,
    backend: Backend | None = None,
) -> RunResult:
    """Play whatever the schedule has that the store lacks, under the store's settings (rules, clock and
    seed: fix them first) and `conf` (for `Local`, the default back end on `jobs` processes: the limits as
    this machine can enforce them, `confine.capabilities`; for a remote back end, as asked)."""
    settings = store.settings()
    if settings is None:
        raise ValueError("fix the store's settings before running")
    rules = settings.game_rules()
    check_rules(bots, rules)  # in this process: a worker would only die of it
    store.set_current(bots)
    store.drop_benched()  # placeholders of the last run's benched bots: this run tries them again
    slots = schedule(bots, rounds, settings.seed, book, hero)
    todo = missing(store, slots)
    before = len(slots) - len(todo)
    done = 0
    if progress:
        progress(0, len(todo), None)

    bench = Bench(rules, bench_after)
    machines: list[Machine] = []

    def on_game(slot: Slot, record: GameRecord) -> None:
        nonlocal done
        bench.see(record)
        store.add_game(slot, record)
        done += 1
        if progress:
            progress(done, len(todo), record)

    def on_machine(machine: Machine) -> None:
        if machine.refused:
            log.warning(f"worker {machine.host} ({machine.address}) dropped from this run: {machine.refused}")
        for note in machine.notes if not machine.refused else ():
            log.warning(f"worker {machine.host} ({machine.address}): {note}")
        machines.append(machine)
        _note_machines(store, machines)

    back = backend or Local(jobs)
    games = Games(settings.rules, settings.limits(), conf, fresh, _tag(store))
    interrupted = False
    try:
        back.play(todo, games, on_game, bench.instead, on_machine)
    except KeyboardInterrupt:
        interrupted = True
    # Counted from the store, not from callbacks: an interrupt may land between a commit and the count.
    stored = len(slots) - len(missing(store, slots))
    return RunResult(len(slots), before, stored - before, interrupted)


def _tag(store: Store) -> str:
    """The tournament, as a cluster's workers tell it apart: a second run of it (after a kill -9) replaces
    what the first left on them."""
    where = f"{socket.gethostname()}:{store.path.resolve()}"
    return hashlib.blake2b(where.encode(), digest_size=6).hexdigest()


def _note_machines(store: Store, machines: Sequence[Machine]) -> None:
    """What the page says of the workers: every worker that ever played a game of the tournament (meta
    'workers', by address), and for the limits bots ran under in this run (meta 'confinement') the sandbox
    and cgroups only where every worker had them, and each worker's missing ones in words."""
    known = json.loads(store.meta().get("workers") or "{}")
    for m in machines:
        known[m.host] = {**asdict(m), "summary": m.summary()}
    store.set_meta("workers", json.dumps(known))
    played = [m for m in machines if not m.refused]  # a dropped worker's games were not stored
    state = {
        "sandbox": all(m.sandbox for m in played),
        "cgroups": all(m.cgroups for m in played),
        "notes": [f"worker {m.host} ({m.address}): {note}" for m in played for note in m.notes],
    }
    store.set_meta("confinement", json.dumps(state))


def schedule(
    bots: Sequence[Bot], rounds: int, seed: int, book: Book | None = None, hero: Bot | None = None
) -> list[Slot]:
    """The whole schedule of a tournament of `rounds` rounds: the round robin, or `hero`'s gauntlet."""
    return gauntlet(hero, bots, rounds, seed, book) if hero else round_robin(bots, rounds, seed, book)


def missing(store: Store, slots: Sequence[Slot]) -> list[Slot]:
    """The slots the store has no played game for (a benched bot's forfeit is not a played game)."""
    played = store.played()
    ids = {(b.name, b.digest): store.known_id(b) for s in slots for b in (s.south, s.north)}
    return [
        s
        for s in slots
        if (s.round, ids[(s.south.name, s.south.digest)], ids[(s.north.name, s.north.digest)]) not in played
    ]
