"""`arena serve --cluster`: the ladder's games played on the workers of a real Dask cluster (a LocalCluster
of two worker processes, lab-0 and lab-1, speaking TLS with the class's certificates), each stored once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.server_kit import Server, need_extra

need_extra()
pytest.importorskip("distributed")
from test_cluster import local_cluster  # noqa: E402 (needs Dask)
from test_server_e2e import RANDOM, make_class, store_games, until  # noqa: E402

pytestmark = pytest.mark.slow


def workers(class_dir: Path) -> dict[str | None, int]:
    """Games of the ladder by the worker that played them (None: this machine)."""
    with sqlite3.connect(class_dir / "ladder" / "arena.sqlite") as db:
        return dict(db.execute("SELECT worker, count(*) FROM games GROUP BY worker").fetchall())


def games_of(class_dir: Path, bot: str) -> int:
    """Ladder games that `bot` played; none while the store is being made (its file comes before its
    tables)."""
    path = class_dir / "ladder" / "arena.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'games'").fetchone()[0]:
            return 0
        query = (
            "SELECT count(*) FROM games g JOIN bots s ON s.id = g.south_id JOIN bots n ON n.id = g.north_id"
        )
        return int(db.execute(f"{query} WHERE ? IN (s.name, n.name)", (bot,)).fetchone()[0])


def test_the_ladder_plays_on_the_clusters_workers_and_stores_each_game_once(tmp_path: Path, certs) -> None:
    with local_cluster(tmp_path / "cache", certs) as cluster:
        flags = ("--cluster", cluster.scheduler_address, "--cluster-certs", str(certs))
        server = Server(tmp_path / "class", args=flags)
        try:
            people = make_class(server, server.start(), ["ann", "ben"])
            for name in ("ann", "ben"):
                people[name].upload(f"{name}.py", RANDOM)
            until("the checks", lambda: all(people[n].versions() == ["passed"] for n in ("ann", "ben")), 240)
            until(
                "the students' games",
                lambda: min(games_of(server.class_dir, n) for n in ("ann", "ben")) >= 6,
                300,
            )
        finally:
            server.stop()
    by_worker = workers(server.class_dir)
    assert set(by_worker) <= {"lab-0", "lab-1"}, f"games played off the cluster: {by_worker}"
    total, distinct = store_games(server.class_dir)
    assert total == distinct, "no game stored twice"
