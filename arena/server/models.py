"""What the server keeps in its database: the class (one per server), its members, their submissions, and
failed sign-ins for the throttle. Games are not here: they are the arena tournaments' own stores in the
class folder, read by ladder.py.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

CODE_LETTERS = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # none read as another from a projector: no I, L, O, 0, 1


def new_code() -> str:
    """A join code to type from a projector: 12 of CODE_LETTERS (59 bits) in groups of four."""
    letters = "".join(secrets.choice(CODE_LETTERS) for _ in range(12))
    return "-".join(letters[k : k + 4] for k in range(0, 12, 4))


def same_code(typed: str, code: str) -> bool:
    """Whether `typed` is the join code `code` as a person types it: any case, spaces or dashes anywhere."""

    def plain(text: str) -> str:
        return "".join(text.split()).replace("-", "").upper()

    return hmac.compare_digest(plain(typed).encode(), plain(code).encode())


def new_token() -> str:
    return secrets.token_urlsafe(24)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Visibility(models.TextChoices):
    OPEN = "open", "open: students see the ladder live"
    HIDDEN = "hidden", "hidden from students"
    RELEASED = "released", "released: students see the final results"


UNDO = timedelta(seconds=60)  # by default a freeze may be undone until the final starts, this long after


# The ladder's line in the undo window: the final's start is shown beside it, in the reader's zone.
STOPPED = "stopped at the deadline: the final starts when the freeze can no longer be undone"


class FinalState(models.TextChoices):
    NONE = "", "not started"
    RUNNING = "running", "playing"
    DONE = "done", "done"


class Classroom(models.Model):
    """The one class this server holds: its join code, what students may see, the deadline and limits,
    the teacher's pass rule, and `generation`, which goes up whenever the ladder's field changes (the
    ladder worker watches it to start the field's next run at once)."""

    name = models.CharField(max_length=100)
    join_code = models.CharField(max_length=32, unique=True, default=new_code)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.OPEN)
    freeze_at = models.DateTimeField(null=True, blank=True)
    final_state = models.CharField(max_length=10, choices=FinalState.choices, default="", blank=True)
    final_note = models.TextField(blank=True, default="")
    upload_kib = models.PositiveIntegerField(default=1024)
    per_day = models.PositiveIntegerField(default=20)
    # Versions kept per student: an upload beyond it removes the oldest (never the active one, nor one
    # waiting for its check). With the build's cap (arena.match.build.BUILD_BYTES) it bounds a student's disk.
    kept_versions = models.PositiveIntegerField(default=10)
    scrimmages_per_day = models.PositiveIntegerField(default=10)  # a student's unranked matches a day
    analyses_per_day = models.PositiveIntegerField(default=10)  # a student's asked-for game analyses a day
    undo_seconds = models.PositiveIntegerField(default=int(UNDO.total_seconds()))  # the freeze's undo window
    rule_reference = models.CharField(max_length=64, default="greedy")
    rule_wins = models.PositiveIntegerField(default=8)
    rule_games = models.PositiveIntegerField(default=10)
    references = models.JSONField(default=list, blank=True)  # reference bots the teacher added to the ladder
    # The KGP port (arena/server/kgp.py), off by default: whether a guest may connect without a token to play
    # practice games (never ranked).
    kgp_guests = models.BooleanField(default=False)
    # Whether students' connected agents play on the ranked ladder too, and in the final's ranking those
    # connected when it begins (arena/server/kgp_ranked.py).
    kgp_ranked = models.BooleanField(default=False)
    # What a ranked agent's position without a move by `stop` costs it on the ladder and in the final
    # (bot.toml `no_move`'s words, arena/match/bots.py): "random", a random legal move as the course server
    # plays, or "forfeit", the game lost on time. Practice games always play the course server's way.
    kgp_no_move = models.CharField(max_length=8, default="random")
    generation = models.PositiveBigIntegerField(default=0)
    ladder_note = models.TextField(blank=True, default="")  # the ladder worker's last word
    created = models.DateTimeField(default=timezone.now)

    @classmethod
    def current(cls) -> Classroom | None:
        return cls.objects.order_by("id").first()

    def frozen(self, now: datetime | None = None) -> bool:
        return self.freeze_at is not None and (now or timezone.now()) >= self.freeze_at

    def final_at(self) -> datetime | None:
        """When the final starts: the undo window after the deadline, so that a freeze can be undone until
        then (a minute by default; the teacher sets it)."""
        return None if self.freeze_at is None else self.freeze_at + timedelta(seconds=self.undo_seconds)

    def undoable(self, now: datetime | None = None) -> bool:
        """Frozen, and the final not started: the teacher may still undo the freeze."""
        start = self.final_at()
        return (
            self.frozen(now)
            and start is not None
            and (now or timezone.now()) < start
            and self.final_state == FinalState.NONE
        )

    def ladder_line(self) -> str:
        """The ladder's state as the class page says it: the deadline's word from the moment of the freeze
        (the worker notices it a few seconds later), else the worker's last word."""
        if self.undoable():
            return STOPPED
        return self.ladder_note or "not started"

    def bump(self) -> None:
        """Tell the ladder its field changed."""
        Classroom.objects.filter(pk=self.pk).update(generation=models.F("generation") + 1)

    def rule_text(self) -> str:
        return f"wins at least {self.rule_wins} of {self.rule_games} against {self.rule_reference}"


class Role(models.TextChoices):
    STUDENT = "student"
    TEACHER = "teacher"


class Member(models.Model):
    """A person in the class: their role, their bot's name (a slug of the username, arena's name rules
    applied), the token `arena submit` signs with, and the version of their bot that plays."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="member")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.STUDENT)
    slug = models.CharField(max_length=64, unique=True)
    token = models.CharField(max_length=64, unique=True, default=new_token)
    active = models.ForeignKey(
        "Submission", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    @property
    def teacher(self) -> bool:
        return self.role == Role.TEACHER

    def __str__(self) -> str:
        return self.user.username


class Status(models.TextChoices):
    QUEUED = "queued", "waiting for its check"
    CHECKING = "checking", "being built and checked"
    PASSED = "passed", "passed its check"
    FAILED = "failed", "failed its check"


class Submission(models.Model):
    """One version of a student's bot: stored in the class folder as uploaded, then checked in the
    background; its checklist is arena check's report."""

    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="submissions")
    number = models.PositiveIntegerField()
    created = models.DateTimeField(default=timezone.now)
    filename = models.CharField(max_length=200)
    # The folder a zip held (crashbot/ in bob.zip), for the reproduce lines: the student's own folder's
    # name, which the zip's file name need not be; '' for a single file or a zip of a folder's contents.
    folder = models.CharField(max_length=255, blank=True, default="")
    size = models.PositiveIntegerField()
    digest = models.CharField(max_length=32)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    verdict = models.TextField(blank=True, default="")
    checklist = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["member", "number"], name="one_number_per_version")]
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.member.slug} v{self.number}"


class Progress(models.TextChoices):
    QUEUED = "queued", "waiting to be played"
    PLAYING = "playing", "being played"
    DONE = "done", "played"
    FAILED = "failed", "could not be played"


class Scrimmage(models.Model):
    """Unranked games a student asked for between one of their passed versions and a bot of the ladder,
    played by the scrimmages worker in a tournament of their own (CLASS_DIR/scrimmages/ID): they never
    count for the ladder or the final."""

    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="scrimmages")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    opponent = models.CharField(max_length=100)  # the bot's entry in the ladder's field (bots/)
    created = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Progress.choices, default=Progress.QUEUED)
    note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]


class Analysing(models.TextChoices):
    QUEUED = "queued", "queued for analysis"
    RUNNING = "running", "being analysed"
    DONE = "done", "analysed"
    FAILED = "failed", "could not be analysed"


class AnalysisAsked(models.Model):
    """A game of the ladder or the final whose analysis (arena/game/analysis.py) a member asked for, done by
    the scrimmages worker after the scrimmages queued before it (arena/server/analyses.py); the analysis
    itself is kept in the tournament's analyses.sqlite, beside its store, as `arena analyse` keeps it."""

    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="analyses_asked")
    which = models.CharField(max_length=10)  # "ladder" or "final"
    game = models.PositiveIntegerField()  # the game's id in that tournament's store
    created = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Analysing.choices, default=Analysing.QUEUED)
    note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]


class TeacherLink(models.Model):
    """The teacher's one-time first sign-in link, as `arena serve` prints it: kept as a hash only."""

    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    used = models.BooleanField(default=False)
