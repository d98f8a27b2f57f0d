"""A student's own view of the class: where their bot stands on the ladder (its place with the range and
the odds the standings computed, its record against each classmate and reference, its latest games, by
version), and what the deadline means for them: the version frozen, the final being played, and once the
teacher releases it their place and their pass or fail by the gradebook's rule. Read from the files the
worker writes (ladder.py, final.py), never by rating anything here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from arena.kgp.server import port as kgp
from arena.kgp.server import ranked as kgp_ranked
from arena.match.record import GameRecord
from arena.server.classdir import REFERENCES, ClassDir
from arena.server.models import Classroom, FinalState, Member
from arena.server.people.access import sees_final
from arena.server.standings import field, final, gradebook, ladder
from arena.stats.ratings import elo_text, one_sided

ODDS_SHOWN = 3  # the likeliest places listed
PRACTICE_SHOWN = 30  # of a student's KGP practice games, the latest
LETTER = {"won": "W", "draw": "D", "lost": "L"}  # a result's badge (arena.css .res) from the reader's side


@dataclass(frozen=True, slots=True)
class Standing:
    """A bot's row of the ladder as its author reads it."""

    place: str
    elo: str  # '1620', or the bound where its games bound it on one side only ('≤ 1180')
    interval: str  # '95% between 1540 and 1700', or why only a bound is shown
    odds: tuple[tuple[int, int], ...]  # (place, percent), likeliest first
    games: int
    record: str  # W-D-L
    of: int = 0  # the bots on the ladder


@dataclass(frozen=True, slots=True)
class Ladder:
    standing: Standing | None
    against: tuple[tuple[str, str, bool], ...]  # (opponent, W-D-L, a reference bot)
    games: tuple[dict[str, Any], ...]  # newest first, only the chosen version's when one is chosen
    versions: tuple[str, ...]  # the versions that played among the listed games ('v3'), newest first


@dataclass(frozen=True, slots=True)
class Deadline:
    """Where the class stands with the deadline, for one student: `phase` is 'open', 'closed' (frozen, the
    final about to start), 'final' (being played), 'played' (results not released) or 'released'."""

    phase: str
    frozen_version: int | None
    final_at: datetime | None
    result: dict[str, Any] | None  # the gradebook's row, once released


def _whole(value: Any) -> str:
    return "" if value is None or value == "" else str(round(float(value)))


def elo_words(row: dict[str, Any]) -> tuple[str, str]:
    """(the Elo as shown, what its interval says) of a row of the standings or the gradebook: where the
    bot's games bound it on one side only, that bound, in the words of the ladder's table (`elo_text`)."""
    lo, hi = _whole(row.get("elo_lo")), _whole(row.get("elo_hi"))
    score = row.get("score_pct")
    pct = None if score in (None, "") else float(score)
    side = one_sided(pct)
    if pct is not None and side and lo and hi:
        low, high = float(row["elo_lo"]), float(row["elo_hi"])
        why = {"below": "lost every game, so its games bound it from above",
               "above": "won every game, so its games bound it from below"}[side]  # fmt: skip
        return elo_text((low + high) / 2, (high - low) / 2, pct), f"95% sure; it {why} only"
    return _whole(row.get("elo")), f"95% between {lo} and {hi}"


def standing(row: dict[str, Any], of: int = 0) -> Standing:
    odds = sorted(enumerate(row.get("rank_odds") or [], start=1), key=lambda p: -p[1])[:ODDS_SHOWN]
    elo, interval = elo_words(row)
    return Standing(
        place=str(row.get("place", "")),
        elo=elo,
        interval=interval,
        odds=tuple((place, round(100 * p)) for place, p in odds if p > 0),
        games=int(row.get("games", 0)),
        record=f"{row.get('wins', 0)}-{row.get('draws', 0)}-{row.get('losses', 0)}",
        of=of,
    )


def on_ladder(where: ClassDir, member: Member, version: str = "", bot: str = "") -> Ladder:
    """The member's bot (or their `bot`: their remote agent's name) on the live ladder; `version` ('v3')
    keeps only that version's games."""
    name = bot or member.slug
    board = ladder.snapshot(where.ladder)["board"]
    row = next((r for r in board if r["bot"] == name), None)
    mine = ladder.players(where.ladder).get(name, {})
    by_version: dict[str, list[dict[str, Any]]] = mine.get("by_version", {})
    listed = by_version.get(version, []) if version else mine.get("games", [])
    games = [as_theirs(g, name) for g in listed]
    versions = tuple(v for v in by_version if v)
    refs = {f"{name}.py" for name in REFERENCES} | set(REFERENCES)
    against = tuple(
        (opp, "{}-{}-{}".format(*wdl), opp in refs)
        for opp, wdl in sorted(mine.get("against", {}).items(), key=lambda kv: (kv[0] in refs, kv[0]))
    )
    return Ladder(standing(row, len(board)) if row else None, against, tuple(games), versions)


def as_theirs(game: dict[str, Any], slug: str) -> dict[str, Any]:
    """A listed game as bot `slug` played it: its side, its opponent, its outcome, its score its own store
    first ('won 64-8' as north too) and its version."""
    south = game["south"] == slug
    other = game["north"] if south else game["south"]
    winner = game.get("winner")
    outcome = "draw" if winner is None else "won" if winner == slug else "lost"
    versions = game.get("versions", {})
    stores = str(game.get("score", "")).split("-")
    score = "-".join(stores if south else stores[::-1])
    return {**game, "side": "south" if south else "north", "opponent": other, "outcome": outcome,
            "res": LETTER[outcome], "score": score, "my_version": versions.get(slug, "")}  # fmt: skip


def deadline(where: ClassDir, classroom: Classroom, member: Member) -> Deadline:
    """What the deadline means for `member` now."""
    if not classroom.frozen():
        return Deadline("open", None, None, None)
    frozen = field.versions(where.final / "bots").get(member.slug)
    number = final.version_of(frozen)[0] if frozen else None
    if frozen is None and member.active is not None and classroom.final_state == FinalState.NONE:
        number = member.active.number  # not copied yet: the active version is the one that will be
    if classroom.undoable():
        return Deadline("closed", number, classroom.final_at(), None)
    results = final.results(where) if classroom.final_state == FinalState.DONE else None
    if results is None:
        return Deadline("final", number, classroom.final_at(), None)
    if not sees_final(member, classroom):
        return Deadline("played", number, classroom.final_at(), None)
    row = next((r for r in gradebook.rows(classroom, results) if r["bot"] == member.slug), None)
    if row is not None:
        played = ladder.players(where.final / "references").get(member.slug, {}).get("games", [])
        elo, interval = elo_words(row)
        row = {**row, "elo": elo, "interval": interval,
               "vs": [(r, row[f"vs_{r}"]) for r in REFERENCES if row[f"vs_{r}"]],
               "reference_games": [as_theirs(g, member.slug) for g in played]}  # fmt: skip
    return Deadline("released", number, classroom.final_at(), row)


def agent_on_ladder(where: ClassDir, member: Member) -> Ladder | None:
    """The member's remote agent (SLUG.kgp, arena/kgp/server/ranked.py) on the ladder, if it ever played
    there: its place and its games, apart from their uploaded bot's."""
    found = on_ladder(where, member, bot=kgp_ranked.bot_name(member.slug))
    return found if found.standing or found.games else None


def kgp_address(host: str) -> dict[str, str] | None:
    """Where a student's agent connects, as the server's pages name it (`host`: the name the student reached
    the page by): the KGP port and the WebSocket's, if `arena serve` has them (ARENA_KGP), else None."""
    parts = (os.environ.get("ARENA_KGP", "") + "  ").split(" ")
    if not parts[1]:
        return None
    return {"host": host, "port": parts[1], "websocket": f"ws://{host}:{parts[2]}/socket" if parts[2] else ""}


def practice(where: ClassDir, member: Member) -> tuple[dict[str, Any], ...]:
    """The member's latest practice games over the KGP port, newest first: `number` opens its replay."""
    played = list(enumerate(kgp.practice_played(where, member.slug), start=1))[-PRACTICE_SHOWN:]
    return tuple(
        _practised(n, record, at, kgp.agent_name(member.slug)) for n, (record, at) in reversed(played)
    )


def _practised(number: int, record: GameRecord, at: datetime, agent: str) -> dict[str, Any]:
    south = record.south == agent
    winner = record.winner
    outcome = "draw" if winner is None else "won" if winner == agent else "lost"
    return {"number": number, "opponent": record.north if south else record.south,
            "side": "south" if south else "north", "at": at, "outcome": outcome, "res": LETTER[outcome],
            "score": f"{record.south_store}-{record.north_store}" if south else
                     f"{record.north_store}-{record.south_store}", "reason": str(record.reason)}  # fmt: skip
