"""Signing in and out, joining the class with its code, and the teacher's one-time first link. Every
refusal is one message on the same form, with what was typed kept (but passwords)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate, login, logout, password_validation
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from arena.server.classdir import REFERENCES
from arena.server.models import Classroom, Member, Role, TeacherLink, digest, same_code
from arena.server.people import members as accounts
from arena.server.views.common import class_dir, in_class

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"  # a new member's own sign-in (no password asked)


def signin(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"next": request.GET.get("next") or request.POST.get("next") or ""}
    if request.method != "POST":
        return render(request, "classroom/signin.html", context)
    username = request.POST.get("username", "").strip()[:150]
    password = request.POST.get("password", "")
    context["username"] = username
    user = authenticate(request, username=username, password=password)  # throttled (throttle.py)
    if user is not None and not Member.objects.filter(user=user).exists():
        user_login_failed.send(__name__, credentials={"username": username}, request=request)
        user = None
    if user is None:
        context["error"] = "wrong username or password"
        return render(request, "classroom/signin.html", context, status=401)
    login(request, user)
    target = context["next"]
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        target = "/"
    return redirect(target or "/")


@require_POST
def signout(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("signin")


def _password_problem(password: str, again: str, username: str) -> str | None:
    if password != again:
        return "the two passwords differ"
    try:
        password_validation.validate_password(password, user=None)
    except ValidationError as e:
        return str(e.messages[0])
    if username and username.lower() in password.lower():
        return "the password must not contain the username"
    return None


@in_class
def join(request: HttpRequest, classroom: Classroom, code: str = "") -> HttpResponse:
    """A student joins with the class's code (from the teacher's link) and chooses name and password."""
    context: dict[str, Any] = {"code": request.POST.get("code", code), "classroom": classroom}
    if request.method != "POST":
        return render(request, "classroom/join.html", context)
    username = request.POST.get("username", "").strip()
    context["username"] = username
    password, again = request.POST.get("password", ""), request.POST.get("password2", "")
    error = None
    if not same_code(context["code"], classroom.join_code):
        error = "that join code is not this class's: ask your teacher for the class's link"
    else:
        error = _password_problem(password, again, username)
    if error is None:
        try:
            member = accounts.add_member(username, password)
        except accounts.NameTaken as e:
            error = str(e)
        else:
            login(request, member.user, backend=MODEL_BACKEND)
            return redirect("me")
    context["error"] = error
    return render(request, "classroom/join.html", context, status=400)


def setup(request: HttpRequest, token: str) -> HttpResponse:
    """The teacher's first sign-in: the link `arena serve` printed, good once, creates the class."""
    link = TeacherLink.objects.filter(token_hash=digest(token), used=False).first()
    if link is None:
        text = "this link has been used, or is not the one arena serve printed: sign in, or start it again"
        return render(request, "classroom/message.html", {"title": "Link used", "text": text}, status=404)
    context: dict[str, Any] = {"token": token, "name": request.POST.get("name", ""), "references": REFERENCES}
    bundled = [r for r in REFERENCES if (class_dir().references / f"{r}.py").is_file()]
    if request.method != "POST":  # the references ticked: most classes want them (the teacher unticks)
        return render(request, "classroom/setup.html", {**context, "ticked": bundled})
    context["ticked"] = [r for r in bundled if request.POST.get(f"ref-{r}")]
    username = request.POST.get("username", "").strip()
    context["username"] = username
    password, again = request.POST.get("password", ""), request.POST.get("password2", "")
    error = _password_problem(password, again, username)
    if not context["name"].strip():
        error = "give the class a name"
    if error is None:
        try:
            with transaction.atomic():
                member = accounts.add_member(username, password, Role.TEACHER)
                if Classroom.current() is None:
                    Classroom.objects.create(name=context["name"].strip()[:100], references=context["ticked"])
                TeacherLink.objects.filter(pk=link.pk).update(used=True)
        except accounts.NameTaken as e:
            error = str(e)
        else:
            login(request, member.user, backend=MODEL_BACKEND)
            return redirect("teacher")
    context["error"] = error
    return render(request, "classroom/setup.html", context, status=400)
