"""What the teacher and a student read around the deadline and on the first day, each as the page says it:
the freeze's message and the ladder's line in the undo window (no second copy of a time in UTC), a
student's own version number typed into the address, a game list from the reader's side, the reference
bots ticked for a new class, a join code to type from a projector. Django's test client in this process.
"""

from __future__ import annotations

import html
import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pagetext import findings, visible
from tests.server_kit import need_extra, setup_django

need_extra()


@pytest.fixture
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An empty database and class folder (the process's Django is shared with the other modules)."""
    from django.core.management import call_command

    setup_django(tmp_path_factory.mktemp("release") / "class")
    call_command("flush", interactive=False, verbosity=0)
    from django.conf import settings

    from arena.server.classdir import ClassDir

    where = ClassDir(Path(settings.ARENA_CLASS_DIR))
    shutil.rmtree(where.submissions, ignore_errors=True)
    where.make()
    yield where


def _class(where: Any) -> tuple[Any, dict[str, Any]]:
    from django.test import Client

    from arena.server.models import Classroom, Role
    from arena.server.people import members as accounts

    classroom = Classroom.objects.create(name="Release")
    clients = {}
    for name, role in (("teach", Role.TEACHER), ("alice", Role.STUDENT), ("bob", Role.STUDENT)):
        member = accounts.add_member(name, f"a long password of {name}", role)
        clients[name] = Client()
        clients[name].force_login(member.user)
    return classroom, clients


def _said(page: Any) -> str:
    return html.unescape(page.content.decode())


def test_freeze_now_says_what_it_did_and_the_ladder_line_says_stopped(fresh: Any) -> None:
    """'Freeze now', confirmed, said 'deadline saved' and the ladder line still read 'settled: waiting for a
    new version' (the worker's last word); the worker's next said the final's start in UTC, right above
    the same time in the teacher's zone."""
    from arena.server.models import Classroom

    classroom, clients = _class(fresh)
    Classroom.objects.update(undo_seconds=300, ladder_note="settled: waiting for a new version")
    teach = clients["teach"]
    asked = teach.post("/teacher/freeze", {"when": "now"})
    assert 'id="confirm-freeze"' in _said(asked)
    done = _said(teach.post("/teacher/freeze", {"when": "now", "confirm": "yes"}, follow=True))
    assert "deadline saved" not in done
    assert (
        "submissions are closed: the final starts in 300 seconds; until then you can undo the freeze" in done
    )
    line = re.search(r'id="ladder-note">([^<]*)<', done)
    assert line and line.group(1).startswith("stopped at the deadline"), line
    assert 'id="final-starts">The final starts at <time' in done
    Classroom.objects.update(
        ladder_note="submissions are closed; the final starts at 00:31:23 UTC"
    )  # old worker
    page = teach.get("/teacher").content.decode()
    assert findings(page, zoned=True) == [], visible(page)
    later = _said(teach.post("/teacher/freeze", {"when": "2099-01-01T10:00+02:00"}, follow=True))
    assert "the freeze is undone" not in later and "submissions are closed" in later  # frozen: undo first
    teach.post("/teacher/freeze", {"when": ""})
    saved = _said(teach.post("/teacher/freeze", {"when": "2099-01-01T10:00+02:00"}, follow=True))
    assert "deadline saved: submissions close then" in saved


def test_a_student_who_types_their_own_version_number_is_shown_where_it_is(fresh: Any) -> None:
    """bob's version 1 lives at /versions/2 (alice's is 1): /versions/1 is the site's 404, with its
    navigation and a link to his version 1, and nothing of alice's."""
    from arena.server.models import Classroom, Member
    from arena.server.versions import submitting

    classroom, clients = _class(fresh)
    for name in ("alice", "bob"):
        data = f"# {name.upper()}-SOURCE\nprint(1)\n".encode()
        member = Member.objects.get(slug=name)
        submitting.submit(fresh, Classroom.current(), member, "bot.py", io.BytesIO(data), len(data))
    bobs = Member.objects.get(slug="bob").submissions.get(number=1).pk
    assert bobs != 1
    for path, mine in (
        ("/versions/1", f"/versions/{bobs}"),
        ("/versions/1/source", f"/versions/{bobs}/source"),
    ):
        answer = clients["bob"].get(path)
        page = answer.content.decode()
        assert answer.status_code == 404, path
        assert "<header>" in page and 'name="viewport"' in page and "Sign out" in page, page
        assert f'<p id="see"><a href="{mine}">Your version 1</a> is here.</p>' in page, page
        assert "ALICE" not in page and "alice" not in page.replace("Release", "")
    nowhere = clients["bob"].get("/versions/99")
    assert nowhere.status_code == 404 and 'id="see"' not in nowhere.content.decode()
    visitor = clients["bob"].__class__().get("/no/such/page")
    assert visitor.status_code == 404 and "<header>" in visitor.content.decode()
    assert ">Sign in</a>" in visitor.content.decode() and "{" not in visible(visitor.content.decode())


def test_a_game_list_gives_the_readers_store_first(django_class: Path) -> None:
    """alice's win as north read 'won 8-64'."""
    from datetime import UTC, datetime

    from arena.kgp.server import port as kgp
    from arena.match.record import GameRecord
    from arena.server.views import mine

    listed = {
        "id": 3,
        "south": "bob",
        "north": "alice",
        "winner": "alice",
        "score": "8-64",
        "reason": "normal",
    }
    assert (mine.as_theirs(listed, "alice")["outcome"], mine.as_theirs(listed, "alice")["score"]) == (
        "won",
        "64-8",
    )
    assert (mine.as_theirs(listed, "bob")["outcome"], mine.as_theirs(listed, "bob")["score"]) == (
        "lost",
        "8-64",
    )
    agent = kgp.agent_name("alice")
    record = GameRecord("kalah", "greedy", agent, (1,), 8, 64, agent, "normal", None, "", (), {}, {}, {})
    practised = mine._practised(1, record, datetime.now(UTC), agent)
    assert (practised["outcome"], practised["score"]) == ("won", "64-8")


def test_a_new_class_has_the_reference_bots_ticked(fresh: Any) -> None:
    """The class's creation form ticks them (and says why most classes keep them); what is sent is kept."""
    from django.test import Client

    from arena.server.classdir import REFERENCES
    from arena.server.models import Classroom, TeacherLink, digest

    for ticked in (REFERENCES, ()):
        from django.core.management import call_command

        call_command("flush", interactive=False, verbosity=0)
        TeacherLink.objects.create(token_hash=digest("the-link"))
        client = Client()
        form = client.get("/setup/the-link").content.decode()
        for name in REFERENCES:
            assert re.search(rf'name="ref-{name}" id="setup-ref-{name}" checked>', form), form
        assert "Most teachers keep them on" in form
        sent = {"name": "K", "username": "teach", "password": "a long pw 42 x", "password2": "a long pw 42 x"}
        answer = client.post("/setup/the-link", {**sent, **{f"ref-{r}": "on" for r in ticked}})
        assert answer.status_code == 302, answer.content.decode()
        classroom = Classroom.current()
        assert classroom is not None and classroom.references == list(ticked)


def test_the_join_code_has_no_look_alike_characters_and_reads_as_typed(fresh: Any) -> None:
    from django.test import Client

    from arena.server.models import Classroom, new_code

    codes = [new_code() for _ in range(300)]
    assert all(re.fullmatch(r"[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}", c) for c in codes), (
        codes
    )
    assert len(set(codes)) == len(codes)
    classroom, _ = _class(fresh)
    code = Classroom.objects.get(pk=classroom.pk).join_code
    assert not set(code) & set("IlO0o1")
    typed = code.lower().replace("-", " ")
    form = {"code": typed, "username": "carol", "password": "a long pw 42 x", "password2": "a long pw 42 x"}
    assert Client().post("/join", form).status_code == 302, "the code as a person types it is the code"
    wrong = {**form, "code": code.replace(code[0], "2" if code[0] != "2" else "3"), "username": "dan"}
    assert Client().post("/join", wrong).status_code == 400
