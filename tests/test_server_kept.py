"""A student's kept versions: an upload beyond the class's count removes the oldest version, its row and its
folder, never the active one nor one waiting for its check, so the disk a student fills stays bounded."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_uploads_beyond_the_count_remove_the_oldest_but_the_active_and_the_queued(django_class: Path) -> None:
    """Fails without the cap: all six versions and their folders stay."""
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom, Status
    from arena.server.people import members as accounts
    from arena.server.versions import submitting

    where = ClassDir(django_class)
    shutil.rmtree(where.submissions, ignore_errors=True)
    where.make()
    classroom = Classroom.objects.create(name="K", kept_versions=3, per_day=100)
    member = accounts.add_member("kim", "a long password 1")
    data = (ROOT / "bots" / "random.py").read_bytes()

    def upload(status: str) -> int:
        version = submitting.submit(where, classroom, member, "kim.py", io.BytesIO(data), len(data))
        version.status = status
        version.save()
        return version.number

    first = upload(Status.PASSED)
    member.active_id = member.submissions.get(number=first).pk
    member.save()
    upload(Status.QUEUED)  # 2: still waiting for its check when the others come
    for _ in range(4):
        upload(Status.FAILED)
    kept = sorted(member.submissions.values_list("number", flat=True))
    assert kept == [1, 2, 4, 5, 6], kept  # the newest three, the active one and the queued one
    folders = sorted(int(p.name) for p in (where.submissions / "kim").iterdir() if not p.name.startswith("."))
    assert folders == kept
    assert (where.version("kim", 1) / "kim.py").is_file()


def test_the_teacher_sets_the_count(django_class: Path) -> None:
    from django.test import Client

    from arena.server.models import Classroom, Role
    from arena.server.people import members as accounts

    Classroom.objects.create(name="K")
    assert Classroom.current().kept_versions == 10  # type: ignore[union-attr]
    teacher = accounts.add_member("teach", "a long password 2", Role.TEACHER)
    client = Client()
    client.force_login(teacher.user)
    client.post("/teacher/settings", {"kept_versions": "4"})
    assert Classroom.current().kept_versions == 4  # type: ignore[union-attr]
    assert 'name="kept_versions"' in client.get("/teacher").content.decode()


def test_a_build_over_the_cap_fails_its_check_and_leaves_nothing_big(
    django_class: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's check of an uploaded folder whose build writes 32 MiB, under a cap of 8 MiB: failed in
    one line naming the size, and the class folder keeps the upload alone."""
    import zipfile

    from arena.match import build
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom, Status
    from arena.server.people import members as accounts
    from arena.server.versions import checking, submitting
    from arena.tournament.settings import Settings

    monkeypatch.setattr(build, "BUILD_BYTES", 8 * 1024 * 1024)
    where = ClassDir(django_class)
    shutil.rmtree(where.submissions, ignore_errors=True)
    where.make()
    classroom = Classroom.objects.create(name="B")
    member = accounts.add_member("bea", "a long password 3")
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as z:
        z.writestr("bea/bot.toml", 'build = "sh build.sh"\ncommand = "sh bot.sh"\n')
        z.writestr("bea/build.sh", "dd if=/dev/zero of=blob bs=1M count=32 2>/dev/null\n")
        z.writestr("bea/bot.sh", "echo 1\n")
    data = packed.getvalue()
    version = submitting.submit(where, classroom, member, "bea.zip", io.BytesIO(data), len(data))
    checked = checking.run_check(where, version, Settings(openings=0))
    assert checked.status == Status.FAILED
    (item,) = checked.checklist["items"]
    assert item["name"] == "build" and "\n" not in item["problem"], item
    assert "more than the 8 MiB a build may write" in item["problem"], item["problem"]
    held = sum(f.stat().st_size for f in (where.submissions / "bea").rglob("*") if f.is_file())
    assert held < 1024 * 1024, held
