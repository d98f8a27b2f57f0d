"""A student's scrimmages: asking for one (their passed version against a bot of the ladder), its games,
and their replays. Only their own (access.own_scrimmage); a replay carries the stderr of their own bot
only, never the opponent's (access.sees_stderr)."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from arena.server import scrimmages
from arena.server.models import Classroom, Member
from arena.server.people.access import own_scrimmage, own_submission, sees_stderr, signed_in
from arena.server.standings import ladder
from arena.server.versions.checking import folder_named, folder_of
from arena.server.views.common import class_dir, in_class


@require_POST
@signed_in
@in_class
def ask(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    version = own_submission(member, request.POST.get("version", "0") or "0")
    opponent = request.POST.get("opponent", "")
    try:
        found = scrimmages.ask(class_dir(), classroom, member, version, opponent)
    except scrimmages.Refused as e:
        messages.error(request, str(e))
        return redirect("me")
    messages.success(
        request, f"scrimmage {found.pk}: v{version.number} against {scrimmages.shown(opponent)} is queued"
    )
    return redirect("scrimmage", ident=found.pk)


@signed_in
def show(request: HttpRequest, ident: int, member: Member) -> HttpResponse:
    found = own_scrimmage(member, ident)
    context = {
        "member": member,
        "scrimmage": found,
        "opponent": scrimmages.shown(found.opponent),
        "games": scrimmages.games(class_dir(), found),
    }
    return render(request, "classroom/scrimmage.html", context)


@signed_in
def game(request: HttpRequest, ident: int, game_id: int, member: Member) -> HttpResponse:
    found = own_scrimmage(member, ident)
    folder = scrimmages.folder(class_dir(), found) / "games"

    def named(bot: str, version: str) -> str | None:  # the versions that played, not the active ones
        return folder_named(found.submission) if bot == found.member.slug else folder_of(bot, version)

    shown = ladder.game(folder, game_id, partial(sees_stderr, member), named)
    if shown is None:
        raise Http404("no such game")
    context = {"member": member, "game": shown, "which": "scrimmage"}
    return render(request, "classroom/game.html", context)
