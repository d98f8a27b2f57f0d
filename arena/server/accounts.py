"""Who is in the class: usernames that make good bot names, the members made from them, and the sign-in
throttle.

A student's bot plays under a slug of their username, so the username obeys arena's name rules from the
start (arena.match.names): ASCII letters, digits, _ and -, not a reference bot's name, and not one that
looks like a member's already (`rnybot` beside `mybot`); a name arena would refuse never gets an account.

The throttle is our own, in the database (so it holds across gunicorn's worker processes and restarts):
after THROTTLE failures for one username, or THROTTLE_ADDRESS from one address, within WINDOW, sign-in
waits until the oldest of them is WINDOW old. A success does not erase failures: they age out.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from arena.match import names
from arena.server.classdir import REFERENCES
from arena.server.models import Member, Role, SignInFailure

USERNAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,29}")
RESERVED = {*REFERENCES, "human", "alphabeta", "solver"}  # arena's own bots and `arena play`'s person
THROTTLE = 5
THROTTLE_ADDRESS = 30
WINDOW = timedelta(minutes=5)


class NameTaken(ValueError):
    """A username that cannot be a bot's name here; the message says why, in one line."""


def slug_for(username: str) -> str:
    """The bot's name of a new member, or NameTaken."""
    if not USERNAME.fullmatch(username):
        raise NameTaken(
            "a username is 2 to 30 letters, digits, _ or -, starting with a letter (it names your bot)"
        )
    slug = username.lower()
    taken = list(Member.objects.values_list("slug", flat=True)) + sorted(RESERVED)
    for other in taken:
        if names.key(other) == names.key(slug):
            raise NameTaken(f"the name {username!r} is taken")
        if names.skeleton(other) == names.skeleton(slug):
            raise NameTaken(f"the name {username!r} looks like {other!r}, which is taken: choose another")
    return slug


@transaction.atomic
def add_member(username: str, password: str, role: str = Role.STUDENT) -> Member:
    """A new member with a hashed password (NameTaken for a name that cannot be theirs)."""
    slug = slug_for(username)
    if User.objects.filter(username__iexact=username).exists():
        raise NameTaken(f"the name {username!r} is taken")
    teacher = role == Role.TEACHER
    user = User.objects.create_user(username, password=password, is_staff=teacher, is_superuser=teacher)
    return Member.objects.create(user=user, role=role, slug=slug)


def make_teacher(member: Member) -> None:
    member.role = Role.TEACHER
    member.save(update_fields=["role"])
    User.objects.filter(pk=member.user_id).update(is_staff=True, is_superuser=True)


def wait_seconds(username: str, address: str) -> int:
    """How long sign-in must wait for this username or address (0: it may try now)."""
    since = timezone.now() - WINDOW
    recent = SignInFailure.objects.filter(at__gte=since)
    waits = []
    for query, limit in (
        (recent.filter(username=username.lower()), THROTTLE),
        (recent.filter(address=address), THROTTLE_ADDRESS),
    ):
        times = list(query.order_by("-at").values_list("at", flat=True)[:limit])
        if len(times) >= limit:
            waits.append((times[-1] + WINDOW - timezone.now()).total_seconds())
    return max(0, int(max(waits, default=0)) + 1) if waits else 0


def failed(username: str, address: str) -> None:
    SignInFailure.objects.create(username=username.lower()[:150], address=address[:64])
    SignInFailure.objects.filter(at__lt=timezone.now() - 4 * WINDOW).delete()  # old ones no longer count
