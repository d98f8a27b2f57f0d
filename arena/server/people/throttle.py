"""One throttle for every way in: the class's sign-in, Django's admin sign-in and `arena submit`'s token
all count their failures in django-axes (in the database: it holds across gunicorn's processes and
restarts), and all are refused alike once a username has failed FAILURES times from one address.

Why by username and address together: an attacker elsewhere cannot lock a student out (five wrong
passwords for alice from A leave alice free from B), and thirty made-up names from a classroom's one
address (a NAT, or the HTTPS proxy) lock none of the students behind it. What it costs: guessing many
names' passwords from one address is not slowed beyond five tries a name per COOL_OFF. It is a cool-off,
not a lockout: the pair may try again COOL_OFF after its last failure.

Whose address: the connection's, unless it comes from a proxy the teacher trusts (`arena serve
--trusted-proxy ADDR`), whose X-Forwarded-For then names the client. Done here rather than by
django-ipware (axes' own way): ipware checks the trusted proxies against the header's own chain, which a
client that connects directly writes as it likes, and never against the connection's address.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

FAILURES = 5
COOL_OFF = timedelta(minutes=5)
TOKEN = {"username": "(a token of arena submit)"}  # every token tried from one address counts together
PROXIES_ENV = "ARENA_TRUSTED_PROXIES"


def trusted_proxies() -> frozenset[str]:
    """The proxies whose X-Forwarded-For is believed (`arena serve --trusted-proxy`, comma separated)."""
    return frozenset(p.strip() for p in os.environ.get(PROXIES_ENV, "").split(",") if p.strip())


def client_address(request: HttpRequest) -> str:
    """The client's address: the connection's, or where a trusted proxy says it came from (the last
    entry of X-Forwarded-For: the one the proxy appended, which no client can write)."""
    address = str(request.META.get("REMOTE_ADDR", ""))
    if address in trusted_proxies():
        forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")[-1].strip()
        return forwarded or address
    return address


def username(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    """The name as the throttle counts it: case folded, so `Alice` and `ALICE` are the same five tries."""
    given = (credentials or {}).get("username") or request.POST.get("username", "")
    return str(given).strip().lower()[:150]


MESSAGE = "too many failed sign-ins for this name from your address: wait a few minutes, then try again"


def refused(request: HttpRequest, *args: Any) -> HttpResponse:
    """What a throttled attempt gets (axes' lockout callable): the sign-in form again with the reason,
    or one JSON line for `arena submit`."""
    if request.path.startswith("/api/"):
        wait = int(COOL_OFF.total_seconds())
        return JsonResponse({"error": f"too many wrong tokens from your address: wait {wait} s"}, status=429)
    context = {"error": MESSAGE, "username": request.POST.get("username", "")[:150], "next": ""}
    return render(request, "classroom/signin.html", context, status=429)


def token_allowed(request: HttpRequest) -> bool:
    from axes.handlers.proxy import AxesProxyHandler

    return bool(AxesProxyHandler.is_allowed(request, TOKEN))


def token_failed(request: HttpRequest) -> None:
    from django.contrib.auth.signals import user_login_failed

    user_login_failed.send(sender=__name__, credentials=TOKEN, request=request)
