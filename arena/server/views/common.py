"""What every page shares: the front door, the errors, each one line for a person to read, the class folder,
and one guard for the pages that need the class (none before the teacher's first sign-in creates it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, overload

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from arena.server.classdir import ClassDir
from arena.server.models import Classroom
from arena.server.people.access import View, member_of

NO_CLASS = "the class has not been created yet: its teacher creates it with the link arena serve printed"


def home(request: HttpRequest) -> HttpResponse:
    """Where a visitor starts: their own page, the teacher's, or the sign-in."""
    member = member_of(request)
    if member is None:
        return redirect("signin")
    return redirect("teacher" if member.teacher else "me")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form sent without its CSRF token (or from another site): said in one line, nothing done."""
    text = "this form was sent without its security token (or from another site), so nothing was done: "
    text += "reload the page and send it again"
    return render(request, "classroom/message.html", {"title": "Form refused", "text": text}, status=403)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's page for an address that leads nowhere, with its navigation; a student who typed their
    own version's number (bob's version 1 may be /versions/2) is shown where it is."""
    said = exception.args[0] if exception and exception.args and isinstance(exception.args[0], str) else ""
    said = "" if said.endswith("matches the given query.") else said  # get_object_or_404's, for a developer
    context: dict[str, Any] = {"title": "Not found", "text": f"{said or 'no such page'} at this address"}
    member = member_of(request)
    typed = re.fullmatch(r"/versions/(\d+)(/source)?", request.path)
    if member is not None and typed:
        own = member.submissions.filter(number=int(typed.group(1))).first()
        if own is not None:
            name = "source" if typed.group(2) else "version"
            context["see"] = (reverse(name, args=[own.pk]), f"your version {own.number}")
    return render(request, "classroom/message.html", {**context, "member": member}, status=404)


def refused(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's page for a request refused (403)."""
    text = "you may not open this page"
    context = {"title": "Not yours", "text": text, "member": member_of(request)}
    return render(request, "classroom/message.html", context, status=403)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    context = {"title": "Bad request", "text": "this request could not be read", "member": member_of(request)}
    return render(request, "classroom/message.html", context, status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    """A fault of the server's, said as such (its details are in the server's log, never on the page)."""
    text = "something went wrong on the server: the teacher finds the details in its log"
    return render(request, "classroom/message.html", {"title": "Server error", "text": text}, status=500)


def class_dir() -> ClassDir:
    """The class folder the server was started on."""
    return ClassDir(Path(settings.ARENA_CLASS_DIR))


@overload
def in_class(view: View) -> View: ...
@overload
def in_class(*, json: bool) -> Callable[[View], View]: ...
def in_class(view: View | None = None, *, json: bool = False) -> Any:
    """The class for a view that needs it, given as `classroom`; before there is one, every such address
    answers the same one line (409), a page or (`json`) {"error": ...}. Under signed_in/teacher_only, so
    that a visitor is sent to sign in first."""

    def guard(inner_view: View) -> View:
        @wraps(inner_view)
        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            classroom = Classroom.current()
            if classroom is None:
                if json:
                    return JsonResponse({"error": NO_CLASS}, status=409)
                context = {"title": "No class yet", "text": NO_CLASS}
                return render(request, "classroom/message.html", context, status=409)
            return inner_view(request, *args, classroom=classroom, **kwargs)

        return inner

    return guard if view is None else guard(view)
