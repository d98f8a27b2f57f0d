"""Who plays whom, and playing it on all cores.

A round is every ordered pair once (each pair meets twice, each bot once as south). The order inside a round
comes from a hash of (seed, round, south, north): the same seed and bots give the same schedule, and adding
a bot or a round inserts its games without reshuffling the others. Ratings are computed in this order, never
in the order games happen to finish, so parallel play does not change them.

Workers are processes (multiprocess) that each keep their bots' processes alive across games (NEWGAME) and
restart them after a fault; the main process is the store's one writer and commits every game at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import pickle
import queue
import signal
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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

MAX_IDLE_PLAYERS = 16  # bot processes a worker keeps alive between games


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


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this worker when the tournament process dies, even by kill -9."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the worker's finally, which ends its bots


def _worker(tasks, results, spec: str, limits: Limits, fresh: bool, conf: Confinement | None) -> None:  # type: ignore[no-untyped-def]
    """Play games from `tasks` until a None arrives; every exit path ends this worker's bot processes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    signal.signal(signal.SIGTERM, _exit_on_signal)
    _die_with_parent()
    rules = parse_rules(spec)
    warden = Warden(conf) if conf else None
    players: OrderedDict[tuple[str, str], Player] = OrderedDict()

    def player(bot: Bot) -> Player:
        key = (bot.name, bot.digest)
        if key not in players:
            players[key] = Player(bot, warden=warden)
        players.move_to_end(key)
        return players[key]

    try:
        while (task := tasks.get()) is not None:
            index, south_bot, north_bot, opening = pickle.loads(task)
            south, north = player(south_bot), player(north_bot)
            record = play_game(rules, south, north, limits, opening=opening)
            if fresh:
                south.close(limits.quit_grace_ms)
                north.close(limits.quit_grace_ms)
            while len(players) > MAX_IDLE_PLAYERS:
                players.popitem(last=False)[1].close(limits.quit_grace_ms)
            results.put(pickle.dumps((index, record)))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the clean-up short
        for p in players.values():
            p.kill()
        if warden:
            warden.close()


def play_slots(
    slots: Sequence[Slot],
    spec: str,
    limits: Limits,
    jobs: int,
    fresh: bool,
    on_game: Callable[[Slot, GameRecord], None],
    conf: Confinement | None = None,
    instead: Callable[[Slot], GameRecord | None] | None = None,
) -> None:
    """Play `slots` on `jobs` worker processes, calling `on_game` in this process as each one finishes.

    Games are handed out a few at a time (one more than the workers), so that `instead` can still decide,
    just before a game would be sent, to record it without playing (a benched bot's forfeit).
    KeyboardInterrupt (Ctrl-C) stops the workers, which end their bots; games already reported are kept.
    """
    if not slots:
        return
    jobs = max(1, min(jobs, len(slots)))
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

    workers = [
        ctx.Process(target=_worker, args=(tasks, results, spec, limits, fresh, conf)) for _ in range(jobs)
    ]
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
) -> RunResult:
    """Play whatever the schedule has that the store lacks, under the store's settings (rules, clock and
    seed: fix them first) and `conf` (the limits as this machine can enforce them, `confine.capabilities`)."""
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

    def on_game(slot: Slot, record: GameRecord) -> None:
        nonlocal done
        bench.see(record)
        store.add_game(slot, record)
        done += 1
        if progress:
            progress(done, len(todo), record)

    interrupted = False
    try:
        jobs = jobs or os.cpu_count() or 1
        play_slots(todo, settings.rules, settings.limits(), jobs, fresh, on_game, conf, bench.instead)
    except KeyboardInterrupt:
        interrupted = True
    # Counted from the store, not from callbacks: an interrupt may land between a commit and the count.
    stored = len(slots) - len(missing(store, slots))
    return RunResult(len(slots), before, stored - before, interrupted)


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
