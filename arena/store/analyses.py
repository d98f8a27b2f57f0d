"""Game analyses kept beside the games they analyse, so that a game is analysed once.

Their own SQLite file (`analyses.sqlite` in the tournament's folder, or beside a replay file), not a table
of the tournament's store: `arena analyse` may run while a tournament holds the store as its one writer,
and the store's schema stays the writer's. An analysis is found by what it analysed (the rules and every
ply, hashed), so a store rebuilt under the same name never shows another game's marks; the store's game ids
are kept too (analysed_games: two games played move for move alike share one analysis), for the report
to look them up by.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from arena.game.analysis import Analysis, Budget, Searched, analyse
from arena.game.rules import Move, parse_rules
from arena.match.record import GameRecord

ANALYSES_FILE = "analyses.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS analyses (
    key TEXT PRIMARY KEY,
    game INTEGER,
    analysis TEXT NOT NULL,
    analysed_at TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE INDEX IF NOT EXISTS analyses_game ON analyses (game);
CREATE TABLE IF NOT EXISTS analysed_games (
    game INTEGER PRIMARY KEY,
    key TEXT NOT NULL
);
INSERT OR IGNORE INTO analysed_games (game, key) SELECT game, key FROM analyses WHERE game IS NOT NULL;
"""


class AnalysesError(Exception):
    """The analyses file cannot be read or written; the message says which and why."""


def game_key(rules: str, plies: Sequence[Move]) -> str:
    """What identifies an analysed game: its rules and every ply from the start."""
    return hashlib.sha256(json.dumps([rules, list(plies)]).encode()).hexdigest()


class Analyses:
    """The analyses file of one folder."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / ANALYSES_FILE
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise AnalysesError(
                f"{self.path} is not an analyses file or is damaged ({e}); move it away"
            ) from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Analyses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, key: str) -> Analysis | None:
        """The kept analysis, or None: none kept, or one another version of arena wrote in another form
        (analysed again, it is replaced)."""
        row = self.db.execute("SELECT analysis FROM analyses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return Analysis.from_dict(json.loads(row[0]))
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, analysis: Analysis, game: int | None = None) -> None:
        """Keep `analysis` (a later one of the same game replaces it: a bigger budget, say)."""
        self.db.execute(
            "INSERT OR REPLACE INTO analyses (key, game, analysis) VALUES (?, ?, ?)",
            (key, game, json.dumps(analysis.to_dict())),
        )
        self.name(key, game)

    def name(self, key: str, game: int | None) -> None:
        """Record that stored game `game` is the one `key` analyses (as is any game played alike)."""
        if game is not None:
            self.db.execute("INSERT OR REPLACE INTO analysed_games (game, key) VALUES (?, ?)", (game, key))

    def games(self) -> list[int]:
        """The stored games' ids that were analysed (asked for by id: a game played move for move as
        another shares its analysis, and is listed once asked for)."""
        rows = self.db.execute("SELECT game FROM analysed_games ORDER BY game")
        return [game for (game,) in rows]

    def of_games(self, games: Iterable[tuple[int, str]]) -> dict[int, Analysis]:
        """The kept analyses of stored games, given as (game id, game_key): those analysed, by id."""
        wanted = dict(games)
        found: dict[int, Analysis] = {}
        for game, key in wanted.items():
            got = self.get(key)
            if got is not None:
                found[game] = got
        return found


def read_only(folder: Path) -> Analyses | None:
    """The folder's analyses for a page to read, or None where none were made (no file is created)."""
    return Analyses(folder) if (Path(folder) / ANALYSES_FILE).is_file() else None


def kept_or_analysed(
    folder: Path,
    record: GameRecord,
    game: int | None = None,
    budget: Budget | None = None,
    progress: Callable[[Searched], None] | None = None,
    again: bool = False,
) -> tuple[Analysis, bool]:
    """The game's analysis and whether it was kept from before: analysed now (and kept) only when there is
    none yet or `again`. IllegalMove if a stored move does not replay (a damaged record)."""
    rules = parse_rules(record.rules)
    key = game_key(rules.spec, record.plies)
    with Analyses(folder) as kept:
        found = None if again else kept.get(key)
        if found is not None:
            kept.name(key, game)
            return found, True
        analysis = analyse(rules, record.plies, len(record.opening), budget, progress)
        kept.put(key, analysis, game)
    return analysis, False
