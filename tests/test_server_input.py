"""Bad input gets one clear message and loses nothing: a wrong password (and the throttle after it), an
upload too big, a bad zip, a bot.toml that is not TOML, an unknown language, a submission after the deadline
or past the day's count, a form without its CSRF token, a wrong join code. Django's test client in this
process, on a class of the test session's."""

from __future__ import annotations

import html
import io
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import need_extra, signed_in

need_extra()

PASSWORD = "kalah seeds 6 6"


@pytest.fixture
def student(django_class: Path) -> Iterator[Any]:
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom
    from arena.server.people import members as accounts

    where = ClassDir(django_class)
    shutil.rmtree(where.submissions, ignore_errors=True)
    where.make()
    Classroom.objects.create(name="Input", upload_kib=64, per_day=3)
    member = accounts.add_member("dana", PASSWORD)
    client = signed_in(member.user)
    client.member = member  # type: ignore[attr-defined]
    yield client


def said(answer: Any) -> list[str]:
    """The messages on the page an answer redirected to (or on the answer itself)."""
    text = html.unescape(answer.content.decode())
    return re.findall(r'class="msg (?:error|success)"[^>]*>([^<]*)<', text)


def upload(client: Any, name: str, data: bytes) -> list[str]:
    answer = client.post("/me/upload", {"bot": _file(name, data)}, follow=True)
    assert answer.status_code == 200
    return said(answer)


def _file(name: str, data: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


def versions(client: Any) -> int:
    return int(client.member.submissions.count())


def zipped(*entries: tuple[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buf.getvalue()


PLAYS = b"import sys\nfor line in sys.stdin:\n    pass\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("big.py", b"#" * 70000, "upload too big: 69 KiB; this class takes at most 64 KiB"),
        (
            "evil.zip",
            zipped(("../evil.py", PLAYS), ("bot.toml", b'command = "python3 evil.py"')),
            "climbs out",
        ),
        ("abs.zip", zipped(("/etc/evil.py", PLAYS), ("bot.toml", b"")), "absolute path"),
        ("bomb.zip", zipped(("bot.toml", b""), ("b.bin", b"\0" * (40 << 20))), "zip bomb"),
        ("bad.zip", zipped(("bot.toml", b"command = ["), ("bot.py", PLAYS)), "bot.toml is not TOML"),
        ("bot.rb", b"puts 4", "unknown language"),
        ("junk.zip", b"PK\x03\x04 junk", "not a zip file"),
    ],
)
def test_a_bad_upload_is_one_message_and_nothing_stored(
    student: Any, name: str, data: bytes, words: str
) -> None:
    messages = upload(student, name, data)
    assert len(messages) == 1 and words in messages[0], messages
    assert versions(student) == 0
    assert student.get("/me").status_code == 200


def test_a_good_upload_is_a_version(student: Any) -> None:
    assert upload(student, "mine.py", PLAYS) == ["version 1 is stored and waits for its check"]
    assert versions(student) == 1


def test_after_the_deadline_no_upload_is_taken(student: Any) -> None:
    from django.utils import timezone

    from arena.server.models import Classroom

    upload(student, "first.py", PLAYS)
    Classroom.objects.update(freeze_at=timezone.now())
    messages = upload(student, "late.py", PLAYS)
    assert len(messages) == 1 and "submissions are closed" in messages[0]
    assert versions(student) == 1, "the version from before the deadline is kept"


def test_the_days_count_is_a_limit(student: Any) -> None:
    for k in range(3):
        upload(student, f"v{k}.py", PLAYS)
    messages = upload(student, "v4.py", PLAYS)
    assert "3 versions in the last 24 hours" in messages[0]
    assert versions(student) == 3


@pytest.mark.slow
def test_a_wrong_password_is_one_message_and_the_throttle_follows(student: Any) -> None:
    from django.test import Client

    from arena.server.people.throttle import FAILURES

    client = Client()
    for _ in range(FAILURES - 1):
        answer = client.post("/signin", {"username": "dana", "password": "wrong"})
        assert answer.status_code == 401
        assert re.findall(r'id="error">([^<]*)<', html.unescape(answer.content.decode())) == [
            "wrong username or password"
        ]
    answer = client.post("/signin", {"username": "dana", "password": "wrong"})
    assert answer.status_code == 429, "the last failure the throttle allows is told so"
    answer = client.post("/signin", {"username": "dana", "password": PASSWORD})
    assert answer.status_code == 429, "even the right password waits once the name is throttled"
    assert "too many failed sign-ins for this name from your address: wait" in answer.content.decode()
    other = Client().post("/signin", {"username": "nobody-else", "password": "x"})
    assert other.status_code == 401, "the throttle is per name and address"


def test_a_form_without_its_csrf_token_is_refused_and_does_nothing(student: Any) -> None:
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(student.member.user)
    answer = client.post("/me/upload", {"bot": _file("mine.py", PLAYS)})
    assert answer.status_code == 403
    assert "sent without its security token" in answer.content.decode()
    assert versions(student) == 0


def test_a_wrong_join_code_is_one_message(student: Any) -> None:
    from django.test import Client

    answer = Client().post(
        "/join", {"code": "nope", "username": "eve", "password": PASSWORD, "password2": PASSWORD}
    )
    assert answer.status_code == 400
    assert re.findall(r'id="error">([^<]*)<', html.unescape(answer.content.decode())) == [
        "that join code is not this class's: ask your teacher for the class's link"
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("username", "words"),
    [("greedy", "taken"), ("Dana", "taken"), ("rnybot", None), ("a b", "a username is"), ("dana2", None)],
)
def test_usernames_follow_arenas_name_rules(student: Any, username: str, words: str | None) -> None:
    from django.test import Client

    from arena.server.models import Classroom

    code = Classroom.objects.get().join_code
    form = {"code": code, "username": username, "password": PASSWORD + "x", "password2": PASSWORD + "x"}
    answer = Client().post("/join", form)
    if words is None:
        assert answer.status_code == 302
    else:
        assert words in answer.content.decode()


def test_a_name_that_looks_like_a_members_is_refused(student: Any) -> None:
    from arena.server.people.members import NameTaken, add_member

    add_member("mybot", PASSWORD + "y")
    with pytest.raises(NameTaken, match="looks like 'mybot'"):
        add_member("rnybot", PASSWORD + "z")


def test_the_api_says_its_refusals_as_json(student: Any) -> None:
    from django.test import Client

    token = f"Bearer {student.member.token}"
    answer = Client().post("/api/submit", {"bot": _file("bot.rb", b"")}, HTTP_AUTHORIZATION=token)
    assert answer.status_code == 400 and "unknown language" in answer.json()["error"]
    answer = Client().post("/api/submit", {"bot": _file("ok.py", PLAYS)}, HTTP_AUTHORIZATION=token)
    assert answer.status_code == 201 and answer.json()["status"] == "queued"
