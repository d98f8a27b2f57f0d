"""A run of a tournament: play whatever the schedule has that the store lacks, on a back end.

Games are played by a back end (`arena.tournament.backend.Backend`): `Local`, worker processes on this
machine (local.py), or `arena.lab.Cluster`, the workers of a Dask cluster. Either way the
workers keep their bots' processes alive across games (a `Pool`) and restart them after a fault, and this
process stays the store's one writer, committing every game at once. Between games it makes the openings
past the book that the schedule expects its next batch to ask for (`Book.expect`), one at a time.
"""

from __future__ import annotations

import hashlib
import logging
import socket
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from arena.game.rules import Rules
from arena.match.record import GameRecord, Reason
from arena.match.referee import check_rules
from arena.sandbox import Confinement
from arena.store.writer import Enforced, Store
from arena.tournament.backend import Backend, Conditions, Machine
from arena.tournament.local import Local
from arena.tournament.schedule import Schedule, Slot, Version, key
from arena.tournament.settings import BENCH_AFTER, RunOptions, Settings

log = logging.getLogger("arena")


@dataclass(frozen=True, slots=True)
class RunResult:
    scheduled: int  # games in the whole schedule
    before: int  # of those, already in the store when this run started
    played: int  # played and stored by this run
    interrupted: bool
    stopped: str = ""  # an adaptive run's reason to stop (`Adaptive.stopped`): "settled", or why not


def backend(jobs: int | None = None, cluster: str | Backend | None = None) -> Backend:
    """Where to play: this machine's cores (`jobs` processes), or a cluster, given as a back end or as the
    address of its Dask scheduler ('tcp://HOST:8786'; Dask is imported only then)."""
    if cluster is None:
        return Local(jobs)
    if isinstance(cluster, str):
        from arena.lab import Cluster

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
        # bot name -> why, and the words its last fault quoted: the detail and `said` of its benched games
        self.benched: dict[str, tuple[str, str]] = {}

    def see(self, record: GameRecord) -> None:
        """Count a played game: a bot that moved is healthy again; one at fault before its first move
        comes closer to the bench."""
        for name in (record.south, record.north):
            if record.moves_made.get(name, 0):
                self.misses.pop(name, None)
        culprit = record.no_first_answer()
        if culprit:
            misses = self.misses.setdefault(culprit, [])
            misses.append(record)
            if self.after and len(misses) >= self.after and culprit not in self.benched:
                kinds = ", ".join(f"{n} {r}" for r, n in sorted(Counter(m.reason for m in misses).items()))
                self.benched[culprit] = (
                    f"benched for the rest of this run: no first answer in {len(misses)} games in a row "
                    f"({kinds}; the last: {misses[-1].reason}: {misses[-1].detail}); the next run tries it "
                    "again",
                    misses[-1].said,
                )

    def instead(self, slot: Slot) -> GameRecord | None:
        """The forfeit to record for a game of a benched bot, or None to play it."""
        culprit = next((b.name for b in (slot.south, slot.north) if b.name in self.benched), None)
        if culprit is None:
            return None
        detail, said = self.benched[culprit]
        return slot.unplayed(self.rules, culprit, Reason.BENCHED, detail, said)


def run(
    store: Store,
    settings: Settings,
    schedule: Schedule,
    conf: Confinement,
    options: RunOptions | None = None,
    back: Backend | None = None,
) -> RunResult:
    """Play what `schedule` names until it names no new game, under `settings` (the store's: rules, clock
    and seed, fixed before) and `conf` (for `Local`, the default back end on `options.jobs` processes: the
    limits as this machine can enforce them, `confine.capabilities`; for a remote back end, as asked), on
    `back` (default: the back end `options` asks for). `options.live` and `options.on_page` are the API's."""
    options = options or RunOptions()
    rules = settings.game_rules()
    check_rules(schedule.bots, rules)  # in this process: a worker would only die of it
    store.set_current(schedule.bots)
    store.drop_benched()  # placeholders of the last run's benched bots: this run tries them again
    results = store.results(current_only=True)
    before = schedule.played(results)
    tried: set[tuple[int, Version, Version]] = set()
    done = total = 0
    bench = Bench(rules, options.bench_after)
    progress = options.progress
    machines: list[Machine] = []

    def on_game(slot: Slot, record: GameRecord) -> None:
        nonlocal done
        bench.see(record)
        store.add_game(slot, record)
        done += 1
        if progress:
            progress(done, total, record)
        if schedule.book is not None and done < total:
            # An opening the next batch will ask for, made while this one plays: made when it asks, every
            # worker would wait for it. A worker that finishes meanwhile finds the game sent ahead of it.
            schedule.book.step()

    def on_machine(machine: Machine) -> None:
        if machine.refused:
            log.warning(f"worker {machine.named()} dropped from this run: {machine.refused}")
        for note in machine.notes if not machine.refused else ():
            log.warning(f"worker {machine.named()}: {note}")
        machines.append(machine)
        _note_machines(store, machines)

    back = back or backend(options.jobs, options.cluster)
    conditions = Conditions(
        settings.rules, settings.limits(), conf, options.fresh, _tag(store), settings.seed
    )
    interrupted = False
    todo = schedule.next(results)
    if progress:
        progress(0, len(todo), None)
    try:
        while todo:
            tried.update(key(s) for s in todo)
            total += len(todo)
            back.play(todo, conditions, on_game, bench.instead, on_machine, together=store.together)
            todo = [s for s in schedule.next(store.results(current_only=True)) if key(s) not in tried]
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if isinstance(back, Local):  # its workers and their bots lived from batch to batch: now they end
            back.close(finished=not interrupted)
    # Counted from the store, not from callbacks: an interrupt may land between a commit and the count.
    results = store.results(current_only=True)
    played = schedule.played(results)
    return RunResult(played + len(schedule.next(results)), before, played - before, interrupted)


def _tag(store: Store) -> str:
    """The tournament, as a cluster's workers tell it apart: a second run of it (after a kill -9) replaces
    what the first left on them."""
    where = f"{socket.gethostname()}:{store.path.resolve()}"
    return hashlib.blake2b(where.encode(), digest_size=6).hexdigest()


def _note_machines(store: Store, machines: Sequence[Machine]) -> None:
    """What the page says of the workers: every worker that ever played a game of the tournament (meta
    'workers', by address), and for the limits bots ran under in this run (meta 'confinement') the sandbox
    and cgroups only where every worker had them, and each worker's missing ones in words."""
    store.add_workers(machines)
    played = [m for m in machines if not m.refused]  # a dropped worker's games were not stored
    notes = tuple(f"worker {m.host} ({m.address}): {note}" for m in played for note in m.notes)
    sandbox, cgroups = all(m.sandbox for m in played), all(m.cgroups for m in played)
    store.set_confinement(Enforced(sandbox, cgroups, notes))
