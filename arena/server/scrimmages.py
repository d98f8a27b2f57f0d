"""Scrimmages: a few unranked games a student asks for between one of their passed versions and any bot
on the ladder. Each is an arena tournament of its own (CLASS_DIR/scrimmages/ID: its two bots copied in,
then one round, a game from each side), played in the sandbox by the scrimmages worker as the ladder's
games are; nothing of it reaches the ladder's store or the final's. A student asks at most the class's
daily number; the opponent's stderr stays its author's (access.sees_stderr), as on the ladder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction

from arena.api import Tournament
from arena.match.bots import BotError
from arena.server import queue
from arena.server.classdir import ClassDir
from arena.server.models import Classroom, Member, Progress, Scrimmage, Status, Submission
from arena.server.standings import field, ladder
from arena.store import queries
from arena.tournament.settings import Settings

ROUNDS = 1  # a game from each side


class Refused(ValueError):
    """Why a scrimmage cannot be asked for, in one line for the student."""


def opponents(where: ClassDir, member: Member) -> list[str]:
    """The bots of the ladder a member may ask to play: every entry of its field but their own."""
    return sorted(name for name in field.versions(where.bots) if name != member.slug)


def shown(entry: str) -> str:
    """An entry of the field as the ladder names its bot (greedy.py plays as greedy)."""
    return entry.removesuffix(".py")


def ask(
    where: ClassDir, classroom: Classroom, member: Member, version: Submission, opponent: str
) -> Scrimmage:
    """Queue a scrimmage; Refused with the reason when it may not be played."""
    if classroom.scrimmages_per_day == 0:
        raise Refused("the teacher has turned scrimmages off for this class")
    if classroom.frozen():
        raise Refused("the deadline has passed: no more scrimmages, the final is the last word")
    if version.member_id != member.pk or version.status != Status.PASSED:
        raise Refused(f"version {version.number} has not passed its check, so it cannot play")
    if opponent not in opponents(where, member):
        raise Refused(f"{shown(opponent)!r} is not a bot on the ladder now")
    with transaction.atomic():
        limit = classroom.scrimmages_per_day
        if why := queue.over_the_day(Scrimmage, member, limit, "scrimmage", "scrimmages"):
            raise Refused(why)
        return Scrimmage.objects.create(member=member, submission=version, opponent=opponent)


def claim_next() -> Scrimmage | None:
    """The oldest queued scrimmage, marked as being played."""
    return queue.claim_oldest(Scrimmage, Progress.QUEUED, Progress.PLAYING, "member", "submission")


def requeue_interrupted() -> None:
    """Scrimmages a killed worker was playing are played again from the start."""
    queue.requeue(Scrimmage, Progress.PLAYING, Progress.QUEUED)


def folder(where: ClassDir, scrimmage: Scrimmage) -> Path:
    return where.scrimmages / str(scrimmage.pk)


def play(where: ClassDir, scrimmage: Scrimmage, settings: Settings, **run: Any) -> Scrimmage:
    """Play one scrimmage from a fresh copy of its two bots; its status and a note say how it went."""
    home = folder(where, scrimmage)
    member, version = scrimmage.member, scrimmage.submission
    bots = home / "bots"
    # the opponent's version as the ladder has it now ('v3 #17'; 'reference'), kept with the games: the
    # reproduce command of its fault names the version that played, not whichever is active when read
    playing = field.versions(where.bots).get(scrimmage.opponent, "opponent")
    try:
        field.sync(bots, {
            member.slug: (f"v{version.number} #{version.pk}", where.version(member.slug, version.number)),
            scrimmage.opponent: (playing, where.bots / scrimmage.opponent),
        })  # fmt: skip
        with Tournament(home / "games", settings) as cup:
            result = cup.run(bots, ROUNDS, **run)
            digests = {name: digest for _, name, digest in queries.bot_versions(cup.store)}
            ladder.remember_versions(cup.folder, digests, field.versions(bots))
            ladder.write_snapshot(cup, "scrimmage", True, pages="")
        if result.interrupted:
            raise KeyboardInterrupt
        scrimmage.status, scrimmage.note = Progress.DONE, ""
    except (BotError, OSError, ValueError) as e:
        text = str(e).replace(str(where.root), "the class")
        scrimmage.status, scrimmage.note = Progress.FAILED, f"could not be played: {text}"
    scrimmage.save(update_fields=["status", "note"])
    return scrimmage


def games(where: ClassDir, scrimmage: Scrimmage) -> list[dict[str, Any]]:
    """The scrimmage's games, as the ladder lists its own (oldest first)."""
    listed: list[dict[str, Any]] = ladder.snapshot(folder(where, scrimmage) / "games")["recent"]
    return listed[::-1]
