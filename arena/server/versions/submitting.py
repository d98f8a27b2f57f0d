"""A student's upload becomes a version: refused in one line (after the freeze, over the day's count or
the size, not a bot), or unpacked into the class folder and queued for its check; the student's oldest
versions beyond the class's count are removed.

Nothing is lost on the way: the files are unpacked beside their final place and renamed into it inside
the transaction that numbers the version, so a version in the database always has its folder; a folder
without a version (a crash between the two) is an orphan that the next upload of that number replaces.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import IO

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from arena.server import queue
from arena.server.classdir import ClassDir
from arena.server.models import Classroom, Member, Status, Submission
from arena.server.versions.unpack import Caps, Rejected, unpack, zip_folder


def caps(classroom: Classroom) -> Caps:
    """The teacher's size limit for one upload; unpacked, a bot may be 32 times that (at least 32 MiB)."""
    upload = classroom.upload_kib * 1024
    return Caps(upload_bytes=upload, total_bytes=max(32 << 20, 32 * upload), files=500)


def may_submit(classroom: Classroom, member: Member) -> None:
    """Rejected if `member` may not submit now: after the freeze, or past the day's count."""
    if classroom.frozen():
        raise Rejected("submissions are closed: the deadline has passed; your frozen version plays the final")
    today = member.submissions.filter(created__gte=timezone.now() - queue.DAY).count()
    if today >= classroom.per_day:
        raise Rejected(
            f"you have submitted {today} versions in the last 24 hours, the most this class takes; "
            "try again later (your versions so far are kept)"
        )


def submit(
    where: ClassDir, classroom: Classroom, member: Member, name: str, data: IO[bytes], size: int
) -> Submission:
    """Store the upload as `member`'s next version, queued for its check; Rejected (one line) if it is
    refused, with nothing stored."""
    may_submit(classroom, member)
    home = where.submissions / member.slug
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)  # the server's alone (classdir.py); the bot's own folder inside keeps its modes
    scratch = Path(tempfile.mkdtemp(prefix=".upload-", dir=home))
    try:
        folder = zip_folder(name, data)
        bot = unpack(name, data, size, scratch / member.slug, caps(classroom))
        with transaction.atomic():
            locked = Member.objects.select_for_update().get(pk=member.pk)
            number = (locked.submissions.aggregate(n=Max("number"))["n"] or 0) + 1
            submission = Submission.objects.create(
                member=locked,
                number=number,
                filename=_shown(name),
                folder=folder,
                size=size,
                digest=bot.digest,
            )
            final = where.version(member.slug, number).parent
            if final.exists():  # an orphan of a crash between a rename and its commit
                shutil.rmtree(final)
            scratch.chmod(0o700)
            scratch.rename(final)
        prune(where, member, classroom.kept_versions)
        return submission
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def prune(where: ClassDir, member: Member, keep: int) -> list[int]:
    """Remove `member`'s versions beyond the newest `keep` (their rows and folders), but the active one and
    any waiting for or in its check: the numbers removed. The disk a student may fill stays bounded."""
    with transaction.atomic():
        locked = Member.objects.select_for_update().get(pk=member.pk)
        old = locked.submissions.order_by("-number")[keep:]
        gone = [
            s for s in old if s.pk != locked.active_id and s.status not in (Status.QUEUED, Status.CHECKING)
        ]
        Submission.objects.filter(pk__in=[s.pk for s in gone]).delete()
    for s in gone:  # after the commit: a version in the database always has its folder
        shutil.rmtree(where.version(member.slug, s.number).parent, ignore_errors=True)
    return [s.number for s in gone]


def _shown(name: str) -> str:
    """The uploaded file's name as kept for the student's list (its last part, at most 200 characters)."""
    return name.replace("\\", "/").rsplit("/", 1)[-1][:200] or "upload"


def requeue_interrupted() -> int:
    """Checks cut off by a crash or a kill go back to the queue (at the worker's start)."""
    return queue.requeue(Submission, Status.CHECKING, Status.QUEUED)
