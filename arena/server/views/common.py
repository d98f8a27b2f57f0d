"""The front door and the errors every page shares, each one line for a person to read."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from arena.server.access import member_of
from arena.server.classdir import ClassDir
from arena.server.models import Classroom


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


def classroom_or_none() -> Classroom | None:
    return Classroom.current()


def class_dir() -> ClassDir:
    """The class folder the server was started on."""
    return ClassDir(Path(settings.ARENA_CLASS_DIR))
