"""The deadline as the teacher means it: a time with an offset is that moment (not the same clock time in
UTC), a freeze that closes submissions at once is asked again and can be undone until the final starts,
and a student the teacher removed is not graded. Django's test client in this process."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import need_extra, signed_in

need_extra()

PASSWORD = "kalah seeds 6 6"


@pytest.fixture
def teacher(django_class: Path) -> Iterator[Any]:
    from django.test import override_settings

    from arena.server.models import Classroom, Role
    from arena.server.people import members as accounts

    Classroom.objects.create(name="Deadline")
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield signed_in(accounts.add_member("teach", PASSWORD, Role.TEACHER).user)


def classroom() -> Any:
    from arena.server.models import Classroom

    return Classroom.objects.get()


def page(client: Any) -> str:
    return html.unescape(client.get("/teacher").content.decode())


def test_a_deadline_with_an_offset_is_that_moment(teacher: Any) -> None:
    teacher.post("/teacher/freeze", {"when": "2030-12-01T17:00+02:00"})
    assert classroom().freeze_at == datetime(2030, 12, 1, 15, 0, tzinfo=UTC)
    shown = page(teacher)
    assert (
        '<time datetime="2030-12-01T15:00:00+00:00" class="utc" title="2030-12-01 15:00 UTC">'
        "2030-12-01 15:00 UTC</time>" in shown
    )
    teacher.post("/teacher/freeze", {"when": "2030-12-01T17:00"})
    assert classroom().freeze_at == datetime(2030, 12, 1, 17, 0, tzinfo=UTC), (
        "no offset: UTC, as the form says"
    )


@pytest.mark.parametrize("when", ["now", "2020-01-01T09:00+01:00"])
def test_a_freeze_at_once_is_asked_again_and_undone_until_the_final(teacher: Any, when: str) -> None:
    from arena.server.models import UNDO, Classroom

    asked = teacher.post("/teacher/freeze", {"when": when})
    assert asked.status_code == 200 and 'id="confirm-freeze"' in asked.content.decode()
    assert classroom().freeze_at is None, "nothing is frozen before the teacher says yes"
    generation = classroom().generation
    teacher.post("/teacher/freeze", {"when": when, "confirm": "yes"})
    assert classroom().frozen()
    assert 'id="undo-freeze"' in page(teacher)
    teacher.post("/teacher/freeze", {"when": ""})
    assert classroom().freeze_at is None and not classroom().frozen()
    assert classroom().generation > generation, "the ladder is told to play again"

    teacher.post("/teacher/freeze", {"when": when, "confirm": "yes"})
    Classroom.objects.update(freeze_at=datetime.now(UTC) - UNDO - timedelta(seconds=1))
    assert 'id="undo-freeze"' not in page(teacher)
    answer = teacher.post("/teacher/freeze", {"when": ""}, follow=True)
    assert "the final has started" in html.unescape(answer.content.decode())
    assert classroom().frozen(), "once the final starts, the freeze stays"


def test_the_teacher_sets_the_undo_window(teacher: Any) -> None:
    teacher.post("/teacher/settings", {"undo_seconds": "5"})
    assert classroom().undo_seconds == 5
    asked = html.unescape(teacher.post("/teacher/freeze", {"when": "now"}).content.decode())
    assert "The final starts 5 seconds later" in asked
    teacher.post("/teacher/freeze", {"when": "now", "confirm": "yes"})
    found = classroom()
    assert found.final_at() == found.freeze_at + timedelta(seconds=5)
    assert 'id="undo-freeze"' in page(teacher)
    Classroom = type(found)
    Classroom.objects.update(freeze_at=datetime.now(UTC) - timedelta(seconds=6))
    assert 'id="undo-freeze"' not in page(teacher), "past the teacher's window, the final has begun"


def test_a_removed_student_is_not_in_the_gradebook(teacher: Any) -> None:
    from arena.server.models import Member
    from arena.server.people import members as accounts
    from arena.server.standings.gradebook import rows

    accounts.add_member("ann", PASSWORD)
    gone = accounts.add_member("bea", PASSWORD)
    teacher.post(f"/teacher/members/{gone.pk}/remove")
    assert not Member.objects.get(pk=gone.pk).user.is_active
    graded = rows(classroom(), {"board": [], "frozen": {}, "references": {}})
    assert [r["student"] for r in graded] == ["ann"]
    frozen = rows(classroom(), {"board": [], "frozen": {"bea": "1"}, "references": {}})
    assert [r["student"] for r in frozen] == ["ann", "bea"], "removed after the deadline: still graded"


@pytest.mark.slow
def test_the_students_page_shows_the_deadline(teacher: Any) -> None:
    from django.test import Client

    from arena.server.people import members as accounts

    teacher.post("/teacher/freeze", {"when": "2030-12-01T17:00-05:00"})
    student = Client()
    student.force_login(accounts.add_member("cid", PASSWORD).user)
    shown = html.unescape(student.get("/me").content.decode())
    assert re.search(r'id="deadline">Submissions close at <time datetime="2030-12-01T22:00:00\+00:00"', shown)
