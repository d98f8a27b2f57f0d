"""One throttle for every way in (arena/server/people/throttle.py): the class's sign-in, the admin's and
`arena submit`'s token, by username and address together, so that an attacker slows their own guesses and
locks out no one who types the right password from their own address. Django's test client in this
process; the address of each request is REMOTE_ADDR, as gunicorn gives it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.server_kit import need_extra, setup_django

need_extra()

PASSWORD = "kalah seeds 6 6"
A, B, PROXY = "10.1.0.1", "10.2.0.2", "10.9.9.9"


@pytest.fixture
def members(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from django.core.management import call_command
    from django.test import override_settings

    setup_django(tmp_path_factory.mktemp("throttle") / "class")
    call_command("flush", interactive=False, verbosity=0)
    from arena.server.models import Classroom, Role
    from arena.server.people import members as accounts

    Classroom.objects.create(name="Throttle")
    # A fast hash: the tests count refusals; 40 Argon2 hashes of a second each would be most of their time.
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield {
            "teach": accounts.add_member("teach", PASSWORD, Role.TEACHER),
            "alice": accounts.add_member("alice", PASSWORD),
        }


def sign_in(username: str, password: str, address: str, **headers: str) -> int:
    from django.test import Client

    answer = Client().post(
        "/signin", {"username": username, "password": password}, REMOTE_ADDR=address, **headers
    )
    return int(answer.status_code)


def admin_sign_in(password: str, address: str = A) -> Any:
    from django.test import Client

    form = {"username": "teach", "password": password, "next": "/admin/"}
    return Client().post("/admin/login/?next=/admin/", form, REMOTE_ADDR=address)


def test_ten_wrong_admin_passwords_then_the_right_one_is_refused(members: dict[str, Any]) -> None:
    for _ in range(10):
        assert admin_sign_in("wrong").status_code in (200, 429)
    answer = admin_sign_in(PASSWORD)
    assert answer.status_code == 429, "the admin's sign-in is throttled as the class's is"
    assert "too many failed sign-ins for this name from your address" in answer.content.decode()
    assert sign_in("teach", PASSWORD, A) == 429, "one throttle: the class's sign-in refuses the pair too"
    assert admin_sign_in(PASSWORD, B).status_code == 302, "the teacher at their own address signs in"


def test_failures_for_alice_from_one_address_do_not_stop_her_at_hers(members: dict[str, Any]) -> None:
    assert [sign_in("alice", "wrong", A) for _ in range(5)] == [401] * 4 + [429]  # the fifth locks
    assert sign_in("alice", PASSWORD, A) == 429
    assert sign_in("ALICE", PASSWORD, A) == 429, "the name's case is no new set of tries"
    assert sign_in("alice", PASSWORD, B) == 302


def test_made_up_names_from_one_address_lock_out_no_one_behind_it(members: dict[str, Any]) -> None:
    for k in range(30):
        assert sign_in(f"made-up-{k}", "wrong", A) == 401
    assert sign_in("alice", PASSWORD, A) == 302


def test_the_cool_off_passes(members: dict[str, Any]) -> None:
    from django.test import override_settings

    with override_settings(AXES_COOLOFF_TIME=timedelta(seconds=2)):
        for _ in range(5):
            sign_in("alice", "wrong", A)
        assert sign_in("alice", PASSWORD, A) == 429
        time.sleep(2.2)
        assert sign_in("alice", PASSWORD, A) == 302


def submit_status(token: str, address: str, **headers: str) -> int:
    from django.test import Client

    answer = Client().get(
        "/api/versions/1", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address, **headers
    )
    return int(answer.status_code)


def test_a_token_brute_force_is_throttled(members: dict[str, Any]) -> None:
    token = members["alice"].token
    assert submit_status(token, A) == 404  # a good token: no such version of hers, yet
    assert [submit_status(f"guess-{k}", A) for k in range(5)] == [401] * 4 + [429]
    assert submit_status("guess-5", A) == 429
    assert submit_status(token, A) == 429, "from the guessing address, even a right token waits"
    assert submit_status(token, B) == 404


def test_a_proxys_client_address_counts_only_where_the_teacher_trusts_it(
    members: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARENA_TRUSTED_PROXIES", PROXY)
    for k in range(5):  # not through the proxy: a forged header is not believed
        assert sign_in("alice", "wrong", A, HTTP_X_FORWARDED_FOR=f"10.3.0.{k}") in (401, 429)
    assert sign_in("alice", PASSWORD, A, HTTP_X_FORWARDED_FOR="10.3.0.99") == 429
    for _ in range(5):  # through the proxy: the address it appended is the client's
        assert sign_in("alice", "wrong", PROXY, HTTP_X_FORWARDED_FOR=f"1.2.3.4, {B}") in (401, 429)
    assert sign_in("alice", PASSWORD, PROXY, HTTP_X_FORWARDED_FOR=f"{A}, {B}") == 429
    assert sign_in("alice", PASSWORD, PROXY, HTTP_X_FORWARDED_FOR="10.4.0.4") == 302
