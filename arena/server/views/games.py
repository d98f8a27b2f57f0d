"""The ladder and the final as pages: the leaderboard and latest games (kept current by polling their
JSON), a bot's page and a game's replay, each the report's (arena.report.face), with its analysis or,
for its authors and the teacher, the offer of one (analyses.py). Each asks access.py
whether the viewer may see it now; a replay carries stderr, and a bot page what the bot said in its
faults and the link to its source, only for the viewer's own bot (the teacher's: every bot's)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_POST

from arena.report import face
from arena.report.botpages import Links
from arena.server import analyses
from arena.server.models import Classroom, Member, Submission
from arena.server.people.access import may_analyse, sees_final, sees_ladder, sees_stderr, signed_in
from arena.server.standings import field, final, ladder
from arena.server.versions.checking import folder_of
from arena.server.views import mine
from arena.server.views.common import class_dir, in_class

HIDDEN = "the teacher has hidden the ladder for now"
NOT_YET = "the final's results are not released yet"


def _folder(which: str) -> Path:
    return final.final_folder(class_dir()) if which == "final" else class_dir().ladder


def _allowed(member: Member, classroom: Classroom, which: str) -> str | None:
    """Why `member` may not see the ladder or the final now (None: they may)."""
    if which == "final":
        return None if sees_final(member, classroom) else NOT_YET
    return None if sees_ladder(member, classroom) else HIDDEN


def _not_now(request: HttpRequest, member: Member, classroom: Classroom, which: str) -> HttpResponse | None:
    """The page saying why `member` may not see the ladder or the final now; None if they may."""
    why = _allowed(member, classroom, which)
    if why is None:
        return None
    return render(request, "classroom/message.html", {"title": "Not now", "text": why}, status=403)


def _route(which: str, name: str) -> str:
    """The final's page of a ladder page's route name (game -> final_game)."""
    return f"final_{name}" if which == "final" else name


@signed_in
@in_class
def board(request: HttpRequest, member: Member, classroom: Classroom, which: str = "ladder") -> HttpResponse:
    if refused := _not_now(request, member, classroom, which):
        return refused
    folder = _folder(which)
    context = {
        "member": member,
        "which": which,
        "data": ladder.snapshot(folder),
        "standings": ladder.standings(folder),
    }
    return render(request, "classroom/ladder.html", context)


@gzip_page  # the standings are the report's HTML, a table per pair: a tenth of it compressed
@signed_in
@in_class(json=True)
def board_json(
    request: HttpRequest, member: Member, classroom: Classroom, which: str = "ladder"
) -> HttpResponse:
    why = _allowed(member, classroom, which)
    if why:
        return JsonResponse({"error": why}, status=403)
    folder = _folder(which)
    data = ladder.snapshot(folder)
    data["status"] = classroom.ladder_note
    if request.GET.get("since") != data["updated"]:  # the page's own are older (or it has none)
        data["standings"] = str(ladder.standings(folder))
    return JsonResponse(data)


@signed_in
@in_class
def game(
    request: HttpRequest, game_id: int, member: Member, classroom: Classroom, which: str = "ladder"
) -> HttpResponse:
    if refused := _not_now(request, member, classroom, which):
        return refused
    shown = ladder.game(_folder(which), game_id, partial(sees_stderr, member), folder_of)
    if shown is None:
        raise Http404("no such game")
    context = {"member": member, "game": shown, "which": which}
    if not shown["analysed"] and may_analyse(member, shown["south"], shown["north"]):
        # offered to its authors and the teacher: the request under way, or the button
        context["analysis"] = {
            "asked": analyses.last(which, game_id),
            "to": reverse(_route(which, "game_analyse"), args=[game_id]),
            "per_day": None if member.teacher else classroom.analyses_per_day,
        }
    return render(request, "classroom/game.html", context)


@require_POST
@signed_in
@in_class
def analyse(
    request: HttpRequest, game_id: int, member: Member, classroom: Classroom, which: str = "ladder"
) -> HttpResponse:
    """Ask for the game's analysis (analyses.py); a refusal is said in one line on the game's page."""
    if refused := _not_now(request, member, classroom, which):
        return refused
    try:
        analyses.ask(class_dir(), classroom, member, which, game_id)
    except analyses.Refused as e:
        messages.error(request, str(e))
    else:
        messages.success(request, f"game {game_id} is queued for analysis: its marks appear here when done")
    return redirect(_route(which, "game"), game_id=game_id)


@signed_in
@in_class
def bot(
    request: HttpRequest, name: str, member: Member, classroom: Classroom, which: str = "ladder"
) -> HttpResponse:
    """A bot's page of the report, for every member who may see the standings; what the bot said in its
    faults, and its version's checklist and source, for its author and the teacher."""
    if refused := _not_now(request, member, classroom, which):
        return refused
    folder = _folder(which)
    found = ladder.bot(folder, name)
    if found is None:
        raise Http404("no such bot")
    rows = ladder.analysed_rows(folder, name)  # its analysed games' figures as of now
    page = found["page"] if rows is None else {**found["page"], "analysed": rows}
    game = _route(which, "game")
    links = Links(
        back=reverse(which),
        back_text=f"the {which}",
        game=lambda number: reverse(game, args=[number]),
        games=lambda _: "#bot-games",
        pair=lambda _, opponent: reverse(f"{which}_bot", args=[opponent]),
        reason=lambda _, __: "",
    )
    own = sees_stderr(member, name)
    version = found["version"]  # its class version ('v3'), as the ladder's worker keeps it
    if not version and which == "final":  # the final's field: the versions frozen at the deadline
        version = field.versions(class_dir().final / "bots").get(name, "").partition(" ")[0]
    context = {
        "member": member,
        "classroom": classroom,
        "name": name,
        "which": which,
        "page": face.bot_page(page, face.Viewer(partial(sees_stderr, member)), links),
        "games": [mine.as_theirs(g, name) for g in ladder.players(folder).get(name, {}).get("games", [])],
        "game_url": game,
        "drawn": found.get("drawn"),  # a playing ladder draws its bot pages every PAGES_S, not each snapshot
        "every": round(ladder.PAGES_S),
        "version": Submission.objects.filter(member__slug=name, number=int(version[1:])).first()
        if own and version[1:].isdigit()
        else None,
    }
    return render(request, "classroom/bot.html", context)
