"""Who is in the class: usernames that make good bot names, and the members made from them.

A student's bot plays under a slug of their username, so the username obeys arena's name rules from the
start (arena.match.names): ASCII letters, digits, _ and -, not a reference bot's name, and not one that
looks like a member's already (`rnybot` beside `mybot`); a name arena would refuse never gets an account.
"""

from __future__ import annotations

import re
import secrets

from django.contrib.auth.models import User
from django.db import transaction

from arena.match import names
from arena.server.classdir import REFERENCES
from arena.server.models import Member, Role

USERNAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,29}")
RESERVED = {*REFERENCES, "human", "alphabeta", "solver"}  # arena's own bots and `arena play`'s person


class NameTaken(ValueError):
    """A username that cannot be a bot's name here; the message says why, in one line."""


def slug_for(username: str) -> str:
    """The bot's name of a new member, or NameTaken."""
    if not username.isascii():
        other = next(c for c in username if not c.isascii())
        raise NameTaken(
            f"only ASCII letters (a-z, A-Z) count in a username, and {other!r} is not one: "
            "it names your bot on the ladder, where letters of other scripts look like ours"
        )
    if not USERNAME.fullmatch(username):
        raise NameTaken(
            "a username is 2 to 30 letters, digits, _ or -, starting with a letter (it names your bot)"
        )
    slug = username.lower()
    taken = [*Member.objects.values_list("slug", "user__username"), *((r, r) for r in sorted(RESERVED))]
    mine = _looks(username)
    for other, shown in taken:
        if names.key(other) == names.key(slug):
            raise NameTaken(f"the name {username!r} is taken")
        if mine & (_looks(shown) | _looks(other)):
            raise NameTaken(f"the name {username!r} looks like {shown!r}, which is taken: choose another")
    return slug


def _looks(name: str) -> set[str]:
    """What a name may be read as: the TR39 skeletons (arena.match.names) of the name as typed, in lower,
    upper and title case. `aIice` meets `alice` as typed (I and l are one skeleton), `AIice` meets it as
    `Alice`, `b0b` meets `bob` in upper case (0 and O are), `rnary` meets `mary` in every case."""
    return {names.skeleton(form) for form in (name, name.lower(), name.upper(), name.capitalize())}


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
    """A teacher of the class (Django's admin too); a student's bot leaves the ladder."""
    member.role = Role.TEACHER
    member.save(update_fields=["role"])
    User.objects.filter(pk=member.user_id).update(is_staff=True, is_superuser=True)
    Member.objects.filter(pk=member.pk).update(active=None)


def new_password(member: Member) -> str:
    """Reset the member's password to a new random one, returned to be shown once."""
    password = secrets.token_urlsafe(9)
    member.user.set_password(password)
    member.user.save(update_fields=["password"])
    return password


def remove(member: Member) -> None:
    """The member can no longer sign in and their bot leaves the ladder; their versions are kept."""
    User.objects.filter(pk=member.user_id).update(is_active=False)
    Member.objects.filter(pk=member.pk).update(active=None)
