"""The server's background work, one process per role, each started (and restarted) by `arena serve`:

- `checks`: queued versions, oldest first, built and checked by `arena check` (checking.py);
- `ladder`: the class's ladder, an arena tournament in CLASS_DIR/ladder played adaptively until settled
  (`Tournament.run(bots, None)`), again whenever the field changes (a new active version, a student removed,
  a reference added): the adaptive schedule reopens only what changed. A change mid-run stops the run at
  once (its finished games are stored) and the next starts with the new field. Where the teacher ranks
  remote agents, the field also holds the students' agents connected to the KGP port (kgp_ranked.py); one
  that leaves ends the run at once. At the deadline it plays the final instead (final.py);
- `scrimmages`: the unranked games students ask for, oldest first, each a tournament of its own
  (scrimmages.py), played in the sandbox as the ladder's are; and, while none is waiting, the game
  analyses members ask for on a game's page (analyses.py), oldest first;
- `kgp`: the KGP port (`arena serve --kgp-port`), where students' agents play practice games (kgp.py).

Each is the arena library's one writer of what they write; a kill -9 loses at most the games and the check
in flight, which are played and checked again on the next start.

    python -m arena.server.worker checks|ladder|scrimmages|kgp     (with the environment `arena serve` sets)
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import django

from arena.stops import Stop

STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
IDLE_S = 1.0  # how often an idle worker looks for work
SNAPSHOT_S = 3.0  # how often a playing ladder rewrites its snapshot
# Background work yields the CPU to the pages: on a machine whose cores the games fill, a person waiting for
# a page comes first (the games' pace is what the ladder measures over minutes; a page's is a person's).
NICE = {"checks": 5, "ladder": 10, "scrimmages": 8, "kgp": 8}
# A run is restarted for a changed field at most this often: a burst of new versions (a class uploading at
# the deadline) joins in one restart, not one each (a restart surveys, hashes and starts the workers again).
RESTART_S = 10.0
RIVALS = 2  # a remote agent that connects again meets this many of its closest rivals at once
log = logging.getLogger("arena")


class FieldChanged(KeyboardInterrupt):
    """Raised from a run's progress to end it cleanly (arena stores every finished game on an interrupt):
    the field changed, or the deadline came."""


def stops() -> Stop:
    """The worker's stop: KeyboardInterrupt, which ends a run cleanly. The ladder forks its game workers and
    a check its bots: a stop Python drops there is sent again (arena/stops.py), so that no worker outlives a
    killed arena serve (CI's kill -9 test once found its ladder playing on)."""
    return Stop(STOPS, lambda _: KeyboardInterrupt())


def settings_here() -> Any:
    from django.conf import settings

    from arena.tournament.settings import Settings

    return Settings.from_dict(settings.ARENA_SETTINGS)


def class_dir() -> Any:
    from django.conf import settings

    from arena.server.classdir import ClassDir

    return ClassDir(settings.CLASS.root)


def checks(stop: Stop) -> None:
    """Check queued versions until stopped."""
    from arena.server.versions.checking import claim_next, run_check
    from arena.server.versions.submitting import requeue_interrupted

    where, settings = class_dir(), settings_here()
    requeue_interrupted()
    while True:
        stop.check()
        found = claim_next()
        if found is None:
            time.sleep(IDLE_S)
            continue
        run_check(where, found, settings)


def scrimmages(cluster: str | None, stop: Stop) -> None:
    """Play asked-for scrimmages (on the ladder's cluster, if it has one), and run asked-for analyses when
    no scrimmage waits, until stopped. An analysis is one process's search of a few seconds (its budget):
    it waits for the games, which have bots waiting on them."""
    from arena.server import analyses
    from arena.server import scrimmages as asked

    where, settings = class_dir(), settings_here()
    asked.requeue_interrupted()
    analyses.requeue_interrupted()
    while True:
        stop.check()
        found = asked.claim_next()
        if found is not None:
            asked.play(where, found, settings, cluster=backend(cluster))
            continue
        wanted = analyses.claim_next()
        if wanted is not None:
            analyses.run(where, wanted)
            continue
        time.sleep(IDLE_S)


class Watch:
    """A run's progress callback: the snapshot every few seconds, and FieldChanged when the class's
    field generation moves or the deadline passes."""

    def __init__(self, cup: Any, generation: int, note: str, agents: Any = None) -> None:
        self.cup, self.generation, self.note = cup, generation, note
        self.agents = agents  # the remote agents the run entered: one that leaves ends it (kgp_ranked.py)
        self.changed = False
        self.began = self.looked = self.written = time.monotonic()
        self.every = SNAPSHOT_S

    def __call__(self, done: int, total: int, record: object) -> None:
        from arena.server.models import Classroom
        from arena.server.standings import ladder

        now = time.monotonic()
        if record is None:  # the run's first call, before its games: not inside its interruptible part
            return
        if self.agents and not self.agents.here():  # at once: its next games could only be forfeits
            self.changed = True
            raise FieldChanged
        if now - self.written >= self.every:
            ladder.write_snapshot(self.cup, self.note, False)
            self.written = time.monotonic()
            # Rating a big field takes a while, and the games wait for it: at most a twentieth of the time.
            self.every = max(SNAPSHOT_S, 20 * (self.written - now))
        if now - self.looked >= IDLE_S:
            self.looked = now
            classroom = Classroom.current()
            if classroom is None or classroom.frozen():
                self.changed = True
                raise FieldChanged
            if classroom.generation != self.generation and now - self.began >= RESTART_S:
                self.changed = True
                raise FieldChanged


def backend(address: str | None) -> Any:
    """Where the games are played: this machine's cores (None), or the Dask cluster `arena serve --cluster`
    names, trusted through the class's certificates (--cluster-certs) as `arena run --cluster` trusts it."""
    if not address:
        return None
    from arena.lab import Cluster
    from arena.lab.trust import CERTS_ENV

    certs = os.environ.get(CERTS_ENV)
    return Cluster(address, certs=Path(certs) if certs else None)


def ladder_loop(cluster: str | None, stop: Stop) -> None:
    """Play the ladder until stopped; at the deadline, the final. A cluster that cannot play is said on
    the class page and tried again, as a final that cannot be played is."""
    from arena.api import Tournament
    from arena.lab import ClusterError
    from arena.match.bots import BotError
    from arena.server.models import STOPPED, Classroom, FinalState
    from arena.server.standings import field, final, ladder

    where, settings = class_dir(), settings_here()
    with Tournament(where.ladder, settings) as cup:
        seen = -1
        welcomed: dict[str, int] = {}  # each remote agent's connection whose first games were played
        while True:
            stop.check()
            classroom = Classroom.current()
            if classroom is None:
                time.sleep(IDLE_S)
                continue
            if classroom.undoable():  # the ladder stops at the deadline; the final waits for its undo time
                _note(classroom, STOPPED)
                time.sleep(IDLE_S)
                continue
            if classroom.frozen():
                if classroom.final_state != FinalState.DONE:
                    _note(classroom, "the deadline has passed: the final is being played")
                    try:
                        final.play(where, classroom, settings, cluster=backend(cluster))
                    except (BotError, ValueError, OSError, ClusterError) as e:
                        # said on the class page, tried again
                        _note(classroom, f"the final could not be played: {e}")
                        time.sleep(30 * IDLE_S)
                        continue
                    _note(classroom, "the final has been played")
                time.sleep(IDLE_S)
                continue
            if classroom.generation == seen:
                time.sleep(IDLE_S)
                continue
            seen = classroom.generation
            field.sync(where.bots, field.wanted(where, classroom))
            agents = Agents(where, on=classroom.kgp_ranked and not cluster, no_move=classroom.kgp_no_move)
            arrived = [b for b in agents.bots if welcomed.get(b.name) != agents.sessions.get(b.author or "")]
            try:
                entered = cup.enter(agents.with_folder(where.bots))
            except BotError as e:
                _note(classroom, f"waiting for bots: {e}")
                ladder.write_snapshot(
                    cup, f"waiting for bots: {len(field.versions(where.bots))} so far", False
                )
                continue
            digests = {bot.name: bot.digest for bot in entered.bots}
            ladder.remember_versions(where.ladder, digests, field.versions(where.bots))
            remote = f" ({len(agents.bots)} of them remote agents)" if agents.bots else ""
            _note(classroom, f"playing: {len(entered.bots)} bots{remote}")
            watch = Watch(cup, seen, "playing", agents)
            try:
                for agent, rival, rnd in welcome(cup.store.results(), entered.bots, arrived):
                    pair = dataclasses.replace(entered, bots=(agent, rival), hero=agent)
                    result = cup.run(pair, rnd, progress=watch, cluster=backend(cluster))
                    if result.interrupted:
                        break
                else:  # welcomed: a welcome cut short is played in the next run
                    welcomed = {b.name: agents.sessions.get(b.author or "", 0) for b in agents.bots}
                    result = cup.run(entered, None, progress=watch, cluster=backend(cluster))
            except ClusterError as e:
                _note(classroom, f"the cluster cannot play: {e}")
                seen = -1
                time.sleep(30 * IDLE_S)
                continue
            stop.check()  # a stop that landed while the run ended for a field change
            if result.interrupted and not watch.changed:
                raise KeyboardInterrupt
            if watch.changed:
                seen = -1  # the field moved: sync it and run again at once
            settled = not result.interrupted
            ladder.write_snapshot(
                cup, "settled: waiting for a new version" if settled else "playing", settled
            )
            if settled:
                _note(classroom, "settled: waiting for a new version")


def welcome(results: Any, field: Any, arrived: Any) -> list[tuple[Any, Any, int]]:
    """The games a remote agent that connected again plays before the ladder's adaptive run: a round (a
    game from each side) against each of its RIVALS closest rivals, those it met in the most rounds (the
    adaptive schedule pairs the bots near each other), as (agent, rival, round). Its games so far count as
    ever (the same version is the same player), and a settled ladder would give it none: the student sees
    their agent play as soon as it is connected. A new agent or version gets its placement games anyway."""
    rounds: dict[tuple[str, str], int] = {}
    versions = {(bot.name, bot.digest) for bot in field}
    for r in results:
        if r.south in versions and r.north in versions:
            for me, you in ((r.south[0], r.north[0]), (r.north[0], r.south[0])):
                rounds[me, you] = max(rounds.get((me, you), 0), r.round)
    games = []
    for agent in arrived:
        met = sorted(
            ((rnd, bot) for bot in field if (rnd := rounds.get((agent.name, bot.name), 0))),
            key=lambda x: (-x[0], x[1].name),
        )
        games += [(agent, bot, rnd + 1) for rnd, bot in met[:RIVALS]]
    return games


class Agents:
    """The connected remote agents a ladder run enters when the teacher ranks them (arena/server/
    kgp_ranked.py; not on a cluster, whose machines cannot reach this server's KGP worker, nor without a
    KGP port)."""

    def __init__(self, where: Any, on: bool, no_move: str = "random") -> None:
        from arena.kgp.server import ranked as kgp_ranked

        self.where = where
        self.bots = kgp_ranked.bots(where, no_move=no_move) if on and kgp_ranked.port_on() else []
        self.sessions = kgp_ranked.sessions(where)  # by student: a new connection is welcomed with games

    def with_folder(self, folder: Path) -> Any:
        """What the run enters: the bots folder, and the agents beside it."""
        if not self.bots:
            return folder
        from arena.match.bots import survey

        return [*survey(folder).bots, *self.bots]

    def here(self) -> bool:
        """Whether every agent entered is still connected."""
        from arena.kgp.server import ranked as kgp_ranked

        now = set(kgp_ranked.connected(self.where))
        return all(bot.author in now for bot in self.bots)


def _note(classroom: Any, text: str) -> None:
    from arena.server.models import Classroom

    Classroom.objects.filter(pk=classroom.pk).update(ladder_note=text)


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.server.settings")
    stop = stops()
    logging.basicConfig(level=logging.WARNING, format="arena %(name)s: %(levelname)s: %(message)s")
    role = argv[0] if argv else ""
    try:  # a stop from its start on (arena serve's SIGTERM may land inside django.setup) ends it quietly
        django.setup()
        os.nice(NICE.get(role, 0))
        if role == "checks":
            checks(stop)
        elif role == "ladder":
            ladder_loop(os.environ.get("ARENA_CLUSTER") or None, stop)
        elif role == "scrimmages":
            scrimmages(os.environ.get("ARENA_CLUSTER") or None, stop)
        elif role == "kgp":
            from arena.kgp.server.port import listen

            host, port, ws_port = os.environ.get("ARENA_KGP", "").split(" ")
            listen(host, int(port), class_dir(), settings_here(), int(ws_port) if ws_port else None)
        else:
            print("usage: python -m arena.server.worker checks|ladder|scrimmages|kgp", file=sys.stderr)
            return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
