"""An adaptive run on a Dask cluster (a LocalCluster of two worker processes) plays the same games as on
this machine's cores: the schedule is decided from the stored results alone, batch by batch."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cluster import games, local_cluster
from test_settled_run import LOOSE, four
from test_tournament import RULES, db_file

from arena.api import Tournament
from arena.lab import Cluster
from arena.match.clock import TimeControl
from arena.tournament.settings import Settings

distributed = pytest.importorskip("distributed")


def settled_run(base: Path, cluster: Cluster | None = None):  # type: ignore[no-untyped-def]
    with Tournament(db_file(base).parent, Settings(RULES, TimeControl(move_ms=2000), seed=5)) as cup:
        result = cup.run(four(base / "bots"), None, settle=LOOSE, jobs=2, cluster=cluster)
        return result, cup.verdict()


@pytest.mark.slow
def test_an_adaptive_run_on_a_cluster_plays_the_games_of_a_local_one(tmp_path: Path, certs: Path) -> None:
    local, settled = settled_run(tmp_path / "local")
    assert settled.settled and local.played > 0
    with local_cluster(tmp_path / "cache", certs) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs)
        remote, remote_settled = settled_run(tmp_path / "cluster", back)
    assert (remote.played, remote.interrupted) == (local.played, False)
    assert games(tmp_path / "cluster") == games(tmp_path / "local")
    assert remote_settled.places == settled.places
