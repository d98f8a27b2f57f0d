"""What `arena submit` talks to: an upload signed with the student's token (not a session, so no CSRF
token: the token is the proof), and the version's status to wait on. Answers are JSON with one `error`
line when refused."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from arena.server import throttle
from arena.server.models import Member, Submission
from arena.server.views.student import upload_from


def _bearer(request: HttpRequest) -> Member | None:
    """The member whose token the request carries ('Authorization: Bearer TOKEN'), if any and active."""
    if not throttle.token_allowed(request):
        request.axes_locked_out = True  # type: ignore[attr-defined]  # axes' middleware answers 429
        return None
    header = str(request.META.get("HTTP_AUTHORIZATION", ""))
    given = header.removeprefix("Bearer ").strip()
    if not given or not header.startswith("Bearer "):
        return None
    found = Member.objects.filter(token=given, user__is_active=True).select_related("user").first()
    if found is None or not hmac.compare_digest(found.token, given):
        throttle.token_failed(request)
        return None
    return found


def _status(found: Submission) -> dict[str, object]:
    return {
        "version": found.number,
        "id": found.pk,
        "status": found.status,
        "verdict": found.verdict,
        "items": found.checklist.get("items", []) if isinstance(found.checklist, dict) else [],
    }


@csrf_exempt
@require_POST
def submit(request: HttpRequest) -> HttpResponse:
    member = _bearer(request)
    if member is None:
        return JsonResponse({"error": "no valid token: copy it from your page on the server"}, status=401)
    kind, said = upload_from(request, member)
    if kind == "error":
        return JsonResponse({"error": said}, status=400)
    return JsonResponse(_status(said), status=201)


@require_GET
def version(request: HttpRequest, ident: int) -> HttpResponse:
    member = _bearer(request)
    if member is None:
        return JsonResponse({"error": "no valid token: copy it from your page on the server"}, status=401)
    found = Submission.objects.filter(pk=ident, member=member).first()
    if found is None:
        return JsonResponse({"error": "no such version of yours"}, status=404)
    return JsonResponse(_status(found))
