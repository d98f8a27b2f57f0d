"""Running the class: its join link, its members (reset a password, remove one, make one a teacher), what
students see, the limits and the pass rule, the deadline, the reference bots, and the gradebook."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from arena.server.classdir import REFERENCES
from arena.server.models import Classroom, Member, Role, Visibility
from arena.server.people import members as accounts
from arena.server.people.access import teacher_only
from arena.server.standings import final, gradebook, ladder
from arena.server.views.common import class_dir, in_class


@teacher_only
@in_class
def dashboard(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    members = (
        Member.objects.select_related("user", "active")
        .prefetch_related("submissions")
        .order_by("role", "slug")
    )
    context = {
        "member": member,
        "classroom": classroom,
        "members": members,
        "join": request.build_absolute_uri(f"/join/{classroom.join_code}"),
        "visibilities": Visibility.choices,
        "references": REFERENCES,
        "snapshot": ladder.snapshot(class_dir().ladder),
        "results": final.results(class_dir()) is not None,
        "now": timezone.now(),
    }
    return render(request, "classroom/teacher.html", context)


def _number(request: HttpRequest, key: str, low: int, high: int, default: int) -> int:
    try:
        return max(low, min(high, int(request.POST.get(key, default))))
    except ValueError:
        return default


@require_POST
@teacher_only
@in_class
def class_settings(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    """Visibility, limits, the pass rule and the KGP port's options."""
    changed = False  # the ladder's field: its remote agents
    visibility = request.POST.get("visibility", classroom.visibility)
    if visibility in Visibility.values:
        classroom.visibility = visibility
    classroom.upload_kib = _number(request, "upload_kib", 1, 64 * 1024, classroom.upload_kib)
    classroom.per_day = _number(request, "per_day", 1, 1000, classroom.per_day)
    classroom.kept_versions = _number(request, "kept_versions", 1, 1000, classroom.kept_versions)
    classroom.scrimmages_per_day = _number(
        request, "scrimmages_per_day", 0, 1000, classroom.scrimmages_per_day
    )
    classroom.analyses_per_day = _number(request, "analyses_per_day", 0, 1000, classroom.analyses_per_day)
    classroom.undo_seconds = _number(request, "undo_seconds", 0, 24 * 3600, classroom.undo_seconds)
    reference = request.POST.get("rule_reference", classroom.rule_reference)
    if reference in REFERENCES:
        classroom.rule_reference = reference
    classroom.rule_games = _number(request, "rule_games", 2, 200, classroom.rule_games)
    classroom.rule_wins = _number(request, "rule_wins", 0, classroom.rule_games, classroom.rule_wins)
    if "kgp_options" in request.POST:  # the form's checkbox (an unchecked one is not sent at all)
        classroom.kgp_guests = "kgp_guests" in request.POST
        ranked = "kgp_ranked" in request.POST
        no_move = "forfeit" if "kgp_forfeit" in request.POST else "random"
        if (ranked, no_move) != (classroom.kgp_ranked, classroom.kgp_no_move):
            classroom.kgp_ranked, classroom.kgp_no_move = ranked, no_move
            changed = True
    classroom.save()
    if changed:
        classroom.bump()
    messages.success(request, "saved")
    return redirect("teacher")


@require_POST
@teacher_only
@in_class
def freeze(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    """Set the deadline ('now', or a date and time: with its UTC offset, or in UTC), or clear it: before it
    has passed, or after, as long as the final has not started (the undo of a freeze). A deadline that
    closes submissions at once is asked again before it is kept."""
    now = timezone.now()
    if classroom.frozen(now) and not classroom.undoable(now):
        messages.error(request, "the final has started: it is played from the frozen versions")
        return redirect("teacher")
    when = request.POST.get("when", "").strip()
    if when == "":
        undone = classroom.frozen(now)
        classroom.freeze_at = None
        classroom.save(update_fields=["freeze_at"])
        classroom.bump()  # the ladder plays again
        messages.success(request, "the freeze is undone: submissions are open" if undone else "no deadline")
        return redirect("teacher")
    if classroom.frozen(now):
        messages.error(request, "submissions are closed: undo the freeze first")
        return redirect("teacher")
    try:
        at = now if when == "now" else deadline(when)
    except ValueError:
        messages.error(
            request, f"{when!r} is not a date and time such as 2026-12-01T17:00 or 2026-12-01T17:00+02:00"
        )
        return redirect("teacher")
    if at <= now and request.POST.get("confirm") != "yes":
        context = {"member": member, "classroom": classroom, "when": when, "at": at}
        return render(request, "classroom/freeze.html", context)
    classroom.freeze_at = max(at, now)  # a time past closes now: the undo's minute counts from here
    classroom.save(update_fields=["freeze_at"])
    if classroom.frozen(now):
        said = (
            f"submissions are closed: the final starts in {classroom.undo_seconds} seconds; "
            "until then you can undo the freeze"
        )
    else:
        said = "deadline saved: submissions close then"
    messages.success(request, said)
    return redirect("teacher")


def deadline(text: str) -> datetime:
    """A deadline as typed: ISO 8601, its offset honoured (2030-12-01T17:00+02:00 is 15:00 UTC), UTC
    without one; ValueError if it is none."""
    at = datetime.fromisoformat(text)
    return at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)


@require_POST
@teacher_only
@in_class
def references(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    """Add or remove arena's bundled reference bots from the ladder."""
    chosen = [name for name in REFERENCES if request.POST.get(name)]
    missing = [name for name in chosen if not (class_dir().references / f"{name}.py").is_file()]
    if missing:
        messages.error(request, f"this arena has no bundled {missing[0]} bot to add")
        return redirect("teacher")
    classroom.references = chosen
    classroom.save(update_fields=["references"])
    classroom.bump()
    messages.success(request, "reference bots: " + (", ".join(chosen) or "none"))
    return redirect("teacher")


@require_POST
@teacher_only
@in_class
def member_action(
    request: HttpRequest, ident: int, action: str, member: Member, classroom: Classroom
) -> HttpResponse:
    """Reset a member's password (the new one shown once, here), remove a student, make one a teacher."""
    other = get_object_or_404(Member.objects.select_related("user"), pk=ident)
    if other.pk == member.pk and action != "reset":
        messages.error(request, "that is you")
    elif action == "reset":
        password = accounts.new_password(other)
        messages.success(request, f"{other.user.username}'s new password (shown once): {password}")
    elif action == "remove":
        accounts.remove(other)
        classroom.bump()
        messages.success(request, f"{other.user.username} is removed; their versions are kept")
    elif action == "promote" and other.role != Role.TEACHER:
        accounts.make_teacher(other)
        classroom.bump()
        messages.success(request, f"{other.user.username} is now a teacher")
    return redirect("teacher")


@teacher_only
@in_class
def gradebook_csv(request: HttpRequest, member: Member, classroom: Classroom) -> HttpResponse:
    results = final.results(class_dir())
    if results is None:
        text = "the gradebook is made once the final has been played: set the deadline first"
        return render(
            request, "classroom/message.html", {"title": "No gradebook yet", "text": text}, status=409
        )
    response = HttpResponse(gradebook.csv_text(classroom, results), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="gradebook.csv"'
    return response
