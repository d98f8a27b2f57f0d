"""Dask's own background work that a lab's scheduler, nannies and workers do without.

On a machine whose cores the games keep busy, every CPU-millisecond Dask spends for itself is one the games
do not get. Idle, a scheduler with its nanny and a worker of two slots spent 32-44 ms of CPU a second on
their own timers (Dask 2026.8, a TLS LocalCluster on a 2-core machine; 13-14 with these settings), and
while games play the worker's profiler walks the stack of each busy thread 100 times a second. Arena
reads none of it:
  - the worker's statistical profiler feeds only the dashboard's profile page;
  - the event loop's tick, every 20 ms, only times how late the loop runs, to log a loop blocked for
    over 3 s (`distributed.admin.tick.limit`), which a tick a second still sees;
  - the system monitor samples CPU, memory and disk I/O for the dashboard every 500 ms (a worker's
    memory still reaches the scheduler with its heartbeats, sampled every 2 s).
Work stealing stays on: a lab's workers differ in speed, and arena lets Dask choose among the accepted
workers. Compression of the small answers is Dask's default already (off).

`quiet()` sets these in the process that calls it, but not one the lab sets itself (a
`DASK_DISTRIBUTED__...` variable, a Dask yaml): the lab's own wins. The guard preload calls it
(arena/lab/guard.py, which the README's `dask scheduler` and `dask worker` commands pass: the
scheduler reads them as it starts, a nanny hands them to the worker it starts, and the worker's own
preload sets them before its profiler starts); the benchmark sets SETTINGS around the clusters it starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SETTINGS: Mapping[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.disk": False,
}


def quiet() -> None:
    """SETTINGS in this process's Dask configuration, but none the lab set itself (in Dask's yaml files or
    a DASK_* variable: Dask's own merge of defaults cannot tell a value set to the default from none)."""
    import dask
    import distributed  # noqa: F401 (its defaults first: loaded after these, they would replace them)

    own = dask.config.collect()
    unset = object()
    dask.config.set({k: v for k, v in SETTINGS.items() if dask.config.get(k, unset, config=own) is unset})
