"""Who sees what, decided here and nowhere else: every view asks these functions, so the rules read in
one place and the authorization tests (tests/test_server_access.py) hold them to it.

- anyone: the sign-in, the join form, the teacher's one-time link;
- a student: the ladder, every bot's page and every game's replay while the ladder is open (or its results
  released), a fault's reason in them but never the words another's bot said in it, and
  their own versions: source, checklist, stderr and faults; never another student's source or stderr,
  whatever the address asks for (a version or a game's stderr is looked up, then refused unless it is
  theirs: a guessed id gets the same 404 as a missing one), and their own scrimmages, whose replays carry
  the opponent's stderr for its author and the teacher only, and their own practice games over the KGP
  port (own_practice); an analysis of a game of their own bot's, asked for (may_analyse);
- the teacher: everything.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from arena.server.models import Classroom, Member, Scrimmage, Submission, Visibility
from arena.server.people import throttle

View = Callable[..., HttpResponse]


def member_of(request: HttpRequest) -> Member | None:
    """The signed-in member (None: anonymous, or an account that has no place in the class)."""
    user = request.user
    if not user.is_authenticated or not user.is_active:
        return None
    return Member.objects.filter(user=user).select_related("active").first()


def member_of_token(given: str) -> Member | None:
    """The active member whose token `given` is, or None (compared in constant time): `arena submit`'s
    way in and the KGP port's."""
    found = Member.objects.filter(token=given, user__is_active=True).select_related("user").first()
    return found if found is not None and hmac.compare_digest(found.token, given) else None


def member_by_token(request: HttpRequest) -> Member | None:
    """The member whose token the request carries ('Authorization: Bearer TOKEN', as `arena submit` sends
    it), if any and active; tries are throttled as sign-ins are (throttle.py)."""
    if not throttle.token_allowed(request):
        request.axes_locked_out = True  # type: ignore[attr-defined]  # axes' middleware answers 429
        return None
    header = str(request.META.get("HTTP_AUTHORIZATION", ""))
    given = header.removeprefix("Bearer ").strip()
    if not given or not header.startswith("Bearer "):
        return None
    found = member_of_token(given)
    if found is None:
        throttle.token_failed(request)
        return None
    return found


def signed_in(view: View) -> View:
    """Members only; anyone else is sent to sign in. The view gets the member as `member`."""

    @wraps(view)
    def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        member = member_of(request)
        if member is None:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, member=member, **kwargs)

    return inner


def teacher_only(view: View) -> View:
    """Teachers only: a student gets 403, anyone else is sent to sign in."""

    @wraps(view)
    def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        member = member_of(request)
        if member is None:
            return redirect_to_login(request.get_full_path())
        if not member.teacher:
            return HttpResponse("this page is the teacher's", status=403, content_type="text/plain")
        return view(request, *args, member=member, **kwargs)

    return inner


def own_submission(member: Member, number: int | str) -> Submission:
    """A version the member may open: theirs, or any for the teacher; 404 otherwise (as for none)."""
    if not str(number).isdigit():
        raise Http404("no such version")
    found = get_object_or_404(Submission.objects.select_related("member__user"), pk=int(number))
    if not member.teacher and found.member_id != member.pk:
        raise Http404("no such version")
    return found


def own_scrimmage(member: Member, ident: int | str) -> Scrimmage:
    """A scrimmage the member may open: one they asked for, or any for the teacher; 404 otherwise."""
    if not str(ident).isdigit():
        raise Http404("no such scrimmage")
    found = get_object_or_404(Scrimmage.objects.select_related("member", "submission"), pk=int(ident))
    if not member.teacher and found.member_id != member.pk:
        raise Http404("no such scrimmage")
    return found


def own_practice(member: Member, slug: str) -> Member:
    """The student whose KGP practice games `slug` names, if the member may open them: their own, or
    anyone's for the teacher; 404 otherwise (as for no such student)."""
    if not member.teacher and slug != member.slug:
        raise Http404("no such game")
    return get_object_or_404(Member, slug=slug)


def sees_ladder(member: Member, classroom: Classroom) -> bool:
    """The live ladder and its games: the teacher always, students unless the teacher hid it."""
    return member.teacher or classroom.visibility != Visibility.HIDDEN


def sees_final(member: Member, classroom: Classroom) -> bool:
    """The final's results and games: the teacher always, students once released."""
    return member.teacher or classroom.visibility == Visibility.RELEASED


def may_analyse(member: Member, south: str, north: str) -> bool:
    """Asking for a game's analysis (analyses.py): the game's two authors and the teacher. `south` and
    `north` are the names its bots played under: a student's is their slug, a reference bot has no author."""
    return member.teacher or member.slug in (south, north)


def sees_stderr(member: Member, bot: str) -> bool:
    """A bot's stderr (and its source): its author's and the teacher's only. `bot` is the name it
    played under, which for a student's bot is their slug."""
    return member.teacher or bot == member.slug
