"""The ladder (and the final) as the pages read them: a snapshot the worker writes beside the tournament's
store after its games (with the report's standings and matrix, and its bot pages' data), and one game read
from the store when a page asks for it, for the report's replay viewer (arena.report.face).

The snapshot (FOLDER/snapshot.json, replaced whole) holds the leaderboard as `Tournament.export_standings`
gives it and the latest games, so that a page or the live JSON costs a file read, not a rating of every
game: the worker, the store's one writer, rates (advancing the TrueSkill it keeps beside the store,
rated.py, by the games since the last snapshot). A replay is the rules engine's (arena.report.replay),
and the bots' words are in it only for the bots the viewer may see (access.sees_stderr).
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from arena.api import Tournament
from arena.game.rules import parse_rules
from arena.kgp.server import ranked as kgp_ranked
from arena.match.record import GameRecord
from arena.report import face, marked, mistakes
from arena.report.games import Think, think_times
from arena.report.replay import Replay, replay, unpiped
from arena.server.standings import rated
from arena.stats import ratings
from arena.store import queries
from arena.store.analyses import AnalysesError, game_key, read_only
from arena.store.writer import STORE_FILE, Store, StoreError, now

SNAPSHOT = "snapshot.json"
STANDINGS = "standings.html"  # the report's leaderboard and matrix of the snapshot (arena.report.face)
PLAYERS = "players.json"  # each bot's latest games and record against each opponent, for its author
VERSIONS = "versions.json"  # which class version (v3) each bot digest that played is
BOTS = "bots.json"  # each bot's page of the report, as data (face.bot_page_data), and its class version
THINK = "think.json"  # each bot version's think times (report.games.Think), and the last game counted
PAGES_S = 30.0  # how often a playing ladder draws its bot pages again (always once it is settled)
RUN_FROM = "where its author keeps the bot: beside the folder, or the file, they uploaded"  # for the lines
BOT_PAGES = {"ladder": "ladder/bots/", "final": "final/bots/"}  # where a bot's page is served (urls.py)
RECENT = 100  # latest games listed
SCANNED = 1000  # latest games read for each bot's own list
PER_BOT = 30  # of a bot's own games listed


def write_snapshot(cup: Tournament, note: str, settled: bool, pages: str = "ladder") -> dict[str, Any]:
    """Rate the tournament's games and write its snapshot (and the report's standings and matrix, drawn
    once here for every page that shows them); the snapshot. `pages`: whose bot pages ('ladder', 'final')
    are written with it, for the standings' names to link to ('': none, as for a scrimmage). TrueSkill is
    the kept state's (rated.py) advanced by the games since: one pass gives the standings and the bot
    pages' history."""
    text = io.StringIO()
    state = _rated(cup, keep=bool(pages))
    standing = ratings.standings(cup.store, rated=state)
    cup.export_standings(text, "jsonl", standing)
    labels = _labels(cup.folder, cup.store)
    if pages and (settled or _pages_due(cup.folder, {str(b) for b in standing.board["bot"]})):
        bots = face.bot_page_data(cup.store, standing, state.history(), _think(cup.folder, cup.store))
        ids = dict(zip(standing.board["bot"], (int(i) for i in standing.board["id"]), strict=True))
        drawn = now()
        shown = {
            name: {"page": page, "version": labels.get(ids[name], ""), "drawn": drawn}
            for name, page in bots.items()
        }
        _replace(cup.folder / BOTS, json.dumps(shown))
    href = (lambda name: f"/{BOT_PAGES[pages]}{quote(name, safe='')}") if pages else None
    _replace(cup.folder / STANDINGS, str(face.standings(cup.store, standing, href)))
    board = [json.loads(line) for line in text.getvalue().splitlines()]
    for row in board:
        for private in ("digest", "author"):
            row.pop(private, None)
    count = cup.store.count_games()
    recent = [_listed(r, labels) for r in queries.latest_records(cup.store, SCANNED)]  # newest first
    _replace(cup.folder / PLAYERS, json.dumps(_players(cup, recent)))
    data = {
        "updated": now(),
        "games": count,
        "note": note,
        "settled": settled,
        "board": board,
        "recent": recent[:RECENT],
        "remote": _remote(board),
    }
    _replace(cup.folder / SNAPSHOT, json.dumps(data))
    return data


def _think(folder: Path, store: Store) -> dict[int, Think]:
    """Each bot version's think times for its page's chart: kept in the folder and advanced by the games
    stored since (replaying every game again each PAGES_S would grow with the ladder)."""
    kept = _read(folder / THINK, {})
    think = {int(bot): Think.of(v) for bot, v in kept.get("think", {}).items()}
    upto = int(kept.get("upto", 0))
    rows = list(queries.records_between(store, upto + 1, 2**62))  # every game since
    if not rows and kept:
        return think
    for bot, more in think_times(rows, store.settings()).items():
        think.setdefault(bot, Think()).merge(more)
    upto = max([upto, *(int(r["id"]) for r in rows)])
    _replace(folder / THINK, json.dumps({"upto": upto, "think": {b: t.plain() for b, t in think.items()}}))
    return think


def _rated(cup: Tournament, keep: bool) -> ratings.Rated:
    """The field's TrueSkill: the state kept in the folder (rated.py) advanced by the games since, and kept
    again if it moved; without `keep` (a scrimmage, rated once), from nothing and not kept."""
    kept = rated.read(cup.folder) if keep else None
    state = ratings.advance(cup.store, kept, queries.field_ids(cup.store))
    moved = kept is None or (kept.field, kept.check, kept.key) != (state.field, state.check, state.key)
    if keep and moved:
        _replace(cup.folder / rated.RATED, rated.text(state))
    return state


def _pages_due(folder: Path, names: set[str]) -> bool:
    """Whether a playing ladder's bot pages are to be drawn again with this snapshot: every PAGES_S, or at
    once for a bot that has none. They draw every bot's charts and read its faults and margins, where the
    snapshot is rewritten every few seconds (benchmarks/bot_pages.py)."""
    path = folder / BOTS
    try:
        fresh = time.time() - path.stat().st_mtime < PAGES_S
    except OSError:
        return True
    return not fresh or set(_read(path, {})) != names


def _remote(board: list[dict[str, Any]]) -> str:
    """What the page says of the remote agents among the players (arena/server/kgp_ranked.py), if any."""
    names = sorted(str(row["bot"]) for row in board if kgp_ranked.is_agent(str(row["bot"])))
    return f"{', '.join(names)}: {kgp_ranked.MARK}" if names else ""


def remember_versions(folder: Path, digests: dict[str, str], versions: dict[str, str]) -> None:
    """Keep which class version each entered bot is (`digests`: name -> digest; `versions`: name -> 'v3
    #17' as field.sync recorded it), so that a game's bot version reads as its author numbered it."""
    known = _read(folder / VERSIONS, {})
    for name, digest in digests.items():
        what = versions.get(name, "")
        if what.startswith("v"):
            known[digest] = what.split()[0]
    _replace(folder / VERSIONS, json.dumps(known))


def _labels(folder: Path, store: Store) -> dict[int, str]:
    """A bot version's id in the store -> its class version ('v3'), where known."""
    known = _read(folder / VERSIONS, {})
    return {i: known[d] for i, _, d in queries.bot_versions(store) if d in known}


def write_games(cup: Tournament) -> None:
    """Each bot's games of a tournament played once (the final's against the references), for its
    author's page: players.json without the records, since a gauntlet's field is one bot's at a time."""
    count = cup.store.count_games()
    listed = [_listed(r) for r in queries.records_between(cup.store, 1, count + 1000)][::-1]
    _replace(cup.folder / PLAYERS, json.dumps(_players(cup, listed, against=False)))


def _players(cup: Tournament, recent: list[dict[str, Any]], against: bool = True) -> dict[str, Any]:
    """Per bot of the field: its latest games (newest first), the latest of each of its versions, and
    (`against`) its record against each opponent."""
    out: dict[str, Any] = {}
    for game in recent:
        for name in (game["south"], game["north"]):
            mine = out.setdefault(name, {"games": [], "by_version": {}, "against": {}})
            if len(mine["games"]) < PER_BOT:
                mine["games"].append(game)
            # each version's own latest too: a new version's games fill the latest thirty within minutes,
            # and the author still filters by the version before it (newest version first)
            kept = mine["by_version"].setdefault(game.get("versions", {}).get(name, ""), [])
            if len(kept) < PER_BOT:
                kept.append(game)
    if not against:
        return out
    field = queries.field_ids(cup.store)
    names = {i: n for i, n, _ in queries.bot_versions(cup.store)}
    for row in queries.pair_totals(cup.store, field).itertuples(index=False):
        bot, opp = names.get(int(row.bot), "?"), names.get(int(row.opp), "?")
        record = out.setdefault(bot, {"games": [], "by_version": {}, "against": {}})["against"]
        record[opp] = [int(row.wins), int(row.draws), int(row.losses)]
    return out


def _read(path: Path, empty: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty


def players(folder: Path) -> dict[str, Any]:
    """Each bot's own latest games and record, as the last snapshot wrote them."""
    found: dict[str, Any] = _read(folder / PLAYERS, {})
    return found


def _listed(record: dict[str, Any], labels: dict[int, str] | None = None) -> dict[str, Any]:
    labels = labels or {}
    return {
        "id": record["id"],
        "south": record["south"],
        "north": record["north"],
        "versions": {
            record["south"]: labels.get(record.get("south_id", 0), ""),
            record["north"]: labels.get(record.get("north_id", 0), ""),
        },
        "winner": record["winner"],
        "reason": str(record["reason"]),
        "score": f"{record['south_store']}-{record['north_store']}",
        "at": record["finished_at"],
    }


def _replace(path: Path, text: str) -> None:
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_text(text, encoding="utf-8")
    part.replace(path)


def snapshot(folder: Path) -> dict[str, Any]:
    """The last snapshot written in `folder` (an empty ladder before the first)."""
    try:
        data: dict[str, Any] = json.loads((folder / SNAPSHOT).read_text(encoding="utf-8"))
        return data
    except (OSError, ValueError):
        return {
            "updated": None,
            "games": 0,
            "note": "no games yet",
            "settled": False,
            "board": [],
            "recent": [],
        }


def bot(folder: Path, name: str) -> dict[str, Any] | None:
    """Bot `name`'s page data, class version and when it was drawn (`drawn`), as the last snapshot that
    drew the pages wrote them (None: no such bot)."""
    found: dict[str, Any] | None = _read(folder / BOTS, {}).get(name)
    return found


def standings(folder: Path) -> Markup:
    """The report's leaderboard and matrix as the last snapshot drew them ('' before the first)."""
    try:
        return Markup((folder / STANDINGS).read_text(encoding="utf-8"))
    except OSError:
        return Markup("")


Named = Callable[[str, str], str | None]  # (bot, its class version 'v3' or '') -> its author's folder


def game(
    folder: Path, game_id: int, may_see: Callable[[str], bool], named: Named | None = None
) -> dict[str, Any] | None:
    """Game `game_id` of the tournament in `folder`, replayed for the page: its boards ply by ply, its
    result and fault, and what a bot wrote (its stderr, the words its fault quotes, the lines that bring
    the fault back) only where `may_see` allows: another student reads the fault's reason alone. `named`:
    a bot's folder as its author has it, for the reproduce command (bots.run_command). None if there is no
    such game."""
    path = folder / STORE_FILE
    if not path.is_file():
        return None
    try:
        store = Store(path, create=False)
    except StoreError:
        return None
    try:
        row = queries.game_record(store, game_id)
        if row is None:
            return None
        record = GameRecord.from_dict(row)
        shown = _as_run(folder, store, record, row, may_see, named)
    finally:
        store.close()
    return replayed(record, game_id, may_see, row["finished_at"], shown, analysed(folder, record))


def analysed_rows(folder: Path, name: str) -> tuple[tuple[str, ...], ...] | None:
    """Bot `name`'s figures over the tournament's analysed games (report/mistakes.py), read now: an analysis
    asked for after the ladder settled shows on its bot page at once, not at the next drawing of the
    pages. None where they cannot be read now (the page keeps the drawn ones)."""
    path = folder / STORE_FILE
    if not path.is_file():
        return None
    try:
        with Store(path, create=False) as store:
            return mistakes.rows_for(name, mistakes.tally(mistakes.analysed_games(store)))
    except (StoreError, AnalysesError, sqlite3.Error):
        return None


def analysed(folder: Path, record: GameRecord) -> dict[str, Any] | None:
    """The game's analysis kept beside the store (analyses.sqlite: `arena analyse`, or asked for on its
    page, arena/server/analyses.py) as the report's viewer draws it; None where it has none."""
    try:
        kept = read_only(folder)
        if kept is None:
            return None
        with kept:
            found = kept.get(game_key(parse_rules(record.rules).spec, record.plies))
    except (AnalysesError, sqlite3.Error):  # being written by the worker, or damaged: shown as none yet
        return None
    return None if found is None else marked.encode(record, found)


def _as_run(
    folder: Path,
    store: Store,
    record: GameRecord,
    row: dict[str, Any],
    may_see: Callable[[str], bool],
    named: Named | None,
) -> Replay | None:
    """The game replayed with its fault's lines as the referee sent them (the tournament's clock) and the
    command that feeds them to the bot where its author has it, not the server's copy; None where there
    is no fault, or no one reading the page may see its lines."""
    bot = record.faulty
    if not bot or named is None or not may_see(bot):
        return None
    if kgp_ranked.is_agent(bot):  # a remote agent was sent the game over its connection (kgp_ranked.py)
        return unpiped(replay(record))
    ident = int(row["south_id"] if bot == record.south else row["north_id"])
    settings = store.settings()
    place = queries.bot_places(store).get(ident)
    folder_named = named(bot, _labels(folder, store).get(ident, ""))
    return replay(
        record,
        settings.clock if settings else None,
        places={bot: place} if place else None,
        named={bot: folder_named} if folder_named is not None else None,
    )


def replayed(
    record: GameRecord,
    game_id: int,
    may_see: Callable[[str], bool],
    at: Any,
    shown: Replay | None = None,
    analysis: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`record` replayed for the game page, whichever store it came from (a tournament's, or a student's
    practice file): `at` is when it was played (a datetime or the store's ISO text); its replay is the
    report's viewer (`viewer`), with what `may_see` allows of the bots' words; `shown`: as `_as_run`
    replayed it; `analysis`: as `analysed` found it, drawn by the viewer."""
    fault = None
    if record.faulty:
        detail = record.told() if may_see(record.faulty) else record.detail
        fault = {"bot": record.faulty, "reason": str(record.reason), "detail": detail}
    viewer = face.Viewer(may_see, back="", run_from=RUN_FROM, titled=True)  # the page's h1 is its title
    return {
        "id": game_id,
        "south": record.south,
        "north": record.north,
        "winner": record.winner,
        "reason": str(record.reason),
        "score": f"{record.south_store}-{record.north_store}",
        "fault": fault,
        "stderr": {name: text for name, text in record.stderr.items() if text and may_see(name)},
        "hidden": sorted(name for name, text in record.stderr.items() if text and not may_see(name)),
        "at": at,
        "analysed": analysis is not None,
        "viewer": face.game(record, game_id, viewer, shown=shown, analysis=analysis),
    }
