"""The cluster back end against the local one, on this machine in one run, and a worker's setup after a kill.

    python benchmarks/cluster.py [--games 300] [--repeats 5] [--frozen 16] [--instant 2000] [--dask-defaults]

1. Games/s: the same games of two copies of the random bot (Kalah(6,6), confined as by default: sandbox,
   limits, pausing), every game handed back to this process as `arena run` stores it, on `Local` with 2
   worker processes (the baseline), and on `Cluster` over TLS with the class's certificates on a
   `distributed.LocalCluster` of 1 worker with two game slots and of 2 workers with one each: as many
   game slots as the baseline's processes, so that the ratio compares like with like. The clusters run
   with arena's Dask settings (arena/lab/background.py), as a lab's processes started with the
   guard preload do; `--dask-defaults` adds a 1-worker cluster with Dask's own, to compare in the same
   run. Clusters are started before the clock runs; each cluster run pays for connecting, registering the
   worker plugin, shipping the bots, and replaying every returned game in the rules engine (audit).
   `--repeats` rounds, each cluster first in turn, with a local run before the first round and after
   each: a cluster run is a ratio to the mean of the local runs just before and after its round, so that
   a load that rises or falls through the round moves both sides alike (the other work on this machine
   moves single rounds by a third). Medians, with the range over the rounds; with when the first game
   came back (what a run pays before it plays: on a cluster, connecting and greeting) and the ratio from
   then on (what a long run pays). Each run ends its bots, as `arena run` does (Local closed; the
   cluster's plugin ended on its workers). The CPU time a game of each side, which the load of other work
   moves far less than the wall clock: this process (Local's main process; the coordinator with
   LocalCluster's scheduler and nannies, all in this process) and the game processes with the bots they
   reaped (Local's workers; the Dask workers). On these 2 cores the games keep both busy, so the cluster
   can give at most local's CPU a game over its own (its ceiling here); with the coordinator and
   scheduler on another machine, as in a lab, a worker's machine gives local's CPU a game over its
   worker's.
2. The coordinator alone: a `--instant`-game tournament of 10 bots through the library (schedule, store,
   page left out) on a 1-worker TLS cluster whose worker plays instant fake games (the rules engine's
   first legal move for each side, no process: a preload replaces its games, and plays each opening's
   game once, since the worker shares this machine's two cores with the coordinator), so that what is
   timed is this side's work: tasks, answers, the replay and audit of every game, the store. Target:
   2,000 games/s (a lab of 30 machines of 4 cores, bots of a second a game, needs 120). Its CPU time a
   game too (this process: the coordinator and LocalCluster's scheduler), which other work here moves
   far less than the wall clock.
3. Setup after a kill: a process starts `--frozen` confined bots, freezes them (as between games) and is
   killed with SIGKILL, as a worker is; the bots survive it, frozen. Then a new `Warden` (what a worker's
   setup makes) sweeps them: timed, against the sweep as it was (each bot released in turn, with 2 s of
   patience per folder), on a second batch killed the same way. The frozen processes are counted in the
   killed process's cgroups before and after each sweep (a sweep of nothing is said, not timed). Needs
   cgroups (root); said if not.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.lab import Cluster  # noqa: E402
from arena.lab.background import SETTINGS  # noqa: E402
from arena.lab.trust import make as make_certs  # noqa: E402
from arena.match.bots import Bot, load_bot  # noqa: E402
from arena.match.clock import TimeControl  # noqa: E402
from arena.match.referee import Limits  # noqa: E402
from arena.sandbox import Cgroups, Confinement, Warden, capabilities  # noqa: E402
from arena.tournament.backend import Backend  # noqa: E402
from arena.tournament.backend import Conditions as Games  # noqa: E402
from arena.tournament.local import Local  # noqa: E402
from arena.tournament.schedule import Slot  # noqa: E402

FREEZER = """\
import sys, time
from pathlib import Path
from arena.match.bots import load_bot
from arena.sandbox import Confinement, Warden, capabilities
from arena.match.referee import Player

conf, _ = capabilities(Confinement(sandbox=True), True)
warden = Warden(conf)
bot = load_bot(Path(sys.argv[1]))
players = [Player(bot, name=f"b{i}", warden=warden) for i in range(int(sys.argv[2]))]
for p in players:
    p.start()
    p.pause()
print("frozen", flush=True)
time.sleep(600)
"""


def slots_of(a: Bot, b: Bot, games: int) -> list[Slot]:
    return [
        Slot(1 + i // 2, f"{i:06d}", a, b) if i % 2 else Slot(1 + i // 2, f"{i:06d}", b, a)
        for i in range(games)
    ]


@dataclass(frozen=True, slots=True)
class Timing:
    """One back end's run: seconds for all its games, until the first came back, and CPU seconds of this
    process and of the processes that played the games (with their bots)."""

    wall: float
    first: float
    cpu_here: float
    cpu_games: float


def timed(backend: Backend, slots: list[Slot], games: Games, players: list[int] | None = None) -> Timing:
    """`slots` played and the run's bots ended: on `Local` (closed after: its workers and their bots reaped,
    their CPU time this process's children's) or on a cluster whose workers are the processes `players`
    (their CPU time read with their reaped bots', once the run's plugin ended them)."""
    import psutil

    done = 0
    first = 0.0

    def count(slot: Slot, record: object) -> None:
        nonlocal done, first
        done += 1
        first = first or time.perf_counter() - wall

    workers = [psutil.Process(pid) for pid in players or []]

    def cpu() -> tuple[float, float]:
        t = os.times()
        if not workers:
            return t.user + t.system, t.children_user + t.children_system
        deadline = time.monotonic() + 10  # the plugin's teardown ends the bots just after the run
        while any(w.children() for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        played = sum(sum(w.cpu_times()[:4]) for w in workers)  # user, system, and its reaped children's
        return t.user + t.system, played

    here, there = cpu()
    wall = time.perf_counter()
    backend.play(slots, games, count)
    if isinstance(backend, Local):
        backend.close()
    wall = time.perf_counter() - wall
    assert done == len(slots), (done, len(slots))
    here_after, there_after = cpu()
    return Timing(wall, first, here_after - here, there_after - there)


def security(certs: Path):  # type: ignore[no-untyped-def]
    from distributed import Security

    return Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_scheduler_cert=str(certs / "scheduler.pem"),
        tls_scheduler_key=str(certs / "scheduler.key"),
        tls_worker_cert=str(certs / "worker.pem"),
        tls_worker_key=str(certs / "worker.key"),
        tls_client_cert=str(certs / "coordinator.pem"),
        tls_client_key=str(certs / "coordinator.key"),
        require_encryption=True,
    )


@dataclass(frozen=True, slots=True)
class Setup:
    """A cluster the benchmark plays on: its label, workers (slots each: 2 // workers) and Dask settings."""

    label: str
    workers: int
    settings: Mapping[str, Any]


def throughput(folder: Path, games: int, repeats: int, defaults: bool) -> float:
    """Prints the games/s of each back end; returns the local baseline's (a median)."""
    import dask
    from distributed import LocalCluster

    for name in ("random_a", "random_b"):
        shutil.copy(ROOT / "bots" / "random.py", folder / f"{name}.py")
    a, b = load_bot(folder / "random_a.py"), load_bot(folder / "random_b.py")
    certs = folder / "certs"
    make_certs(certs)
    asked = Confinement(sandbox=True)
    here, caps = capabilities(asked, asked.sandbox)
    slots = slots_of(a, b, games)
    setups = {
        "cluster1": Setup("Cluster (TLS), 1 worker x 2 slots", 1, SETTINGS),
        "cluster2": Setup("Cluster (TLS), 2 workers x 1 slot", 2, SETTINGS),
    }
    if defaults:
        setups["defaults1"] = Setup("  the same, Dask's own defaults", 1, {})
    clusters = {}
    for key, setup in setups.items():  # 2 game slots in all, as Local(2) has
        with dask.config.set(setup.settings):  # read as the scheduler starts; the nanny hands it on
            clusters[key] = LocalCluster(
                n_workers=setup.workers,
                threads_per_worker=2 // setup.workers,
                resources={"games": 2 // setup.workers},
                dashboard_address=None,
                host="127.0.0.1",
                protocol="tls://",
                security=security(certs),
                env={"ARENA_CACHE": str(folder / f"cache-{key}")},
                silence_logs=40,
            )
    runs: dict[str, list[Timing]] = {}
    try:
        players = {key: list(worker_pids(cluster, certs).values()) for key, cluster in clusters.items()}
        order = list(setups)
        for r in range(repeats + 1):  # a local run before the first round and after each
            runs.setdefault("local", []).append(
                timed(Local(2), slots, Games("kalah", Limits(), here, tag=f"bench{r}"))
            )
            if r == repeats:
                break
            for key in order[r % len(order) :] + order[: r % len(order)]:  # each first in turn
                back = Cluster(clusters[key].scheduler_address, certs=certs)
                run = timed(back, slots, Games("kalah", Limits(), asked, tag=f"bench{r}"), players[key])
                runs.setdefault(key, []).append(run)
    finally:
        for cluster in clusters.values():
            cluster.close()
    print(f"random vs random, Kalah(6,6), {games} games, {os.cpu_count()} cores; medians of {repeats} rounds")
    print(
        f"confined here: sandbox {'on' if caps.sandbox else 'off'}, cgroups {'on' if caps.cgroups else 'off'}"
    )
    print(f"load average {os.getloadavg()[0]:.2f}: other work on these cores moves the figures")
    print(
        "each cluster run against the local runs just before and after its round (their mean wall time), "
        "so that load that rises or falls through a round moves both sides alike; the clusters with "
        "arena's Dask settings (arena/lab/background.py) unless said"
    )
    # Local's runs bracket the rounds: round r between local r and local r + 1
    fields = ("wall", "first", "cpu_here", "cpu_games")
    local = [
        Timing(*(statistics.mean(getattr(t, f) for t in pair) for f in fields))
        for pair in zip(runs["local"], runs["local"][1:], strict=False)
    ]
    labels = {"local": "Local, --jobs 2", **{key: setup.label for key, setup in setups.items()}}
    for key, label in labels.items():
        mine = local if key == "local" else runs[key]
        wall = statistics.median(t.wall for t in mine)
        first = statistics.median(t.first for t in mine)
        here_ms = statistics.median(1000 * t.cpu_here / games for t in mine)
        there_ms = statistics.median(1000 * t.cpu_games / games for t in mine)
        line = f"{label:36} {games / wall:7.1f} games/s ({games} games in {wall:.2f} s"
        line += f", the first at {first:.2f} s)"
        if key != "local":
            ratios = [b.wall / t.wall for b, t in zip(local, mine, strict=True)]
            after = [(b.wall - b.first) / (t.wall - t.first) for b, t in zip(local, mine, strict=True)]
            line += (
                f"; {statistics.median(ratios):.2f} of local's games/s (rounds "
                f"{min(ratios):.2f}-{max(ratios):.2f}), {statistics.median(after):.2f} after the first game"
            )
        print(line)
        print(
            f"{'':36} CPU a game: {here_ms:.2f} ms in this process "
            f"({'its main process' if key == 'local' else 'coordinator, scheduler, nannies'}), "
            f"{there_ms:.2f} ms in {'its workers' if key == 'local' else 'the Dask workers'} and their bots"
        )
        if key != "local":
            ceiling = [cpu(b) / cpu(t) for b, t in zip(local, mine, strict=True)]
            machine = [cpu(b) / t.cpu_games for b, t in zip(local, mine, strict=True)]
            print(
                f"{'':36} ceiling on these 2 cores (local's CPU a game over this one's): "
                f"{statistics.median(ceiling):.2f} (rounds {min(ceiling):.2f}-{max(ceiling):.2f}); "
                f"a lab machine, the coordinator elsewhere (local's over the workers'): "
                f"{statistics.median(machine):.2f} ({min(machine):.2f}-{max(machine):.2f})"
            )
    return games / statistics.median(t.wall for t in local)


def cpu(t: Timing) -> float:
    return t.cpu_here + t.cpu_games


def worker_pids(cluster: Any, certs: Path) -> dict[str, int]:
    """The process of each worker of `cluster` (asked as the coordinator)."""
    from distributed import Client

    with Client(cluster.scheduler_address, security=security(certs), set_as_default=False) as client:
        return dict(client.run(os.getpid))


INSTANT = """\
import dataclasses, time

from arena.game.openings import position_after
from arena.game.rules import NORTH, SOUTH
from arena.match.record import GameRecord, Reason
from arena.lab import workers

GAMES = {}  # (rules, opening) -> the game's moves, its end and the moves made by each side


def game(rules, opening):
    pos = position_after(rules, opening)
    moves, made = [], [0, 0]
    while not rules.is_over(pos):
        move = rules.legal_moves(pos)[0]
        made[pos.to_move] += 1
        pos = rules.play(pos, move)
        moves.append(move)
    return tuple(moves), pos.store(SOUTH), pos.store(NORTH), rules.result(pos), tuple(made)


def instant(self, bots, games):
    start = time.monotonic()
    played = []
    for k, (south, north, opening) in enumerate(games):
        key = (self.rules.spec, tuple(opening))
        if key not in GAMES:  # each opening's game played once: the worker's side costs next to nothing
            GAMES[key] = game(self.rules, opening)
        moves, south_store, north_store, out, made = GAMES[key]
        names = (bots[south].name, bots[north].name)
        played.append((k, GameRecord(
            rules=self.rules.spec, south=names[0], north=names[1], moves=moves,
            south_store=south_store, north_store=north_store,
            winner=None if out.winner is None else names[out.winner], reason=Reason(out.reason), faulty=None,
            detail="", move_ms=tuple(0.0 for _ in moves), think_ms=dict.fromkeys(names, 0.0),
            moves_made=dict(zip(names, made)), stderr=dict.fromkeys(names, ""), opening=tuple(opening),
            worker=self.machine.host, sandboxed=self.machine.sandbox,
        )))
    return played, self.machine, time.monotonic() - start


def dask_setup(worker):
    workers.Arena._games = instant
"""


def coordinator_alone(folder: Path, games: int, local: float) -> None:
    """Games/s of this side alone, the worker's games instant (INSTANT)."""
    from distributed import LocalCluster

    from arena.api import Tournament
    from arena.tournament.settings import Settings

    bots = folder / "instant-bots"
    bots.mkdir()
    for n in range(10):
        shutil.copy(ROOT / "bots" / "random.py", bots / f"r{n}.py")
    rounds = max(1, games // 90)
    preload = folder / "instant.py"
    preload.write_text(INSTANT, encoding="utf-8")
    certs = folder / "certs"
    import dask

    with dask.config.set(SETTINGS), LocalCluster(
        n_workers=1, threads_per_worker=1, resources={"games": 1}, dashboard_address=None, host="127.0.0.1",
        protocol="tls://", security=security(certs), env={"ARENA_CACHE": str(folder / "cache-instant")},
        preload=[str(preload)], silence_logs=40,
    ) as cluster:  # fmt: skip
        stored: list[float] = []
        cpu: list[float] = []  # this process's CPU time as each game is stored

        def progress(done: int, total: int, record: object) -> None:
            if record is not None:
                stored.append(time.perf_counter())
                cpu.append(time.process_time())

        with Tournament(folder / "instant", Settings("kalah", TimeControl(move_ms=1000), seed=7)) as cup:
            start = time.perf_counter()
            back = Cluster(cluster.scheduler_address, certs=certs)
            result = cup.run(bots, rounds, jobs=1, cluster=back, progress=progress)
            wall = time.perf_counter() - start
    steady = (len(stored) - 1) / max(stored[-1] - stored[0], 1e-9)
    print(
        f"the coordinator alone (instant games on 1 worker): {steady:7.1f} games/s from the first game "
        f"stored to the last; {result.played / wall:.1f} with connecting and greeting ({result.played} "
        f"games of 10 bots in {wall:.2f} s: tasks, replay, audit, store; target 2000); "
        f"{steady / local:.1f}x the local baseline's games/s of random bots in the same run"
    )
    # The wall clock is shared with whatever else runs here; this process's CPU time is not: the
    # coordinator and the scheduler (LocalCluster's, in this process), from the first game stored to the last
    each = (cpu[-1] - cpu[0]) / max(len(cpu) - 1, 1)
    print(
        f"  its CPU: {1000 * each:.3f} ms a game in this process (coordinator and scheduler, from the first "
        f"game stored to the last), {1 / max(each, 1e-9):.0f} games per CPU-second"
    )


def frozen_bots(folder: Path, count: int) -> int:
    """Start `count` confined bots in a process, freeze them, and SIGKILL that process (its pid)."""
    script = folder / "freezer.py"
    script.write_text(FREEZER, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(folder / "random_a.py"), str(count)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "frozen"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return proc.pid


def setup_after_kill(folder: Path, count: int) -> None:
    asked = Confinement(sandbox=True)
    conf, caps = capabilities(asked, True)
    if not caps.cgroups:
        print(f"setup after a kill: skipped, no cgroups here ({'; '.join(caps.notes)})")
        return
    killed = frozen_bots(folder, count)
    survivors = _frozen(killed)
    if not survivors:
        print("setup after a kill: skipped, no frozen process outlived the killed one (nothing to sweep)")
        return
    start = time.perf_counter()
    Warden(conf).close()
    new = time.perf_counter() - start
    left = _frozen(killed)
    # The baseline in the same run: the same kill, swept one bot after the other as before.
    killed = frozen_bots(folder, count)
    before = _frozen(killed)
    start = time.perf_counter()
    _sweep_one_by_one()
    old = time.perf_counter() - start
    print(
        f"{survivors} frozen processes (bots and their sandboxes) outlived the killed process; {left} after "
        f"the new sweep; {before} before the old one, {_frozen(killed)} after it"
    )
    print(
        f"setup after a kill with {count} frozen bots: {new:.2f} s (a new Warden: all thawed and killed at "
        f"once, one wait); one bot after the other, as before: {old:.2f} s ({old / max(new, 1e-9):.1f}x)"
    )


def _frozen(killed: int) -> int:
    """The processes left in the bots' cgroups of the process `killed` (by its pid), frozen: counted in
    the cgroups, as a bot's command line inside the sandbox names its file by the sandbox's own path."""
    parent = Cgroups.parent(f"arena-{os.getpid()}-count")
    assert parent is not None
    pids: set[str] = set()
    for top in parent.folders:
        for old in top.parent.glob(f"arena-{killed}-*"):
            for procs in old.rglob("cgroup.procs"):
                with contextlib.suppress(OSError):
                    pids.update(procs.read_text().split())
    parent.remove()
    return len(pids)


def _sweep_one_by_one() -> None:
    """What sweep_stale did before: each stale bot's folders released in turn (2 s patience each)."""
    parent = Cgroups.parent(f"arena-{os.getpid()}-bench")
    assert parent is not None
    stale: dict[str, list[Path]] = {}
    for folder in parent.folders:
        for old in folder.parent.glob("arena-*"):
            pid = old.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                stale.setdefault(old.name, []).append(old)
    for olds in stale.values():
        for bot in sorted({child.name for old in olds for child in old.glob("bot-*")}):
            Cgroups([old / bot for old in olds], parent.v2).release()
        for old in olds:
            with contextlib.suppress(OSError):
                old.rmdir()
    parent.remove()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--frozen", type=int, default=16)
    parser.add_argument("--instant", type=int, default=2000)
    parser.add_argument(
        "--dask-defaults", action="store_true",
        help="also a 1-worker cluster with Dask's own defaults, to compare with arena's settings",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        local = throughput(folder, args.games, args.repeats, args.dask_defaults)
        coordinator_alone(folder, args.instant, local)
        setup_after_kill(folder, args.frozen)


if __name__ == "__main__":
    main()
