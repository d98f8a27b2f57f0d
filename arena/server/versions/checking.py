"""A queued version built and checked by arena's own `check` (the confinement of `arena run`), its
checklist kept for the student; one that passes becomes the active version (until the student picks
another) and the ladder hears of it.
"""

from __future__ import annotations

import logging

from django.db import transaction

from arena.match.bots import BotError, load_bot
from arena.sandbox.grants import ungranted
from arena.server import queue
from arena.server.classdir import REFERENCES, ClassDir
from arena.server.models import Classroom, Member, Status, Submission
from arena.student.check import ARENA_BOTS, check, reference_bots
from arena.tournament.settings import Settings

log = logging.getLogger("arena")


def claim_next() -> Submission | None:
    """The oldest queued version, marked as being checked (so a second checker would pass it over)."""
    return queue.claim_oldest(Submission, Status.QUEUED, Status.CHECKING, "member")


def run_check(where: ClassDir, submission: Submission, settings: Settings) -> Submission:
    """Check one version and keep its checklist; a pass activates it unless the class is frozen."""
    member = submission.member
    folder = where.version(member.slug, submission.number)
    try:
        bot = load_bot(folder)
        if asked := ungranted(bot.paths, settings.read_only):
            raise BotError(not_readable(asked))
        refs = reference_bots((where.references, ARENA_BOTS))
        report = check(bot, settings, refs, named=folder_named(submission))
        submission.checklist = report.to_dict()
        submission.verdict = report.verdict()
        submission.status = Status.FAILED if report.fails else Status.PASSED
    except Exception as e:  # noqa: BLE001 (one version's failure, whatever it is, never stops the queue)
        if not isinstance(e, BotError | OSError):
            log.exception("checking %s", submission)
        text = str(e).replace(f"{folder}/", "").replace(str(folder), member.slug)
        submission.checklist = {"items": [{"name": "load", "status": "FAIL", "summary": text}]}
        submission.verdict = f"{member.slug}: FAIL: {text}"
        submission.status = Status.FAILED
    # One transaction: a page never shows a version passed but not yet playing (CI's browser test once
    # read the status between the two writes).
    with transaction.atomic():
        submission.save(update_fields=["checklist", "verdict", "status"])
        classroom = Classroom.current()
        if submission.status == Status.PASSED and classroom is not None and not classroom.frozen():
            activate(classroom, member, submission)
    return submission


def folder_named(submission: Submission) -> str:
    """The uploaded bot's folder as its author has it, for the checklist's reproduce lines: the folder the
    zip held (crashbot/, whatever the zip is called), else the zip's name (mybot.zip, a zip of the folder's
    contents) or '' for a single file, which the student runs where it lies (the server wrapped it in a
    folder of its own)."""
    filename = submission.filename
    zipped = filename[:-4] if filename.lower().endswith(".zip") and len(filename) > 4 else ""
    return submission.folder or zipped


def folder_of(bot: str, version: str) -> str | None:
    """A ladder's bot as its author has it, for the command that reproduces its fault in a game (the
    checklist's, folder_named): student `bot`'s version `version` ('v3'), or their active one where the
    game does not say; a reference bot as arena ships it (bots/greedy.py); None for a bot of neither."""
    if bot.endswith(".py") and bot.removesuffix(".py") in REFERENCES:
        return f"bots/{bot}"
    found = None
    if version[:1] == "v" and version[1:].isdigit():
        found = Submission.objects.filter(member__slug=bot, number=int(version[1:])).first()
    if found is None:
        member = Member.objects.filter(slug=bot).select_related("active").first()
        found = member.active if member is not None else None
    return folder_named(found) if found is not None else None


def not_readable(asked: list[str]) -> str:
    """Why a bot whose bot.toml asks to read `asked` cannot play here: arena serve grants no paths (arena
    run's --read-only is the teacher's at a terminal, not a flag of the server)."""
    return (
        f"its bot.toml asks to read {', '.join(asked)}: this class's server lets a bot read its own folder "
        "alone (the teacher cannot grant it more here), so put the files it needs in its folder and remove "
        "paths from its bot.toml"
    )


def activate(classroom: Classroom, member: Member, submission: Submission) -> None:
    """Make `submission` the version of `member`'s bot that plays, and tell the ladder."""
    Member.objects.filter(pk=member.pk).update(active=submission)
    classroom.bump()
