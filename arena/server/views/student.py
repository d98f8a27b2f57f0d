"""A student's own page: upload a version, see each version's checklist, pick the one that plays, the
token for `arena submit`; and one version's source. Only their own (access.own_submission)."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from arena.kgp.server import port as kgp
from arena.match.bots import BotError, bot_files
from arena.server import scrimmages
from arena.server.models import Classroom, Member, Status, new_token
from arena.server.people.access import (
    own_practice,
    own_submission,
    sees_final,
    sees_ladder,
    sees_stderr,
    signed_in,
)
from arena.server.standings import ladder
from arena.server.versions.checking import activate, folder_of
from arena.server.versions.uploads import stored
from arena.server.views import mine
from arena.server.views.common import class_dir, in_class
from arena.server.views.nextstep import next_step
from arena.tournament.settings import Settings

SHOWN_BYTES = 200_000  # of one source file on the page


@signed_in
@in_class
def me(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    """Their bot: where it stands and its games first, then the deadline's word, then their versions."""
    chosen = request.GET.get("version", "")
    chosen = chosen if chosen[:1] == "v" and chosen[1:].isdigit() else ""
    where = class_dir()
    versions = list(member.submissions.all()[:50])
    on_ladder = mine.on_ladder(where, member, chosen)
    deadline = mine.deadline(where, classroom, member)
    sees = sees_ladder(member, classroom)
    context = {
        "member": member,
        "classroom": classroom,
        "versions": versions,
        "frozen": classroom.frozen(),
        "server": request.build_absolute_uri("/").rstrip("/"),
        "ladder": on_ladder,
        "chosen": chosen,
        "deadline": deadline,
        "next": next_step(versions, member.active, on_ladder if sees else None, deadline),
        "sees_ladder": sees,
        "passed": member.submissions.filter(status=Status.PASSED)[:50],
        "opponents": [(e, scrimmages.shown(e)) for e in scrimmages.opponents(where, member)],
        "scrimmages": member.scrimmages.select_related("submission")[:20],
        "practice": mine.practice(where, member),
        "agent": mine.agent_on_ladder(where, member),
        "kgp": mine.kgp_address(request.get_host().rsplit(":", 1)[0].strip("[]")),
    }
    return render(request, "classroom/me.html", context)


@require_POST
@signed_in
@in_class
def upload(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    kind, said = stored(request, class_dir(), classroom, member)
    if kind == "error":
        messages.error(request, said)
    else:
        messages.success(request, f"version {said.number} is stored and waits for its check")
    return redirect("me")


@require_POST
@signed_in
@in_class
def choose(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    """Pick which passed version plays (not after the deadline: the frozen one plays the final)."""
    found = own_submission(member, request.POST.get("version", "0") or "0")
    if found.member_id != member.pk:  # a teacher picks from the student's own page, not here
        messages.error(request, "that version is not yours")
    elif classroom.frozen():
        messages.error(request, "the deadline has passed: the frozen version plays the final")
    elif found.status != Status.PASSED:
        messages.error(request, f"version {found.number} has not passed its check, so it cannot play")
    else:
        activate(classroom, member, found)
        messages.success(request, f"version {found.number} now plays on the ladder")
    return redirect("me")


@require_POST
@signed_in
def token(request: HttpRequest, member: Member) -> HttpResponse:
    Member.objects.filter(pk=member.pk).update(token=new_token())
    messages.success(request, "a new token: the old one no longer works")
    return redirect("me")


@signed_in
@in_class
def reference_game(request: HttpRequest, game_id: int, member: Member, classroom: Classroom) -> HttpResponse:
    """A game of the final's against a reference bot, once the results are released (the teacher's
    always): a student's own stderr in it, never another's."""
    if not sees_final(member, classroom):
        text = "the final's results are not released yet"
        return render(request, "classroom/message.html", {"title": "Not now", "text": text}, status=403)
    shown = ladder.game(class_dir().final / "references", game_id, partial(sees_stderr, member), folder_of)
    if shown is None:
        raise Http404("no such game")
    return render(request, "classroom/game.html", {"member": member, "game": shown, "which": "final"})


@signed_in
@in_class
def practice_game(
    request: HttpRequest, slug: str, number: int, member: Member, classroom: Classroom
) -> HttpResponse:
    """A practice game of a student's KGP agent, replayed as a ladder game is: theirs and the teacher's
    only (access.own_practice). `number` is its place in their practice file, from 1."""
    student = own_practice(member, slug)
    played = kgp.practice_played(class_dir(), student.slug)
    if not 1 <= number <= len(played):
        raise Http404("no such game")
    record, at = played[number - 1]
    may_see = partial(sees_stderr, member)
    lines = kgp.practice_replay(
        class_dir(), record, Settings.from_dict(settings.ARENA_SETTINGS), may_see, folder_of
    )
    shown = ladder.replayed(record, number, may_see, at, lines)
    return render(request, "classroom/game.html", {"member": member, "game": shown, "which": "practice"})


@signed_in
def version(request: HttpRequest, number: int, member: Member) -> HttpResponse:
    """One version's checklist (its stderr and faults among it)."""
    found = own_submission(member, number)
    games = Settings.from_dict(settings.ARENA_SETTINGS)
    memory = {"mb": games.memory_mb, "most": games.max_memory_mb or games.memory_mb}
    return render(request, "classroom/version.html", {"member": member, "version": found, "memory": memory})


@signed_in
def source(request: HttpRequest, number: int, member: Member) -> HttpResponse:
    """One version's files as stored (and built), as text."""
    found = own_submission(member, number)
    folder = class_dir().version(found.member.slug, found.number)
    files: list[dict[str, Any]] = []
    try:
        for info, f in bot_files(folder, strict=False):
            data = f.read(SHOWN_BYTES + 1)
            text = data[:SHOWN_BYTES].decode("utf-8", errors="replace") if b"\0" not in data else None
            files.append({"name": info.rel.partition("/")[2], "text": text, "cut": len(data) > SHOWN_BYTES})
    except BotError:
        files = []
    return render(request, "classroom/source.html", {"member": member, "version": found, "files": files})
