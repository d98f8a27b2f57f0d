"""The tournament store: one SQLite file per tournament, its schema and its one writer (the read queries are
queries.py; these two are the only modules that speak SQL).

Every finished game is committed at once by the one writer (the scheduler's main process), or with the
games that reached this side with it (`together`: a cluster task's), so a tournament stopped at any moment
keeps every game it finished (a kill -9 within a group loses only that group, which the next run plays),
and a game is never stored twice: (round, south version, north version) is unique. A bot
version is its name plus a hash of its code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arena.game.openings import Book
from arena.match.bots import Bot
from arena.match.record import GameRecord, Reason, decoder, encoder, is_plain, plain_type, record_fields
from arena.tournament.backend import Machine
from arena.tournament.schedule import Result, Slot, Version
from arena.tournament.settings import Settings

SCHEMA_VERSION = 2
STORE_FILE = "arena.sqlite"
LOCK_FILE = "arena.lock"  # held by the run that writes the store

# SQL types of the record's fields; containers (moves, think_ms, stderr, ...) are stored as JSON text.
_SQL_TYPES = {int: "INTEGER NOT NULL", float: "REAL NOT NULL", str: "TEXT NOT NULL"}
RECORD_FIELDS = record_fields()
_ENCODE = tuple((name, encoder(kind)) for name, kind in RECORD_FIELDS)
_DECODE = {name: decoder(kind) for name, kind in RECORD_FIELDS}
# Per-bot figures of a game, read out of the record by its own rules (the swap rule is `store_of`'s), kept
# in columns of their own so that the tables below can sum them in SQL: (column, SQL type, how).
_SUMMARY: tuple[tuple[str, str, Callable[[GameRecord], object]], ...] = (
    ("south_score", "INTEGER NOT NULL", lambda r: r.store_of(r.south)),  # seeds of the bot that began south
    ("north_score", "INTEGER NOT NULL", lambda r: r.store_of(r.north)),
    ("south_think_ms", "REAL NOT NULL", lambda r: r.think_ms.get(r.south, 0.0)),
    ("north_think_ms", "REAL NOT NULL", lambda r: r.think_ms.get(r.north, 0.0)),
    ("south_moves", "INTEGER NOT NULL", lambda r: r.moves_made.get(r.south, 0)),
    ("north_moves", "INTEGER NOT NULL", lambda r: r.moves_made.get(r.north, 0)),
)
# What `arena export` writes and `Store.records` yields: where the game stands in the tournament, then
# the record's own fields.
EXPORT_FIELDS = ("id", "round", *(name for name, _ in RECORD_FIELDS), "finished_at")


def _sql_type(kind: object) -> str:
    if (base := plain_type(kind)) is not None:
        return _SQL_TYPES[base]  # a Reason is TEXT as a str is
    if is_plain(kind):
        return "TEXT"  # an optional name (winner, faulty)
    return "TEXT NOT NULL"  # JSON


def _games_table(name: str = "games") -> str:
    columns = [f"{field} {_sql_type(kind)}" for field, kind in RECORD_FIELDS]
    columns += [f"{column} {sql}" for column, sql, _ in _SUMMARY]
    return f"""CREATE TABLE {name} (
    id INTEGER PRIMARY KEY,
    round INTEGER NOT NULL,
    ordinal TEXT NOT NULL,
    south_id INTEGER NOT NULL REFERENCES bots (id),
    north_id INTEGER NOT NULL REFERENCES bots (id),
    winner_id INTEGER REFERENCES bots (id),
    faulty_id INTEGER REFERENCES bots (id),
    {", ".join(columns)},
    finished_at TEXT NOT NULL,
    UNIQUE (round, south_id, north_id)
);
"""


# A game that repeats an earlier one exactly (the same versions on the same sides, opening, moves and end):
# deterministic bots that meet again in the same position play it again, and it is no new evidence, so the
# ratings, the stopping rule and the SPRT count it once. 1 for each such game after the first in schedule
# order (not the order games happened to finish in, so that the first pair of games stays whole and a run
# on any number of cores counts the same games); benched placeholders are left out before it is applied.
REPEAT = (
    "(row_number() OVER (PARTITION BY south_id, north_id, opening, moves, winner_id, reason "
    "ORDER BY round, ordinal) > 1)"
)
# The same fact of one game `g` of a query, without a window over the field's games: an earlier game (in
# schedule order) of the same versions on the same sides, from the same opening, with the same moves and end.
# For what reads only the games after a point (ratings.advance); `games_pair` finds the candidates.
REPEAT_OF = (
    "EXISTS (SELECT 1 FROM games e WHERE e.south_id = g.south_id AND e.north_id = g.north_id "
    "AND e.opening IS g.opening AND e.moves IS g.moves AND e.winner_id IS g.winner_id "
    "AND e.reason IS g.reason AND (e.round, e.ordinal) < (g.round, g.ordinal))"
)
_GAMES_ORDER = "CREATE INDEX IF NOT EXISTS games_order ON games (round, ordinal)"
# A field's games found by its bot versions, not by reading every game: a class's ladder holds a semester
# of retired versions' games, and each batch, snapshot and rating reads only the current field's.
_GAMES_PAIR = "CREATE INDEX IF NOT EXISTS games_pair ON games (south_id, north_id)"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bots (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    path TEXT NOT NULL,
    author TEXT,
    first_seen TEXT NOT NULL,
    command TEXT,
    UNIQUE (name, digest)
);
{_games_table()}
{_GAMES_ORDER};
{_GAMES_PAIR};
"""
_GAME_COLUMNS = (
    ["id", "round", "ordinal", "south_id", "north_id", "winner_id", "faulty_id"]
    + [name for name, _ in RECORD_FIELDS]
    + [column for column, _, _ in _SUMMARY]
    + ["finished_at"]
)
_INSERT = f"INSERT INTO games ({', '.join(_GAME_COLUMNS)}) VALUES ({', '.join('?' * len(_GAME_COLUMNS))})"


class StoreError(RuntimeError):
    """A store that cannot be used as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Enforced:
    """What the bots of the last run ran under (meta 'confinement'): the sandbox and cgroups as the machine
    (on a cluster: every worker) had them, and in words what could not be enforced."""

    sandbox: bool
    cgroups: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Allowances:
    """What bots of the last run asked for in their bot.toml beyond the tournament's limits (meta
    'allowances'), by bot name: memory in MiB as granted (capped by the teacher's maximum), and as asked."""

    memory: dict[str, int] = field(default_factory=dict)
    asked: dict[str, int] = field(default_factory=dict)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = Path(path)
        self._ids: dict[tuple[str, str], int] = {}  # bot versions' ids: this process is the one writer
        if not create and not self.path.exists():
            raise StoreError(f"no tournament store at {self.path}; run 'arena run' first")
        if self.path.is_file() and self.path.stat().st_size == 0:  # not a new tournament: an emptied store
            raise StoreError(
                f"{self.path} is empty (0 bytes), not a tournament store: a copy that failed or a full disk "
                "may have emptied it; move it away to start this tournament anew, or give another --name"
            )
        self._lock: int | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot make the tournament folder {self.path.parent}: {e.strerror}") from None
        if not os.access(self.path.parent, os.W_OK):
            raise StoreError(f"the tournament folder {self.path.parent} is read-only; give another --out")
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self._meta("schema")
            tables = self.db.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise StoreError(
                f"{self.path} is not an arena store or is damaged ({e}): give another --name for a new "
                f"tournament; to save its games try 'sqlite3 {self.path} .recover > saved.sql'"
            ) from None
        if version is None and tables:
            raise StoreError(f"{self.path} is not an arena store (it holds other tables)")
        if version == "1":
            _migrate_v1(self.db)
            version = str(SCHEMA_VERSION)
        if version is not None and version != str(SCHEMA_VERSION):
            raise StoreError(
                f"{self.path} was written by another version of arena (store schema {version}, this arena "
                f"reads {SCHEMA_VERSION}); use a new --name, or the arena version that wrote it"
            )
        if version is None:
            self.db.executescript(_SCHEMA)
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            self.db.execute("INSERT INTO meta VALUES ('created', ?)", (now(),))
        _add_new_fields(self.db)
        _add_bot_command(self.db)
        if create:  # a writer's store: a reader (a page asking for one game) never builds an index
            _add_indexes(self.db)

    def lock(self) -> None:
        """Become the tournament's one writer, or StoreError naming the arena that is: two runs of one
        tournament at once would play the same games twice. The lock goes with the process, however it
        ends."""
        path = self.path.with_name(LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StoreError(
                f"tournament {self.path.parent.name!r} is being played right now by {holder}; wait for it to "
                "finish (or stop it), or give this run another --name"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"arena (pid {os.getpid()}, since {now()})".encode(), 0)
        self._lock = fd

    def close(self) -> None:
        self.db.close()
        if self._lock is not None:
            os.close(self._lock)  # releases the lock; the file stays, empty of meaning
            self._lock = None

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
        if not raw:
            return None
        # A tournament from before openings existed played every game from the start: it goes on so (and
        # one from before the clock was one record keeps it flat: from_dict reads that too).
        return Settings.from_dict({"openings": 0, **json.loads(raw)})

    def fix_settings(self, settings: Settings) -> None:
        """Record the settings of a new tournament, or refuse a resume under other settings."""
        stored = self.settings()
        if stored is None:
            self.db.execute("INSERT INTO meta VALUES ('settings', ?)", (json.dumps(settings.to_dict()),))
            return
        if stored != settings:
            was, asked = stored.named(), settings.named()
            diffs = [f"{k} {was[k]} (asked: {asked[k]})" for k in asked if was[k] != asked[k]]
            raise StoreError(
                f"tournament {self.path.parent.name!r} was started with " + ", ".join(diffs) + "; "
                "resume with the same settings, or give the new ones another --name"
            )

    def book(self) -> Book | None:
        """The tournament's openings in round order, as fixed when it began (None before that)."""
        raw = self._meta("openings")
        if raw is None:
            return None
        data = json.loads(raw)
        return Book(tuple(tuple(line) for line in data["lines"]), data["source"])

    def fix_book(self, book: Book) -> None:
        """Keep the openings for the tournament's whole life: a resume plays the same ones."""
        data = {"source": book.source, "lines": [list(line) for line in book.lines]}
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('openings', ?)", (json.dumps(data),))

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- what the last run was played under, for the page: each meta blob read and written here only ----

    def cluster(self) -> str:
        """How the last run's cluster was trusted, in words ('': the last run played on this machine)."""
        return self._meta("cluster") or ""

    def set_cluster(self, trust: str) -> None:
        self.set_meta("cluster", trust)

    def created(self) -> str | None:
        return self._meta("created")

    def confinement(self) -> Enforced | None:
        """What the last run's bots ran under; None before a run."""
        raw = self._meta("confinement")
        if not raw:
            return None
        data = json.loads(raw)
        return Enforced(bool(data.get("sandbox")), bool(data.get("cgroups")), tuple(data.get("notes", ())))

    def set_confinement(self, enforced: Enforced) -> None:
        self.set_meta("confinement", json.dumps({**asdict(enforced), "notes": list(enforced.notes)}))

    def allowances(self) -> Allowances:
        data = json.loads(self._meta("allowances") or "{}")
        memory, asked = (
            {bot: int(mb) for bot, mb in data.get(k, {}).items()} for k in ("memory", "memory_asked")
        )
        return Allowances(memory, asked)

    def set_allowances(self, allowances: Allowances) -> None:
        data = {"memory": allowances.memory, "memory_asked": allowances.asked}
        self.set_meta("allowances", json.dumps(data))

    def not_entered(self) -> list[tuple[str, str]]:
        """The last run's entries meant as bots that could not play, each with why (and how to fix it)."""
        return [(str(entry), str(why)) for entry, why in json.loads(self._meta("not_entered") or "[]")]

    def set_not_entered(self, broken: Iterable[tuple[str, str]]) -> None:
        self.set_meta("not_entered", json.dumps([list(b) for b in broken]))

    def workers(self) -> dict[str, Machine]:
        """Every cluster worker that ever played a game of the tournament (or was dropped from a run), by
        its machine (Machine.identity: as the lab's scheduler certified it)."""
        known = json.loads(self._meta("workers") or "{}")
        names = {f.name for f in dataclasses.fields(Machine)}
        return {
            address: Machine(**{**{k: v for k, v in m.items() if k in names}, "notes": tuple(m["notes"])})
            for address, m in known.items()
        }

    def add_workers(self, machines: Iterable[Machine]) -> None:
        """Add these workers to those known (each with its one-line summary, as the page shows it)."""
        known = json.loads(self._meta("workers") or "{}")
        for m in machines:
            known[m.identity] = {**asdict(m), "summary": m.summary()}
        self.set_meta("workers", json.dumps(known))

    # --- bots -----------------------------------------------------------------------------------------

    def bot_id(self, bot: Bot) -> int:
        """The id of this bot version, adding it on first sight (remembered: asked twice a game)."""
        key = (bot.name, bot.digest)
        if key in self._ids:
            return self._ids[key]
        known = self.known_id(bot)
        if known is not None:  # a version from before commands were kept gets its own now
            self.db.execute(
                "UPDATE bots SET command = ? WHERE id = ? AND command IS NULL",
                (json.dumps(list(bot.argv)), known),
            )
            self._ids[key] = known
            return known
        cur = self.db.execute(
            "INSERT INTO bots (name, digest, path, author, first_seen, command) VALUES (?, ?, ?, ?, ?, ?)",
            (bot.name, bot.digest, str(bot.path), bot.author, now(), json.dumps(list(bot.argv))),
        )
        self._ids[key] = int(cur.lastrowid or 0)
        return self._ids[key]

    def known_id(self, bot: Bot) -> int | None:
        """The id of this bot version if the store has seen it, without adding it."""
        row = self.db.execute(
            "SELECT id FROM bots WHERE name = ? AND digest = ?", (bot.name, bot.digest)
        ).fetchone()
        return int(row[0]) if row else None

    def versions(self, ids: Iterable[int]) -> dict[str, str]:
        """Name -> digest of the given bot versions."""
        wanted = set(ids)
        return {
            name: digest
            for i, name, digest in self.db.execute("SELECT id, name, digest FROM bots")
            if i in wanted
        }

    def set_current(self, bots: Iterable[Bot]) -> list[int]:
        """Mark which bot versions make up the current field (the leaderboard shows only their games)."""
        ids = [self.bot_id(b) for b in bots]
        self.set_meta("current", json.dumps(sorted(ids)))
        return ids

    def current_ids(self) -> list[int]:
        raw = self._meta("current")
        return json.loads(raw) if raw else []

    # --- what an adaptive run plays and stops by ----------------------------------------------------

    def batch(self) -> list[tuple[int, Version, Version]]:
        """The games (round, south, north) of the batch an adaptive schedule named last: a run stopped in
        the middle of it finishes it first when resumed."""
        return [(int(r), (s[0], s[1]), (n[0], n[1])) for r, s, n in json.loads(self._meta("batch") or "[]")]

    def set_batch(self, games: Iterable[tuple[int, Version, Version]]) -> None:
        self.set_meta("batch", json.dumps([[r, list(s), list(n)] for r, s, n in games]))

    def stopping(self) -> dict[str, Any] | None:
        """The stopping rule of the last adaptive run (its confidence, resolution, top and references), or
        None when the last run played a number of rounds."""
        raw = self._meta("stopping")
        return json.loads(raw) if raw and raw != "null" else None

    def set_stopping(self, rule: dict[str, Any] | None) -> None:
        self.set_meta("stopping", json.dumps(rule))

    def sprt(self) -> str:
        """Where the last `arena sprt` of this store stands, in words ('' if it holds none)."""
        return self._meta("sprt") or ""

    def set_sprt(self, words: str) -> None:
        self.set_meta("sprt", words)

    # --- games ----------------------------------------------------------------------------------------

    def drop_benched(self) -> int:
        """Forget the placeholders of benched bots' games (never played): a new run plays them."""
        query = "DELETE FROM games WHERE reason = ?"
        return int(self.db.execute(query, (Reason.BENCHED,)).rowcount)

    def results(self, current_only: bool = False) -> list[Result]:
        """Every game played (not a benched bot's forfeit placeholder), as a schedule sees it; with
        `current_only` only the current field's games (`set_current`), read by their index: all a schedule
        of that field asks about, however many games retired versions played before. An exact repeat is
        one within its pair of versions, so it is flagged the same either way."""
        where = "reason != ?"
        params: list[object] = [Reason.BENCHED]
        if current_only:
            ids = self.current_ids()
            marks = ",".join("?" * len(ids)) or "NULL"
            where += f" AND south_id IN ({marks}) AND north_id IN ({marks})"
            params += [*ids, *ids]
        query = (
            # Only the columns read: the window's sort carries each row whole, and an adaptive run asks
            # after every batch (SELECT * carried every game's moves, times and stderr: over twice the time).
            "SELECT g.round, s.name, s.digest, n.name, n.digest, w.name, g.repeat FROM (SELECT round, "
            f"ordinal, south_id, north_id, winner_id, {REPEAT} AS repeat FROM games WHERE {where}) g "
            "JOIN bots s ON s.id = g.south_id JOIN bots n ON n.id = g.north_id "
            "LEFT JOIN bots w ON w.id = g.winner_id ORDER BY g.round, g.ordinal"
        )
        rows = self.db.execute(query, params)
        return [Result(r, (sn, sd), (nn, nd), w, bool(x)) for r, sn, sd, nn, nd, w, x in rows]

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """The games added inside committed in one transaction at its end (those added before an error
        too): a cluster task brings a hundred games of a few ms at once, and a commit of each cost as much
        as the rest of storing it. A kill -9 inside rolls the group back whole: none of it is stored, so the
        next run plays it again, and no game is ever stored twice."""
        if self.db.in_transaction:  # within a group already: one commit, the outer one
            yield
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def add_game(self, slot: Slot, record: GameRecord) -> int:
        """Store one finished game and commit at once (or at the end of `together`)."""
        south, north = self.bot_id(slot.south), self.bot_id(slot.north)
        row = _game_row(None, slot.round, slot.ordinal, south, north, record, now())
        return int(self.db.execute(_INSERT, row).lastrowid or 0)

    def count_games(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM games").fetchone()[0])

    def unsandboxed(self) -> dict[str, int]:
        """Played games whose bots ran outside the sandbox, by the machine that played them ("": here)."""
        query = (
            "SELECT worker, count(*) FROM games WHERE sandboxed IN ('0', 'false') AND reason != ? "
            "GROUP BY worker ORDER BY worker"
        )
        return {str(w): int(n) for w, n in self.db.execute(query, (Reason.BENCHED,))}

    def records(self, current_only: bool = False) -> Iterator[dict[str, Any]]:
        """Game records in schedule order as plain values (EXPORT_FIELDS: `id`, `round`, the record's fields,
        `finished_at`); `GameRecord.from_dict` makes one a record again."""
        where = ""
        params: list[int] = []
        if current_only:
            ids = self.current_ids()
            marks = ",".join("?" * len(ids)) or "NULL"
            where = f"WHERE south_id IN ({marks}) AND north_id IN ({marks})"
            params = ids + ids
        query = f"SELECT {', '.join(EXPORT_FIELDS)} FROM games {where} ORDER BY round, ordinal"
        for row in self.db.execute(query, params):
            yield {
                name: _DECODE[name](value) if name in _DECODE else value
                for name, value in zip(EXPORT_FIELDS, row, strict=True)
            }


def _game_row(
    gid: int | None, rnd: int, ordinal: str, south: int, north: int, record: GameRecord, finished_at: str
) -> list[object]:
    """The values of _INSERT for one game: where it stands, the bot versions, then the record."""
    ids = {record.south: south, record.north: north}
    row: list[object] = [gid, rnd, ordinal, south, north]
    row += [
        ids.get(record.winner) if record.winner else None,
        ids.get(record.faulty) if record.faulty else None,
    ]
    row += [encode(getattr(record, name)) for name, encode in _ENCODE]
    row += [how(record) for _, _, how in _SUMMARY]
    return [*row, finished_at]


def _add_new_fields(db: sqlite3.Connection) -> None:
    """A record field added since the store was made gets its column, holding the field's default for the
    games already stored (an `opening` of () for games from the start)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(games)")}
    defaults = {f.name: f for f in dataclasses.fields(GameRecord)}
    for name, encode in _ENCODE:
        if name in have:
            continue
        spec = defaults[name]
        if spec.default is not dataclasses.MISSING:
            value = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            value = spec.default_factory()
        else:
            raise StoreError(f"this store's games lack the record field {name!r}, which has no default")
        sql_type = _sql_type(dict(RECORD_FIELDS)[name])
        db.execute(f"ALTER TABLE games ADD COLUMN {name} {sql_type} DEFAULT {_literal(encode(value))}")


def _add_indexes(db: sqlite3.Connection) -> None:
    """A store made before an index was added gets it (once: seconds for a semester's games)."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'games_pair'").fetchone():
        db.execute(_GAMES_PAIR)


def _add_bot_command(db: sqlite3.Connection) -> None:
    """A store made before bots' commands were kept gets the column, empty for the versions it knows: their
    reproduce command then says to run the command in the bot.toml."""
    if "command" not in {row[1] for row in db.execute("PRAGMA table_info(bots)")}:
        db.execute("ALTER TABLE bots ADD COLUMN command TEXT")


def _literal(value: object) -> str:
    """An SQL literal for a column default."""
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _migrate_v1(db: sqlite3.Connection) -> None:
    """Rewrite a schema-1 store (bot names by id, a swapped flag) into this schema, keeping every game."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("ALTER TABLE games RENAME TO games_v1")
        db.execute("DROP INDEX IF EXISTS games_order")
        db.execute(_games_table())
        db.execute(_GAMES_ORDER)
        old = db.execute(
            "SELECT g.id, g.round, g.ordinal, g.south_id, g.north_id, g.rules, s.name, n.name, g.moves, "
            "g.south_store, g.north_store, w.name, g.reason, f.name, g.detail, g.move_ms, g.south_think_ms, "
            "g.north_think_ms, g.south_moves, g.north_moves, g.stderr, g.finished_at FROM games_v1 g "
            "JOIN bots s ON s.id = g.south_id JOIN bots n ON n.id = g.north_id "
            "LEFT JOIN bots w ON w.id = g.winner_id LEFT JOIN bots f ON f.id = g.faulty_id ORDER BY g.id"
        ).fetchall()
        for gid, rnd, ordinal, sid, nid, rules, south, north, moves, ss, ns, winner, *rest in old:
            reason, faulty, detail, move_ms, s_think, n_think, s_moves, n_moves, stderr, at = rest
            record = GameRecord(
                rules, south, north, tuple(json.loads(moves)), ss, ns, winner, reason, faulty, detail,
                tuple(json.loads(move_ms)), {south: s_think, north: n_think},
                {south: s_moves, north: n_moves}, json.loads(stderr),
            )  # fmt: skip
            db.execute(_INSERT, _game_row(gid, rnd, ordinal, sid, nid, record, at))
        db.execute("DROP TABLE games_v1")
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def store_path(out: Path, name: str) -> Path:
    return Path(out) / name / STORE_FILE
