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
                for k in ("rules", "move_ms", "startup_ms", "seed")
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
        row = self.db.execute("SELECT id FROM bots WHERE name = ? AND digest = ?", (bot.name, bot.digest)).fetchone()
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
            "g.reason, f.name, g.detail, g.move_ms, g.stderr, g.finished_at FROM games g "
            "JOIN bots s ON s.id = g.south_id JOIN bots n ON n.id = g.north_id "
            "LEFT JOIN bots w ON w.id = g.winner_id LEFT JOIN bots f ON f.id = g.faulty_id "
            f"{where} ORDER BY g.round, g.ordinal"
        )
        for row in self.db.execute(query, params):
            (gid, rnd, rules, south, north, moves, ss, ns, winner, reason, faulty, detail, ms, err, at) = row
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
                "stderr": json.loads(err),
                "finished_at": at,
            }


def store_path(out: Path, name: str) -> Path:
    return Path(out) / name / STORE_FILE
