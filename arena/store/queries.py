"""The read queries behind the ratings, the page and the terminal: tables and games out of a tournament's
store (arena/store/writer.py, whose `Store` is the one writer). Nothing here writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.match.bots import Where
from arena.store.writer import _DECODE, EXPORT_FIELDS, REPEAT, REPEAT_OF, Store

if TYPE_CHECKING:
    import pandas as pd


# --- tables for ratings and the report ----------------------------------------------------------------
# Read-only queries behind the leaderboard and the HTML report. Each one streams or aggregates inside
# SQLite, so memory stays flat however many games are stored: only the few columns a table needs are read,
# and moves and stderr are never loaded for all games. `field` is the ids of the bot versions that make up
# the field (normally `Store.current_ids()`), passed as one JSON parameter.


_FIELD = "field(id) AS (SELECT value FROM json_each(:field))"
_IN_FIELD = "south_id IN (SELECT id FROM field) AND north_id IN (SELECT id FROM field)"


def _table(store: Store, query: str, params: dict[str, object]) -> pd.DataFrame:
    import pandas as pd  # here, not at the top: `arena play` and `arena --help` never pay for pandas

    return pd.read_sql(query, store.db, params=params)


def _field(ids: Iterable[int]) -> str:
    return json.dumps(sorted(int(i) for i in ids))


def field_ids(store: Store) -> list[int]:
    """The current field; for a store that never recorded one, the newest version of every bot name."""
    ids = store.current_ids()
    if ids or "current" in store.meta():
        return ids
    return [int(r[0]) for r in store.db.execute("SELECT max(id) FROM bots GROUP BY name ORDER BY name")]


_SCHEDULED = "ORDER BY round, ordinal, id"  # schedule order; the id only breaks a tie a hash never makes


def rating_games(store: Store, field: Iterable[int]) -> Iterator[tuple[int, int, int | None, bool]]:
    """(south id, north id, winner id or None, repeat) of the field's games in schedule order, one at a
    time; `repeat`: the game repeats an earlier one exactly (`store.REPEAT`), no new evidence."""
    query = (
        f"WITH {_FIELD} SELECT south_id, north_id, winner_id, {REPEAT} AS repeat FROM games "
        f"WHERE {_IN_FIELD} {_SCHEDULED}"
    )
    for south, north, winner, repeat in store.db.execute(query, {"field": _field(field)}):
        yield south, north, winner, bool(repeat)


Key = tuple[int, str, int]  # where a game stands in schedule order: (round, ordinal, id)


def rating_games_after(
    store: Store, field: Iterable[int], key: Key
) -> Iterator[tuple[int, int, str, int, int, int | None, bool]]:
    """(id, round, ordinal, south id, north id, winner id or None, repeat) of the field's games after `key`
    in schedule order, one at a time: what an incremental rating (ratings.advance) has not rated yet.
    `repeat` as `rating_games` has it, looked up per game (`store.REPEAT_OF`) rather than over the field."""
    query = (
        f"WITH {_FIELD} SELECT id, round, ordinal, south_id, north_id, winner_id, {REPEAT_OF} AS repeat "
        f"FROM games g WHERE {_IN_FIELD} AND (round, ordinal, id) > (:round, :ordinal, :id) {_SCHEDULED}"
    )
    params = {"field": _field(field), "round": key[0], "ordinal": key[1], "id": key[2]}
    for gid, rnd, ordinal, south, north, winner, repeat in store.db.execute(query, params):
        yield gid, rnd, ordinal, south, north, winner, bool(repeat)


def rated_check(store: Store, field: Iterable[int], key: Key) -> tuple[int, int, int]:
    """(count, sum of ids, sum of winner ids) of the field's games at or before `key` in schedule order:
    what an incremental rating checks against what it rated, to see a game stored late (a parallel
    worker's, with an earlier key) or one removed. One aggregate inside SQLite: no row leaves it."""
    query = (
        f"WITH {_FIELD} SELECT count(*), coalesce(sum(id), 0), coalesce(sum(winner_id), 0) FROM games "
        f"WHERE {_IN_FIELD} AND (round, ordinal, id) <= (:round, :ordinal, :id)"
    )
    count, ids, winners = store.db.execute(
        query, {"field": _field(field), "round": key[0], "ordinal": key[1], "id": key[2]}
    ).fetchone()
    return int(count), int(ids), int(winners)


def field_bots(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """The field's bot versions: id, name, digest, author, first_seen."""
    query = (
        f"WITH {_FIELD} SELECT id, name, digest, author, first_seen FROM bots "
        "WHERE id IN (SELECT id FROM field) ORDER BY name"
    )
    return _table(store, query, {"field": _field(field)})


def pair_totals(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """One row per (bot, opponent) that met in the field: games, distinct games (those that are not an exact
    repeat of an earlier one, `store.REPEAT`), wins, draws and losses of the distinct games (as the Elo and
    the stopping rule count them: a repeat is no new evidence), and over every game played the summed store
    margin, forfeits, thinking ms and moves. Each game counts once from each side, with the seeds that bot
    ended with (`south_score`/`north_score` are per starting bot, the swap already applied by the record)."""
    sides = (
        "SELECT south_id AS bot, north_id AS opp, winner_id, faulty_id, south_score AS own, north_score AS "
        "their, south_think_ms AS think_ms, south_moves AS moves, repeat FROM g "
        "UNION ALL "
        "SELECT north_id, south_id, winner_id, faulty_id, north_score, south_score, north_think_ms, "
        "north_moves, repeat FROM g"
    )
    played = (
        "SELECT south_id, north_id, winner_id, faulty_id, south_score, north_score, south_think_ms, "
        f"north_think_ms, south_moves, north_moves, {REPEAT} AS repeat FROM games WHERE {_IN_FIELD}"
    )
    query = (
        f"WITH {_FIELD}, g AS ({played}), sides AS ({sides}) "
        "SELECT bot, opp, count(*) AS games, sum(NOT repeat) AS distinct_games, "
        "sum(CASE WHEN winner_id = bot AND NOT repeat THEN 1 ELSE 0 END) AS wins, "
        "sum(CASE WHEN winner_id IS NULL AND NOT repeat THEN 1 ELSE 0 END) AS draws, "
        "sum(CASE WHEN winner_id = opp AND NOT repeat THEN 1 ELSE 0 END) AS losses, "
        "sum(own - their) AS margin_sum, "
        "sum(CASE WHEN faulty_id = bot THEN 1 ELSE 0 END) AS forfeits, "
        "total(think_ms) AS think_ms, sum(moves) AS moves "
        "FROM sides GROUP BY bot, opp ORDER BY bot, opp"
    )
    return _table(store, query, {"field": _field(field)})


def forfeit_reasons(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """How often each bot of the field forfeited, by reason (timeout, crash, illegal, garbled)."""
    query = (
        f"WITH {_FIELD} SELECT faulty_id AS bot, reason, count(*) AS count FROM games "
        f"WHERE faulty_id IS NOT NULL AND {_IN_FIELD} GROUP BY faulty_id, reason ORDER BY faulty_id, reason"
    )
    return _table(store, query, {"field": _field(field)})


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
        "g.said, coalesce(json_extract(g.stderr, '$.\"' || g.faulty || '\"'), '') AS stderr, g.finished_at, "
        "g.opening FROM ranked r JOIN games g ON g.id = r.id JOIN bots f ON f.id = g.faulty_id "
        "JOIN bots o ON o.id = CASE WHEN g.south_id = g.faulty_id THEN g.north_id ELSE g.south_id END "
        "WHERE r.nth <= :per_bot ORDER BY f.name, g.id DESC"
    )
    faults = _table(store, query, {"field": _field(field), "per_bot": int(per_bot)})
    faults["opening"] = [json.loads(o) if o else [] for o in faults["opening"]]  # as the record holds it
    return faults


def retired_bots(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """Bot versions outside the field, with how many stored games each played and whether the bot was
    withdrawn (its name is not in the field) or replaced by a newer version of its code."""
    query = (
        f"WITH {_FIELD}, played AS (SELECT bot, count(*) AS games FROM "
        "(SELECT south_id AS bot FROM games UNION ALL SELECT north_id FROM games) GROUP BY bot), "
        "names AS (SELECT name FROM bots WHERE id IN (SELECT id FROM field)) "
        "SELECT b.id, b.name, b.digest, b.first_seen, coalesce(p.games, 0) AS games, "
        "CASE WHEN b.name IN (SELECT name FROM names) THEN 'replaced' ELSE 'withdrawn' END AS status "
        "FROM bots b LEFT JOIN played p ON p.bot = b.id WHERE b.id NOT IN (SELECT id FROM field) "
        "ORDER BY b.name, b.id"
    )
    return _table(store, query, {"field": _field(field)})


def game_facts(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """One row: games stored, the rounds the field has played in, first and last finish, and the field's
    share of the games."""
    query = (
        f"WITH {_FIELD} SELECT count(*) AS games, "
        f"count(DISTINCT CASE WHEN {_IN_FIELD} THEN round END) AS rounds, "
        f"coalesce(max(CASE WHEN {_IN_FIELD} THEN round END), 0) AS last_round, "
        "min(finished_at) AS first_finished, max(finished_at) AS last_finished, "
        f"sum(CASE WHEN {_IN_FIELD} THEN 1 ELSE 0 END) AS field_games FROM games"
    )
    return _table(store, query, {"field": _field(field)})


def pair_variety(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """One row per pair of the field that met (a < b): games, distinct games (those not an exact repeat of an
    earlier one, `store.REPEAT`, as the ratings count them) and games that began at the start position.
    Deterministic bots that meet again in the same position play the same game again: fewer distinct games
    than games means the pairing repeated itself."""
    query = (
        f"WITH {_FIELD}, g AS (SELECT south_id, north_id, opening, {REPEAT} AS repeat FROM games "
        f"WHERE {_IN_FIELD}) SELECT min(south_id, north_id) AS a, max(south_id, north_id) AS b, "
        "count(*) AS games, sum(NOT repeat) AS distinct_games, "
        "sum(CASE WHEN opening = '[]' THEN 1 ELSE 0 END) AS from_start "
        "FROM g GROUP BY a, b ORDER BY a, b"
    )
    return _table(store, query, {"field": _field(field)})


# --- games one by one, for the replays and the game list ----------------------------------------------
# Read-only too. A replay needs a game's whole record; the page's game list needs a few small columns of
# every game; both are read in id order, the replays a block of ids at a time.

_RECORD_SELECT = f"SELECT {', '.join(EXPORT_FIELDS)}, south_id, north_id FROM games"


def _record_rows(rows: Iterable[tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        record = {
            name: _DECODE[name](value) if name in _DECODE else value
            for name, value in zip(EXPORT_FIELDS, row, strict=False)
        }
        record["south_id"], record["north_id"] = row[-2], row[-1]
        yield record


def records_between(store: Store, first: int, last: int) -> Iterator[dict[str, Any]]:
    """The games with `first` <= id <= `last` in id order, as `Store.records` gives them plus the bot
    versions' ids (`south_id`, `north_id`)."""
    rows = store.db.execute(f"{_RECORD_SELECT} WHERE id BETWEEN ? AND ? ORDER BY id", (first, last))
    yield from _record_rows(rows)


def latest_records(store: Store, count: int) -> Iterator[dict[str, Any]]:
    """The latest `count` games, newest first, as `records_between` gives them: read from the end of the
    ids, however many games came before."""
    rows = store.db.execute(f"{_RECORD_SELECT} ORDER BY id DESC LIMIT ?", (count,))
    yield from _record_rows(rows)


def game_record(store: Store, game: int) -> dict[str, Any] | None:
    """One stored game as `records_between` gives it, or None if there is no such game."""
    return next(_record_rows(store.db.execute(f"{_RECORD_SELECT} WHERE id = ?", (game,))), None)


def id_blocks(store: Store, size: int) -> list[tuple[int, int, int, str]]:
    """(block, games, sum of ids, latest finish) of every block of `size` consecutive ids that holds games:
    what changes when a game of the block is added, or a benched placeholder dropped and played."""
    query = (
        "SELECT id / ? AS block, count(*), sum(id), max(finished_at) FROM games GROUP BY block ORDER BY block"
    )
    return [(int(b), int(c), int(s), str(f)) for b, c, s, f in store.db.execute(query, (size,))]


def bot_places(store: Store) -> dict[int, Where]:
    """Where each bot version was found and the command it ran with, by id: what a reproduce command runs."""
    rows = store.db.execute("SELECT id, path, command FROM bots")
    return {int(i): Where(Path(p), tuple(json.loads(c)) if c else None) for i, p, c in rows}


def bot_versions(store: Store) -> list[tuple[int, str, str]]:
    """(id, name, digest) of every bot version the store has seen, in id order."""
    return [(int(i), str(n), str(d)) for i, n, d in store.db.execute("SELECT id, name, digest FROM bots")]


def game_list(store: Store) -> Iterator[tuple[int, ...]]:
    """One tuple of small numbers per stored game, in schedule order: id, round, south id, north id,
    winner id (0: a draw), faulty id (0: none), reason, the seeds each starting bot ended with, the bots'
    moves, the opening's plies and whether North swapped."""
    query = (
        "SELECT id, round, south_id, north_id, coalesce(winner_id, 0), coalesce(faulty_id, 0), reason, "
        "south_score, north_score, south_moves + north_moves, json_array_length(opening), "
        "instr(moves, '\"SWAP\"') > 0 FROM games ORDER BY round, ordinal"
    )
    yield from store.db.execute(query)


def fault_kinds(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """Per bot of the field and fault reason: how many, and the latest one as the example (game, opponent,
    detail), so that twenty identical faults read as one line with a count."""
    query = (
        f"WITH {_FIELD}, ranked AS (SELECT id, faulty_id, reason, count(*) OVER (PARTITION BY faulty_id, "
        "reason) AS count, row_number() OVER (PARTITION BY faulty_id, reason ORDER BY id DESC) AS nth "
        f"FROM games WHERE faulty_id IS NOT NULL AND {_IN_FIELD}) "
        "SELECT r.faulty_id AS bot, r.reason, r.count, g.id AS game, g.detail, g.said, o.name AS opponent "
        "FROM ranked r JOIN games g ON g.id = r.id "
        "JOIN bots o ON o.id = CASE WHEN g.south_id = r.faulty_id THEN g.north_id ELSE g.south_id END "
        "WHERE r.nth = 1 ORDER BY r.faulty_id, r.count DESC, r.reason"
    )
    return _table(store, query, {"field": _field(field)})


def random_moves(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """Per bot of the field that had any: its positions played by a random legal move (a KGP agent's with
    no move by `stop`, GameRecord.random_moves), and its moves in all, over the field's games."""
    mine = "'$.\"' || b.name || '\"'"  # the bot's own entry of a record's per-bot JSON
    side = (
        f"SELECT g.{{me}}_id AS bot, coalesce(json_extract(g.random_moves, {mine}), 0) AS randoms, "
        f"coalesce(json_extract(g.moves_made, {mine}), 0) AS moves "
        f"FROM games g JOIN bots b ON b.id = g.{{me}}_id WHERE {_IN_FIELD}"
    )
    query = (
        f"WITH {_FIELD}, sides AS ({side.format(me='south')} UNION ALL {side.format(me='north')}) "
        "SELECT bot, sum(randoms) AS randoms, sum(moves) AS moves FROM sides GROUP BY bot "
        "HAVING sum(randoms) > 0 ORDER BY bot"
    )
    return _table(store, query, {"field": _field(field)})


def margins(store: Store, field: Iterable[int]) -> pd.DataFrame:
    """Per bot of the field: how many of its games ended with each final margin (own store minus the
    opponent's, the swap applied as in `pair_totals`)."""
    sides = (
        f"SELECT south_id AS bot, south_score - north_score AS margin FROM games WHERE {_IN_FIELD} "
        f"UNION ALL SELECT north_id, north_score - south_score FROM games WHERE {_IN_FIELD}"
    )
    query = (
        f"WITH {_FIELD}, sides AS ({sides}) SELECT bot, margin, count(*) AS count FROM sides "
        "GROUP BY bot, margin ORDER BY bot, margin"
    )
    return _table(store, query, {"field": _field(field)})


def recent_results(store: Store, field: Iterable[int], count: int) -> pd.DataFrame:
    """Per bot of the field, its latest `count` games in schedule order, oldest first: the game's id, its
    result from the bot's side ('W', 'D' or 'L') and the opponent's id (a leaderboard's form)."""
    sides = (
        "SELECT id AS game, round, ordinal, south_id AS bot, north_id AS opp, winner_id FROM games "
        f"WHERE {_IN_FIELD} "
        f"UNION ALL SELECT id, round, ordinal, north_id, south_id, winner_id FROM games WHERE {_IN_FIELD}"
    )
    query = (
        f"WITH {_FIELD}, sides AS ({sides}), numbered AS (SELECT *, row_number() OVER (PARTITION BY bot "
        "ORDER BY round DESC, ordinal DESC, game DESC) AS back FROM sides) "
        "SELECT bot, game, CASE WHEN winner_id IS NULL THEN 'D' WHEN winner_id = bot THEN 'W' ELSE 'L' END "
        "AS result, opp FROM numbered WHERE back <= :count ORDER BY bot, back DESC"
    )
    return _table(store, query, {"field": _field(field), "count": count})


def pair_games(store: Store, field: Iterable[int]) -> Iterator[tuple[int, int, int, int | None]]:
    """(round, south id, north id, winner id or None) of the field's games, one at a time: a round's two
    games of two bots, one from each side, are a pair of games from one opening. A game that repeats an
    earlier one exactly (`store.REPEAT`) is left out: it is no new evidence."""
    query = (
        f"WITH {_FIELD}, counted AS (SELECT round, south_id, north_id, winner_id, {REPEAT} AS repeat "
        f"FROM games WHERE {_IN_FIELD}) SELECT round, south_id, north_id, winner_id FROM counted "
        "WHERE NOT repeat"
    )
    yield from store.db.execute(query, {"field": _field(field)})
