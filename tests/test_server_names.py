"""A username that reads as a member's is refused, ASCII look-alikes (I/l/1, O/0, rn/m, case) as the
Unicode ones: `aIice` beside `alice` showed two alices in the member list and on the ladder."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server_kit import need_extra, setup_django

need_extra()

PASSWORD = "kalah seeds 6 6"


@pytest.fixture
def alice(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from django.core.management import call_command
    from django.test import override_settings

    setup_django(tmp_path_factory.mktemp("names") / "class")
    call_command("flush", interactive=False, verbosity=0)
    from arena.server.models import Classroom
    from arena.server.people import members as accounts

    Classroom.objects.create(name="Names")
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        accounts.add_member("alice", PASSWORD)
        accounts.add_member("Bob", PASSWORD)
        accounts.add_member("mary", PASSWORD)
        yield


@pytest.mark.parametrize(
    ("username", "like"),
    [
        ("aIice", "alice"),  # capital I for l
        ("a1ice", "alice"),  # one for l
        ("AIice", "alice"),  # and case
        ("b0b", "Bob"),  # zero for O
        ("B0B", "Bob"),
        ("rnary", "mary"),  # rn for m
        ("gr33dy", None),  # digits that are no letters' look-alikes here: a name of its own
    ],
)
def test_ascii_look_alikes_are_refused(alice: Any, username: str, like: str | None) -> None:
    from django.test import Client

    from arena.server.models import Classroom

    code = Classroom.objects.get().join_code
    form = {"code": code, "username": username, "password": PASSWORD + "x", "password2": PASSWORD + "x"}
    answer = Client().post("/join", form)
    if like is None:
        assert answer.status_code == 302
    else:
        assert answer.status_code == 400
        said = html.unescape(answer.content.decode())
        assert f"the name {username!r} looks like {like!r}, which is taken" in said


@pytest.mark.parametrize("username", ["алиса", "аlice", "zoë"])  # Cyrillic, a Cyrillic а, a diaeresis
def test_a_username_outside_ascii_is_told_only_ascii_letters_count(alice: Any, username: str) -> None:
    from django.test import Client

    from arena.server.models import Classroom

    code = Classroom.objects.get().join_code
    form = {"code": code, "username": username, "password": PASSWORD + "x", "password2": PASSWORD + "x"}
    answer = Client().post("/join", form)
    assert answer.status_code == 400
    said = html.unescape(answer.content.decode())
    other = next(c for c in username if not c.isascii())
    assert f"only ASCII letters (a-z, A-Z) count in a username, and {other!r} is not one" in said
    assert f'value="{username}"' in said, "what was typed is kept"


def test_the_class_name_heads_every_page(alice: Any) -> None:
    from django.test import Client

    for path in ("/signin", "/join", "/setup/not-a-token"):
        page = Client().get(path).content.decode()
        brand = re.search(r'<a class="brand"[^>]*>(.*?)</a>', page, re.S)
        assert brand, path
        assert " ".join(re.sub(r"<[^>]+>", "", brand[1]).split()) == "Arena · Names", (path, brand[1])
