"""A store with a long history costs what its current field and its latest games need, not every game ever
stored: a class's ladder keeps a semester of retired versions' games (benchmarks/semester.py measures it).
Each test builds a small store of the rules engine's games (tests/classroom.py) and asks SQLite how it
reads it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from classroom import build

from arena.store import queries
from arena.store.writer import Store


def plan(store: Store, query: str, params: object = ()) -> str:
    return " | ".join(row[-1] for row in store.db.execute(f"EXPLAIN QUERY PLAN {query}", params))


def test_a_field_s_games_are_read_by_their_index_and_as_a_schedule_saw_them_among_all(tmp_path: Path) -> None:
    path = tmp_path / "arena.sqlite"
    build(path, rounds=1)
    with Store(path) as store:
        field = store.current_ids()[:4]
        store.set_meta("current", json.dumps(field))
        names = {n for i, n, _ in queries.bot_versions(store) if i in field}
        everything = store.results()
        mine = store.results(current_only=True)
        # the same games, repeats flagged alike, as the schedule filtered them from every game before
        assert mine == [r for r in everything if r.south[0] in names and r.north[0] in names]
        assert 0 < len(mine) < len(everything)
        marks = ",".join("?" * len(field))
        where = f"south_id IN ({marks}) AND north_id IN ({marks})"
        assert "USING INDEX games_pair" in plan(store, f"SELECT * FROM games WHERE {where}", field + field)
        ratings = f"WITH {queries._FIELD} SELECT winner_id FROM games WHERE {queries._IN_FIELD}"
        assert "USING INDEX games_pair" in plan(store, ratings, {"field": queries._field(field)})


def test_a_store_made_before_the_index_gets_it_from_its_writer_never_from_a_reader(tmp_path: Path) -> None:
    path = tmp_path / "arena.sqlite"
    build(path, rounds=1)
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX games_pair")
    indexes = "SELECT count(*) FROM sqlite_master WHERE name = 'games_pair'"
    with Store(path, create=False) as store:  # a page reading one game
        assert store.db.execute(indexes).fetchone()[0] == 0
    with Store(path) as store:
        assert store.db.execute(indexes).fetchone()[0] == 1


def test_the_latest_games_are_read_from_the_end_of_the_ids_whatever_came_before(tmp_path: Path) -> None:
    path = tmp_path / "arena.sqlite"
    build(path, rounds=1)
    with Store(path) as store:
        store.db.execute("DELETE FROM games WHERE id % 3 = 0")  # gaps, as dropped placeholders leave
        ids = [r[0] for r in store.db.execute("SELECT id FROM games ORDER BY id DESC LIMIT 7")]
        assert [r["id"] for r in queries.latest_records(store, 7)] == ids
