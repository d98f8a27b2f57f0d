"""The tournament store: one SQLite file per tournament, the only module that speaks SQL.

Every finished game is committed at once by the one writer (the scheduler's main process), so a tournament
stopped at any moment keeps every game it finished, and a game is never stored twice: (round, south version,
north version) is unique. A bot version is its name plus a hash of its code.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from arena.bots import Bot
from arena.referee import GameRecord

SCHEMA_VERSION = 1
STORE_FILE = "arena.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bots (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    path TEXT NOT NULL,
    author TEXT,
    first_seen TEXT NOT NULL,
    UNIQUE (name, digest)
);
CREATE TABLE IF NOT EXISTS games (
    id INTEGER PRIMARY KEY,
    round INTEGER NOT NULL,
    ordinal TEXT NOT NULL,
    south_id INTEGER NOT NULL REFERENCES bots (id),
    north_id INTEGER NOT NULL REFERENCES bots (id),
    rules TEXT NOT NULL,
    moves TEXT NOT NULL,
    south_store INTEGER NOT NULL,
    north_store INTEGER NOT NULL,
    winner_id INTEGER REFERENCES bots (id),
    reason TEXT NOT NULL,
    faulty_id INTEGER REFERENCES bots (id),
    detail TEXT NOT NULL,
    move_ms TEXT NOT NULL,
    stderr TEXT NOT NULL,
    swapped INTEGER NOT NULL,
    south_think_ms REAL NOT NULL,
    south_moves INTEGER NOT NULL,
    north_think_ms REAL NOT NULL,
    north_moves INTEGER NOT NULL,
    finished_at TEXT NOT NULL,
    UNIQUE (round, south_id, north_id)
);
CREATE INDEX IF NOT EXISTS games_order ON games (round, ordinal);
"""


class StoreError(RuntimeError):
    """A store that cannot be used as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What a tournament is fixed to for its whole life."""

    rules: str
    move_ms: int
    startup_ms: int
    seed: int
    memory_mb: int = 1024
    max_procs: int = 64
    ponder: bool = False
    sandbox: bool = True  # asked for; whether the machine had it is in meta 'confinement'
    bank_ms: int | None = None  # time bank per bot per game (chess clock); None: move_ms per move only


@dataclass(frozen=True, slots=True)
class Slot:
    """One scheduled game: round, its place in the round's shuffled order, and the two bot versions."""

    round: int
    ordinal: str
    south: Bot
    north: Bot


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"no tournament store at {self.path}; run 'arena run' first")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self._meta("schema")
            tables = self.db.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path} is not an arena store ({e})") from None
        if version is None and tables:
            raise StoreError(f"{self.path} is not an arena store (it holds other tables)")
        if version is not None and version != str(SCHEMA_VERSION):
            raise StoreError(
                f"{self.path} was written by another version of arena (store schema {version}, this arena "
                f"reads {SCHEMA_VERSION}); use a new --name, or the arena version that wrote it"
            )
        if version is None:
            self.db.executescript(_SCHEMA)
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            self.db.execute("INSERT INTO meta VALUES ('created', ?)", (now(),))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _meta(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:
            return None  # a new, empty file
        return row[0] if row else None

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta"))

    # --- settings -------------------------------------------------------------------------------------

    def settings(self) -> Settings | None:
        raw = self._meta("settings")
        return Settings(**json.loads(raw)) if raw else None

    def fix_settings(self, settings: Settings) -> None:
        """Record the settings of a new tournament, or refuse a resume under other settings."""
        stored = self.settings()
        if stored is None:
            self.db.execute("INSERT INTO meta VALUES ('settings', ?)", (json.dumps(asdict(settings)),))
            return
        if stored != settings:
            diffs = [
                f"{k} {getattr(stored, k)} (asked: {getattr(settings, k)})"
                for k in asdict(settings)
                if getattr(stored, k) != getattr(settings, k)
            ]
            raise StoreError(
                f"tournament {self.path.parent.name!r} was started with " + ", ".join(diffs) + "; "
                "resume with the same settings, or give the new ones another --name"
            )

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- bots -----------------------------------------------------------------------------------------

    def bot_id(self, bot: Bot) -> int:
        """The id of this bot version, adding it on first sight."""
        row = self.db.execute(
            "SELECT id FROM bots WHERE name = ? AND digest = ?", (bot.name, bot.digest)
        ).fetchone()
        if row:
            return int(row[0])
        cur = self.db.execute(
            "INSERT INTO bots (name, digest, path, author, first_seen) VALUES (?, ?, ?, ?, ?)",
            (bot.name, bot.digest, str(bot.path), bot.author, now()),
        )
        return int(cur.lastrowid or 0)

    def set_current(self, bots: Iterable[Bot]) -> list[int]:
        """Mark which bot versions make up the current field (the leaderboard shows only their games)."""
        ids = [self.bot_id(b) for b in bots]
        self.set_meta("current", json.dumps(sorted(ids)))
        return ids

    def current_ids(self) -> list[int]:
        raw = self._meta("current")
        return json.loads(raw) if raw else []

    # --- games ----------------------------------------------------------------------------------------

    def played(self) -> set[tuple[int, int, int]]:
        """(round, south id, north id) of every stored game."""
        return {tuple(r) for r in self.db.execute("SELECT round, south_id, north_id FROM games")}  # type: ignore[misc]

    def add_game(self, slot: Slot, record: GameRecord) -> int:
        """Store one finished game and commit at once."""
        south, north = self.bot_id(slot.south), self.bot_id(slot.north)
        ids = {record.south: south, record.north: north}
        think, count = record.think_ms, record.moves_made
        cur = self.db.execute(
            "INSERT INTO games (round, ordinal, south_id, north_id, rules, moves, south_store, north_store, "
            "winner_id, reason, faulty_id, detail, move_ms, stderr, swapped, south_think_ms, south_moves, "
            "north_think_ms, north_moves, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                slot.round,
                slot.ordinal,
                south,
                north,
                record.rules,
                json.dumps(list(record.moves)),
                record.south_store,
                record.north_store,
                ids.get(record.winner) if record.winner else None,
                record.reason,
                ids.get(record.faulty) if record.faulty else None,
                record.detail,
                json.dumps(list(record.move_ms)),
                json.dumps(record.stderr),
                int(record.swapped),
                think.get(record.south, 0.0),
                count.get(record.south, 0),
                think.get(record.north, 0.0),
                count.get(record.north, 0),
                now(),
            ),
        )
        return int(cur.lastrowid or 0)

    def count_games(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM games").fetchone()[0])

    def records(self, current_only: bool = False) -> Iterator[dict[str, object]]:
        """Game records in schedule order, with `id` and `round`: the fields of `arena play --json`."""
        where = ""
        params: list[int] = []
        if current_only:
            ids = self.current_ids()
            marks = ",".join("?" * len(ids)) or "NULL"
            where = f"WHERE g.south_id IN ({marks}) AND g.north_id IN ({marks})"
            params = ids + ids
        query = (
            "SELECT g.id, g.round, g.rules, s.name, n.name, g.moves, g.south_store, g.north_store, w.name, "
            "g.reason, f.name, g.detail, g.move_ms, g.south_think_ms, g.north_think_ms, g.south_moves, "
            "g.north_moves, g.stderr, g.finished_at FROM games g "
            "JOIN bots s ON s.id = g.south_id JOIN bots n ON n.id = g.north_id "
            "LEFT JOIN bots w ON w.id = g.winner_id LEFT JOIN bots f ON f.id = g.faulty_id "
            f"{where} ORDER BY g.round, g.ordinal"
        )
        for row in self.db.execute(query, params):
            (gid, rnd, rules, south, north, moves, ss, ns, winner, reason, faulty, detail, ms) = row[:13]
            (s_think, n_think, s_moves, n_moves, err, at) = row[13:]
            yield {
                "id": gid,
                "round": rnd,
                "rules": rules,
                "south": south,
                "north": north,
                "moves": json.loads(moves),
                "south_store": ss,
                "north_store": ns,
                "winner": winner,
                "reason": reason,
                "faulty": faulty,
                "detail": detail,
                "move_ms": json.loads(ms),
                "think_ms": {south: s_think, north: n_think},
                "moves_made": {south: s_moves, north: n_moves},
                "stderr": json.loads(err),
                "finished_at": at,
            }


def store_path(out: Path, name: str) -> Path:
    return Path(out) / name / STORE_FILE


# --- tables for ratings and the report ----------------------------------------------------------------
# Read-only queries behind the leaderboard and the HTML report. Each one streams or aggregates inside
# SQLite, so memory stays flat however many games are stored: only the few columns a table needs are read,
# and moves and stderr are never loaded for all games. `field` is the ids of the bot versions that make up
# the field (normally `Store.current_ids()`), passed as one JSON parameter.


_FIELD = "field(id) AS (SELECT value FROM json_each(:field))"
_IN_FIELD = "south_id IN (SELECT id FROM field) AND north_id IN (SELECT id FROM field)"


def _field(ids: Iterable[int]) -> str:
    return json.dumps(sorted(int(i) for i in ids))


def field_ids(store: Store) -> list[int]:
    """The current field; for a store that never recorded one, the newest version of every bot name."""
    ids = store.current_ids()
    if ids or store._meta("current") is not None:
        return ids
    return [int(r[0]) for r in store.db.execute("SELECT max(id) FROM bots GROUP BY name ORDER BY name")]


def rating_games(store: Store, field: Iterable[int]) -> Iterator[tuple[int, int, int | None]]:
    """(south id, north id, winner id or None) of the field's games in schedule order, one at a time."""
    query = (
        f"WITH {_FIELD} SELECT south_id, north_id, winner_id FROM games "
        f"WHERE {_IN_FIELD} ORDER BY round, ordinal"
    )
    yield from store.db.execute(query, {"field": _field(field)})


def field_bots(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """The field's bot versions: id, name, digest, author, first_seen."""
    query = (
        f"WITH {_FIELD} SELECT id, name, digest, author, first_seen FROM bots "
        "WHERE id IN (SELECT id FROM field) ORDER BY name"
    )
    return pd.read_sql(query, store.db, params={"field": _field(field)})


def pair_totals(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """One row per (bot, opponent) that met in the field: games, wins, draws, losses, summed store margin,
    forfeits, thinking ms and moves. Each game counts once from each side; after a SWAP the final stores
    belong the other way round, so `own`/`their` follow `swapped` (think ms and move counts do not: they are
    stored per starting bot)."""
    sides = (
        "SELECT south_id AS bot, north_id AS opp, winner_id, faulty_id, "
        "CASE WHEN swapped THEN north_store ELSE south_store END AS own, "
        "CASE WHEN swapped THEN south_store ELSE north_store END AS their, "
        f"south_think_ms AS think_ms, south_moves AS moves FROM games WHERE {_IN_FIELD} "
        "UNION ALL "
        "SELECT north_id, south_id, winner_id, faulty_id, "
        "CASE WHEN swapped THEN south_store ELSE north_store END, "
        "CASE WHEN swapped THEN north_store ELSE south_store END, "
        f"north_think_ms, north_moves FROM games WHERE {_IN_FIELD}"
    )
    query = (
        f"WITH {_FIELD}, sides AS ({sides}) "
        "SELECT bot, opp, count(*) AS games, "
        "sum(CASE WHEN winner_id = bot THEN 1 ELSE 0 END) AS wins, "
        "sum(CASE WHEN winner_id IS NULL THEN 1 ELSE 0 END) AS draws, "
        "sum(CASE WHEN winner_id = opp THEN 1 ELSE 0 END) AS losses, "
        "sum(own - their) AS margin_sum, "
        "sum(CASE WHEN faulty_id = bot THEN 1 ELSE 0 END) AS forfeits, "
        "total(think_ms) AS think_ms, sum(moves) AS moves "
        "FROM sides GROUP BY bot, opp ORDER BY bot, opp"
    )
    return pd.read_sql(query, store.db, params={"field": _field(field)})


def forfeit_reasons(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """How often each bot of the field forfeited, by reason (timeout, crash, illegal, garbled)."""
    query = (
        f"WITH {_FIELD} SELECT faulty_id AS bot, reason, count(*) AS count FROM games "
        f"WHERE faulty_id IS NOT NULL AND {_IN_FIELD} GROUP BY faulty_id, reason ORDER BY faulty_id, reason"
    )
    return pd.read_sql(query, store.db, params={"field": _field(field)})


def latest_faults(store: Store, field: Iterable[int], per_bot: int = 20) -> pd.DataFrame:
    """The latest `per_bot` forfeits of each bot in the field's games, newest first, with the reason, the
    referee's detail and that bot's own stderr tail from that game: what its author needs to fix it. Only
    these rows' stderr is read."""
    query = (
        f"WITH {_FIELD}, ranked AS (SELECT id, row_number() OVER "
        "(PARTITION BY faulty_id ORDER BY id DESC) AS nth FROM games "
        f"WHERE faulty_id IS NOT NULL AND {_IN_FIELD}) "
        "SELECT g.id AS game, g.round, g.faulty_id AS bot, f.name AS bot_name, o.name AS opponent, "
        "CASE WHEN g.south_id = g.faulty_id THEN 'south' ELSE 'north' END AS started, g.reason, g.detail, "
        "coalesce(json_extract(g.stderr, '$.\"' || f.name || '\"'), '') AS stderr, g.finished_at "
        "FROM ranked r JOIN games g ON g.id = r.id JOIN bots f ON f.id = g.faulty_id "
        "JOIN bots o ON o.id = CASE WHEN g.south_id = g.faulty_id THEN g.north_id ELSE g.south_id END "
        "WHERE r.nth <= :per_bot ORDER BY f.name, g.id DESC"
    )
    return pd.read_sql(query, store.db, params={"field": _field(field), "per_bot": int(per_bot)})


def retired_bots(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """Bot versions outside the field (older code of a bot, or bots no longer in the folder), with how many
    stored games each played."""
    query = (
        f"WITH {_FIELD}, played AS (SELECT bot, count(*) AS games FROM "
        "(SELECT south_id AS bot FROM games UNION ALL SELECT north_id FROM games) GROUP BY bot) "
        "SELECT b.id, b.name, b.digest, b.first_seen, coalesce(p.games, 0) AS games "
        "FROM bots b LEFT JOIN played p ON p.bot = b.id WHERE b.id NOT IN (SELECT id FROM field) "
        "ORDER BY b.name, b.id"
    )
    return pd.read_sql(query, store.db, params={"field": _field(field)})


def game_facts(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """One row: games stored, rounds played, first and last finish, and the field's share of the games."""
    query = (
        f"WITH {_FIELD} SELECT count(*) AS games, count(DISTINCT round) AS rounds, "
        "coalesce(max(round), 0) AS last_round, min(finished_at) AS first_finished, "
        "max(finished_at) AS last_finished, "
        f"sum(CASE WHEN {_IN_FIELD} THEN 1 ELSE 0 END) AS field_games FROM games"
    )
    return pd.read_sql(query, store.db, params={"field": _field(field)})
