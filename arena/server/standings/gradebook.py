"""The gradebook: one CSV row per student of the class, from the final's results. A student without a
frozen version is listed too (no version, fails the rule), so the teacher's sheet has the whole class; one
the teacher removed is not (unless a version of theirs played the final), since they left it. Where the
teacher ranked remote agents, the final's places count them among the players, and a student's row adds
their agent's place and Elo; the pass rule is the uploaded version's alone.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from arena.kgp.server import ranked as kgp_ranked
from arena.server.classdir import REFERENCES
from arena.server.models import Classroom, Member, Role
from arena.server.standings.final import version_of

COLUMNS = [
    "student", "bot", "version", "place", "elo", "elo_lo", "elo_hi", "games", "score_pct",
    *(f"vs_{r}" for r in REFERENCES), "rule", "pass", "agent_place", "agent_elo",
]  # fmt: skip


def rows(classroom: Classroom, results: dict[str, Any]) -> list[dict[str, Any]]:
    """The gradebook's rows, best placed first, then the students who had no version in the final."""
    board = {row["bot"]: row for row in results.get("board", [])}
    frozen: dict[str, str] = results.get("frozen", {})
    against: dict[str, dict[str, list[int]]] = results.get("references", {})
    students = Member.objects.filter(role=Role.STUDENT).select_related("user").order_by("slug")
    out = []
    for member in students:
        if not member.user.is_active and member.slug not in frozen:
            continue  # removed before the deadline: not a student of the class to grade
        row = board.get(member.slug, {})
        agent = board.get(member.slug + kgp_ranked.SUFFIX, {})  # their agent, where the final ranked it
        number, _ = version_of(frozen.get(member.slug, ""))
        games = against.get(member.slug, {})
        wins = games.get(classroom.rule_reference, [0, 0, 0])[0]
        out.append(
            {
                "student": member.user.username,
                "bot": member.slug,
                "version": number if number is not None else "",
                "place": row.get("place", ""),
                "elo": row.get("elo", ""),
                "elo_lo": row.get("elo_lo", ""),
                "elo_hi": row.get("elo_hi", ""),
                "games": row.get("games", 0),
                "score_pct": row.get("score_pct", ""),
                **{f"vs_{r}": "{}-{}-{}".format(*games[r]) if r in games else "" for r in REFERENCES},
                "rule": classroom.rule_text(),
                "pass": "pass" if number is not None and wins >= classroom.rule_wins else "fail",
                "agent_place": agent.get("place", ""),
                "agent_elo": agent.get("elo", ""),
            }
        )
    placed = [r for r in out if r["place"] not in ("", "-")]
    placed.sort(key=lambda r: (int(str(r["place"]).split("-")[0]), r["bot"]))
    return placed + [r for r in out if r not in placed]


def csv_text(classroom: Classroom, results: dict[str, Any]) -> str:
    """The gradebook as CSV text (W-D-L against each reference bot)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows(classroom, results):
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return out.getvalue()


def _cell(value: Any) -> Any:
    """A cell a spreadsheet will not run: text starting = + - @ is quoted with a leading '."""
    if isinstance(value, str) and value[:1] in ("=", "+", "@", "\t", "\r"):
        return "'" + value
    return value
