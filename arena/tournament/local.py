"""The back end of one machine: worker processes (multiprocess) that play a run's games.

Each worker keeps its bots' processes alive across games (NEWGAME, a `Pool`) and restarts them after a fault;
this process stays the store's one writer, given every game as it ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import pickle
import queue
import signal
from collections.abc import Callable, Sequence
from typing import Any

import multiprocess

from arena.game.rules import parse_rules
from arena.match.clock import Limits
from arena.match.pool import Pool
from arena.match.referee import play_game
from arena.sandbox import Confinement, Warden
from arena.stops import Stop
from arena.tournament.backend import Conditions, Instead, Machine, OnGame, Together
from arena.tournament.schedule import Slot


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this worker when the tournament process dies, even by kill -9."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stops() -> Stop:
    """A worker's stop signals: SIGTERM (the tournament stops, or died: PR_SET_PDEATHSIG) and SIGHUP (the
    terminal closed, which reaches the whole foreground group) raise SystemExit, which unwinds through the
    worker's finally that ends its (maybe frozen) bots."""
    return Stop((signal.SIGTERM, signal.SIGHUP), lambda signum: SystemExit(128 + signum))


def _worker(tasks, results, conditions: Conditions) -> None:  # type: ignore[no-untyped-def]
    """Play games from `tasks` until a None arrives; every exit path ends this worker's bot processes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler: this process's own
    stop = _stops()
    _die_with_parent()
    rules = parse_rules(conditions.spec)
    warden = Warden(conditions.conf) if conditions.conf else None
    pool = Pool(warden, conditions.limits.quit_grace_ms)
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
            record = play_game(rules, south, north, conditions.limits, opening=opening, seed=conditions.seed)
            record = dataclasses.replace(record, sandboxed=bool(conditions.conf and conditions.conf.sandbox))
            pool.give(south, keep=not conditions.fresh)
            pool.give(north, keep=not conditions.fresh)
            results.put(pickle.dumps((index, record)))
    finally:
        stop.hold()  # from here on, no signal raises
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
    local = Local(jobs)
    try:
        local.play(slots, Conditions(spec, limits, conf, fresh), on_game, instead)
    finally:
        local.close()


class Local:
    """The back end of one machine: `jobs` worker processes (default: one per core).

    The workers, and so their bots' processes, live across `play` calls until `close`: an adaptive run plays
    batch after batch, and workers started anew for each batch started every bot again (an adaptive run of
    16 bots took twice a round robin's wall time for as many games, most of it process starts). Games are
    handed out a few at a time (one more than the workers), so that `instead` can still decide, just before
    a game would be sent, to record it without playing (a benched bot's forfeit). KeyboardInterrupt (Ctrl-C)
    stops the workers, which end their bots; games already reported are kept.
    """

    remote = False

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or os.cpu_count() or 1
        self._workers: list[Any] = []
        self._queues: tuple[Any, Any] | None = None
        self._conditions: Conditions | None = None

    def _crew(self, conditions: Conditions, wanted: int) -> tuple[Any, Any]:
        """The task and result queues of at least `wanted` live workers (up to `jobs`) under `conditions`:
        those of the last call, more started if this batch needs them."""
        if self._conditions is not None and self._conditions != conditions:
            self.close()
        ctx = multiprocess.get_context("fork")
        if self._queues is None:
            self._queues = (ctx.Queue(), ctx.Queue())
            self._conditions = conditions
        tasks, results = self._queues
        while len(self._workers) < min(self.jobs, wanted):
            # daemon: a caller that never closes (a script) still ends them when it exits
            worker = ctx.Process(target=_worker, args=(tasks, results, conditions), daemon=True)
            worker.start()
            self._workers.append(worker)
        return tasks, results

    def play(
        self,
        slots: Sequence[Slot],
        conditions: Conditions,
        on_game: OnGame,
        instead: Instead | None = None,
        on_machine: Callable[[Machine], None] | None = None,
        together: Together | None = None,  # each game is reported as it ends, committed alone
    ) -> None:
        if not slots:
            return
        tasks, results = self._crew(conditions, len(slots))
        jobs = len(self._workers)
        pending = iter(enumerate(slots))
        sent = 0  # games handed to workers and not yet reported back

        def feed() -> None:
            nonlocal sent
            while sent <= jobs:
                item = next(pending, None)
                if item is None:
                    return
                i, slot = item
                record = instead(slot) if instead else None
                if record is not None:
                    on_game(slot, record)
                    continue
                # Plain pickle, handed over as bytes: multiprocess's dill costs ~0.25 ms per object.
                tasks.put(pickle.dumps((i, slot.south, slot.north, slot.opening)))
                sent += 1

        finished = False
        try:
            feed()
            while sent:
                while True:
                    try:
                        index, record = pickle.loads(results.get(timeout=1.0))
                        break
                    except queue.Empty:
                        if not any(w.is_alive() for w in self._workers):
                            raise RuntimeError("all game workers died; see the messages above") from None
                sent -= 1
                on_game(slots[index], record)
                feed()
            finished = True
        finally:
            if not finished:  # Ctrl-C, or a failure: the workers end their bots now
                self.close(finished=False)

    def close(self, finished: bool = True) -> None:
        """End the workers (each ends its bots): after the last game of a run, at once when `finished` is
        False (Ctrl-C, a failure)."""
        workers, self._workers = self._workers, []
        queues, self._queues, self._conditions = self._queues, None, None
        if queues is None:
            return
        tasks, results = queues
        if finished:
            for _ in workers:
                tasks.put(None)  # after the last game, each worker ends its bots and leaves
        for w in workers:
            if finished:
                w.join(timeout=5)  # after the None, a worker ends its bots and leaves by itself
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=10)
        tasks.cancel_join_thread()
        results.cancel_join_thread()
