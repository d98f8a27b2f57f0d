"""What `arena submit` talks to: an upload signed with the student's token (not a session, so no CSRF
token: the token is the proof), and the version's status to wait on. Answers are JSON with one `error`
line when refused."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from arena.server.models import Classroom, Submission
from arena.server.people.access import member_by_token
from arena.server.versions.uploads import stored
from arena.server.views.common import class_dir, in_class


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
@in_class(json=True)
def submit(request: HttpRequest, classroom: Classroom) -> HttpResponse:
    member = member_by_token(request)
    if member is None:
        return JsonResponse({"error": "no valid token: copy it from your page on the server"}, status=401)
    kind, said = stored(request, class_dir(), classroom, member)
    if kind == "error":
        return JsonResponse({"error": said}, status=400)
    return JsonResponse(_status(said), status=201)


@require_GET
def version(request: HttpRequest, ident: int) -> HttpResponse:
    member = member_by_token(request)
    if member is None:
        return JsonResponse({"error": "no valid token: copy it from your page on the server"}, status=401)
    found = Submission.objects.filter(pk=ident, member=member).first()
    if found is None:
        return JsonResponse({"error": "no such version of yours"}, status=404)
    return JsonResponse(_status(found))
