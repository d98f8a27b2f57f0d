"""The cluster back end against the local one, on the same machine in one run: random vs random, Kalah(6,6).

    python benchmarks/cluster.py [--games 600] [--repeats 3]

Both back ends play the same games of two copies of the random bot, confined as by default (sandbox, limits,
pausing), every game handed back to this process as `arena run` stores it: `Local` on 2 worker processes
(`--jobs 2`), and `Cluster` on a `distributed.LocalCluster` of 2 worker processes with one game slot each
(`--resources games=1`), so both have two games going at once. The cluster is started before the clock runs;
each cluster run pays for connecting to its scheduler, registering the worker plugin and shipping the bots.

Each back end plays a small and a large batch, alternating, `--repeats` times; medians. Games/s are those of
the large batch. The per-game overhead of the cluster path is the difference of the marginal costs (the
slope of wall time over games between the two batch sizes, so fixed costs drop out) times the game slots:
the time a slot spends per game beyond what the local back end spends. The fixed cost per run is the
intercept. This process's own CPU per game (the coordinator's) is shown for both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.match.bots import Bot, load_bot  # noqa: E402
from arena.match.confine import Confinement, capabilities  # noqa: E402
from arena.match.referee import Limits  # noqa: E402
from arena.tournament.backend import Backend, Conditions  # noqa: E402
from arena.tournament.cluster import Cluster  # noqa: E402
from arena.tournament.local import Local  # noqa: E402
from arena.tournament.schedule import Slot  # noqa: E402

SLOTS = 2


def slots_of(a: Bot, b: Bot, games: int) -> list[Slot]:
    return [
        Slot(1 + i // 2, f"{i:06d}", a, b) if i % 2 else Slot(1 + i // 2, f"{i:06d}", b, a)
        for i in range(games)
    ]


def timed(backend: Backend, slots: list[Slot], games: Conditions) -> tuple[float, float]:
    """(wall s, this process's CPU s) to play `slots` on `backend`."""
    done = 0

    def count(slot: Slot, record: object) -> None:
        nonlocal done
        done += 1

    wall, cpu = time.perf_counter(), time.process_time()
    backend.play(slots, games, count)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert done == len(slots), (done, len(slots))
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--games", type=int, default=600, help="games in the large batch (the small: a fifth)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from distributed import LocalCluster

    large, small = args.games, max(2, args.games // 5)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ("random_a", "random_b"):
            shutil.copy(ROOT / "bots" / "random.py", folder / f"{name}.py")
        a, b = load_bot(folder / "random_a.py"), load_bot(folder / "random_b.py")
        asked = Confinement(sandbox=True)
        here, caps = capabilities(asked, asked.sandbox)
        limits = Limits()
        local = Local(SLOTS)
        start = time.perf_counter()
        with LocalCluster(
            n_workers=SLOTS,
            threads_per_worker=1,
            resources={"games": 1},
            dashboard_address=None,
            host="127.0.0.1",
            env={"ARENA_CACHE": str(folder / "cache")},
            silence_logs=40,
        ) as cluster:
            started = time.perf_counter() - start
            remote = Cluster(cluster.scheduler_address, insecure=True)
            runs: dict[tuple[str, int], list[tuple[float, float]]] = {}
            for r in range(args.repeats):
                for games in (small, large):
                    for name, backend, conf in (("local", local, here), ("cluster", remote, asked)):
                        setup = Conditions("kalah", limits, conf, tag=f"bench{r}")
                        runs.setdefault((name, games), []).append(
                            timed(backend, slots_of(a, b, games), setup)
                        )
            machines = list(remote.machines.values())

    def med(name: str, games: int, i: int) -> float:
        return statistics.median(run[i] for run in runs[(name, games)])

    print(
        f"random vs random, Kalah(6,6), {SLOTS} games at once, {os.cpu_count()} cores; "
        f"medians of {args.repeats}"
    )
    print(
        f"confined here: sandbox {'on' if caps.sandbox else 'off'}, cgroups {'on' if caps.cgroups else 'off'}"
    )
    print(f"load average before the runs {load:.2f}: other work on these cores moves the figures")
    print(f"the LocalCluster took {started:.2f} s to start (not counted); its workers: ")
    for m in machines:
        print(f"  {m.summary()}")
    marginal = {}
    for name in ("local", "cluster"):
        slope = (med(name, large, 0) - med(name, small, 0)) / (large - small)
        fixed = med(name, small, 0) - slope * small
        marginal[name] = slope
        rate = large / med(name, large, 0)
        rates = sorted(large / run[0] for run in runs[(name, large)])
        cpu = 1000 * med(name, large, 1) / large
        label = "Local, --jobs 2" if name == "local" else "Cluster, 2 workers x 1 slot"
        print(
            f"{label:28} {rate:6.1f} games/s ({rates[0]:.0f}..{rates[-1]:.0f}; {large} games in "
            f"{med(name, large, 0):.2f} s); "
            f"fixed cost per run {fixed:.2f} s; this process {cpu:.2f} ms CPU a game"
        )
    overhead = SLOTS * (marginal["cluster"] - marginal["local"]) * 1000
    print(
        f"cluster / local: {marginal['local'] / marginal['cluster']:.2f} of the games/s at the margin; "
        f"per-game overhead of the cluster path {overhead:.2f} ms of a game slot's time"
    )


if __name__ == "__main__":
    main()
