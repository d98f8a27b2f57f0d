"""The server's parts on their own: `arena run` never loads Django; the class folder's secret key; the
ladder's field as a bots folder (students' active versions, the references the teacher added); the
gradebook's rows and its pass rule; what `arena submit` sends; the names the server answers to; a cluster
the ladder could not trust refused at the start; the web server's cgroup weighing more than the games;
passwords hashed with Argon2id, one at a time per process, the PBKDF2 hashes made before still good and
upgraded."""

from __future__ import annotations

import importlib.util
import io
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.server_kit import ROOT


@pytest.mark.slow
def test_arena_run_does_not_load_the_server() -> None:
    code = (
        "import sys, arena.cli, arena.api, arena.report.page, arena.student.check; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'gunicorn') "
        "or m == 'arena.server'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_arena_submit_packs_a_folder_without_its_build_or_hidden_files(tmp_path: Path) -> None:
    from arena.student.submit import packed

    bot = tmp_path / "mybot"
    (bot / "__pycache__").mkdir(parents=True)
    (bot / "bot.toml").write_text('command = "python3 bot.py"\n')
    (bot / "bot.py").write_text("print(1)\n")
    (bot / ".arena-build.json").write_text("{}")
    (bot / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (bot / "link").symlink_to("/etc/passwd")
    name, data = packed(bot)
    assert name == "mybot.zip"
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == ["mybot/bot.py", "mybot/bot.toml"]
    assert packed(bot / "bot.py") == ("bot.py", b"print(1)\n")


def test_the_secret_key_is_made_once_and_kept_to_its_owner(tmp_path: Path) -> None:
    from arena.server.classdir import ClassDir

    where = ClassDir(tmp_path / "class")
    where.make()
    key = where.secret_key()
    assert len(key) >= 50 and where.secret_key() == key
    assert stat.S_IMODE((where.root / "secret_key").stat().st_mode) == 0o600


def test_the_server_answers_to_its_bind_address() -> None:
    pytest.importorskip("django", reason="the server's extra is not installed: pip install 'arena[server]'")
    from arena.server.serve import allowed_hosts

    assert allowed_hosts("127.0.0.1") == ["127.0.0.1", "[::1]", "localhost"]
    assert allowed_hosts("10.1.2.3") == ["10.1.2.3"]
    assert allowed_hosts("0.0.0.0") == ["*"]


def test_the_field_is_the_active_versions_and_the_references(django_class: Path) -> None:
    import shutil

    from arena.match.bots import survey
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom, Status
    from arena.server.people import members as accounts
    from arena.server.standings import field
    from arena.server.versions import submitting

    where = ClassDir(django_class)
    shutil.rmtree(where.submissions, ignore_errors=True)
    where.make()
    classroom = Classroom.objects.create(name="F", references=["greedy"])
    member = accounts.add_member("zoe", "a long password 1")
    data = (ROOT / "bots" / "random.py").read_bytes()
    version = submitting.submit(where, classroom, member, "zoe.py", io.BytesIO(data), len(data))
    folder = tmp = django_class.parent / "fieldtest"
    assert field.sync(folder, field.wanted(where, classroom))
    assert sorted(p.name for p in folder.iterdir()) == ["greedy.py"], "a version not yet passed does not play"
    version.status = Status.PASSED
    version.save()
    member.active = version
    member.save()
    assert field.sync(folder, field.wanted(where, classroom))
    assert [b.name for b in survey(folder).bots] == ["greedy", "zoe"]
    assert not field.sync(folder, field.wanted(where, classroom)), "an unchanged field is not copied again"
    classroom.references = []
    assert field.sync(tmp, field.wanted(where, classroom))
    assert [b.name for b in survey(folder).bots] == ["zoe"]


def test_the_gradebook_has_every_student_and_the_teachers_rule(django_class: Path) -> None:
    import csv

    from arena.server.models import Classroom
    from arena.server.people import members as accounts
    from arena.server.standings import gradebook

    classroom = Classroom.objects.create(name="G", rule_wins=8, rule_games=10)
    for name in ("amy", "bea", "cid"):
        accounts.add_member(name, "a long password 2")
    results = {
        "board": [
            {
                "place": "1",
                "bot": "bea",
                "elo": 1700.0,
                "elo_lo": 1600.0,
                "elo_hi": 1800.0,
                "games": 20,
                "score_pct": 80.0,
            },
            {
                "place": "2",
                "bot": "amy",
                "elo": 1300.0,
                "elo_lo": 1200.0,
                "elo_hi": 1400.0,
                "games": 20,
                "score_pct": 20.0,
            },
            {"place": "3", "bot": "amy.kgp", "elo": 1100.0, "games": 20, "score_pct": 10.0},
        ],
        "frozen": {"amy": "v2 #5", "bea": "v1 #3"},
        "references": {"amy": {"greedy": [3, 0, 7], "random": [9, 0, 1]}, "bea": {"greedy": [8, 1, 1]}},
    }
    rows = list(csv.DictReader(io.StringIO(gradebook.csv_text(classroom, results))))
    assert [r["student"] for r in rows] == ["bea", "amy", "cid"]
    assert [r["pass"] for r in rows] == ["pass", "fail", "fail"]
    assert rows[1]["version"] == "2" and rows[1]["vs_greedy"] == "3-0-7" and rows[1]["vs_random"] == "9-0-1"
    assert rows[2]["version"] == "" and rows[2]["place"] == ""
    assert rows[0]["rule"] == "wins at least 8 of 10 against greedy"
    # a remote agent the teacher ranked: its place beside its student's, never a row or a student of its own
    assert [(r["agent_place"], r["agent_elo"]) for r in rows] == [("", ""), ("3", "1100.0"), ("", "")]


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    pytest.importorskip("django", reason="the server's extra is not installed: pip install 'arena[server]'")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [sys.executable, "-m", "arena", "serve", str(tmp_path / "class"), "--port", str(port)]
        run = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"arena: error: cannot listen on 127.0.0.1:{port}: Address already in use; give another --port"
    ]
    assert not (tmp_path / "class").exists(), "nothing made before the server can start"


def test_the_migrations_match_the_models(django_class: Path) -> None:
    from django.core.management import call_command

    call_command("makemigrations", "classroom", "--check", "--dry-run", verbosity=0)


def test_a_cluster_the_ladder_could_not_trust_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("django", reason="the server's extra is not installed: pip install 'arena[server]'")
    from tests.server_kit import free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "DASK_"))}

    def serve(*flags: str) -> list[str]:
        args = [sys.executable, "-m", "arena", "serve", str(tmp_path / "class"), "--port", str(free_port())]
        run = subprocess.run([*args, *flags], capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
        assert run.returncode == 1, run.stderr
        return run.stderr.strip().splitlines()

    assert serve("--cluster", "tcp://127.0.0.1:9") == [
        "arena: error: --cluster tcp://127.0.0.1:9: give the scheduler's tls://HOST:8786 address, started "
        "with the class's certificates (see 'arena cluster-certs'): anyone could join a plain tcp:// one and "
        "forge games"
    ]
    if importlib.util.find_spec("distributed") is not None:
        (said,) = serve("--cluster", "tls://127.0.0.1:9")
        assert said.startswith("arena: error: a tls:// cluster needs the class's certificates: give their")
    assert not (tmp_path / "class").exists(), "nothing made before the server can start"


def test_the_web_server_weighs_more_than_the_games() -> None:
    from arena.sandbox import CPU_WEIGHT, _own_cgroups
    from arena.server.serve import WEB_PRECEDENCE, _start, web_group

    group = web_group()
    if group is None:
        pytest.skip("no cpu cgroup arena may make here")
    try:
        child = _start([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), group)
        try:
            inside = Path(f"/proc/{child.pid}/cgroup").read_text()
        finally:
            child.kill()
            child.wait()
        assert f"/{group.folders[0].name}\n" in inside
        weight = WEB_PRECEDENCE * CPU_WEIGHT * (os.cpu_count() or 1)
        if "cpu" in _own_cgroups():
            assert (group.folders[0] / "cpu.shares").read_text().strip() == str(weight * 1024 // CPU_WEIGHT)
        else:
            assert (group.folders[0] / "cpu.weight").read_text().strip() == str(min(10_000, weight))
    finally:
        assert group.remove(), "the group is removed once its processes are gone"


@pytest.mark.slow
def test_a_pbkdf2_password_still_signs_in_and_is_upgraded_to_argon2id(django_class: Path) -> None:
    from django.contrib.auth import authenticate
    from django.contrib.auth.hashers import PBKDF2PasswordHasher, make_password
    from django.contrib.auth.models import User
    from django.test import RequestFactory

    request = RequestFactory().post("/signin")  # the throttle (axes) asks where an attempt comes from
    old = PBKDF2PasswordHasher()
    user = User.objects.create(username="olga", password=old.encode("kalah 6 by 6", old.salt()))
    assert make_password("x").startswith("argon2$argon2id$"), "new passwords are hashed with Argon2id"
    assert authenticate(request, username="olga", password="wrong") is None
    assert authenticate(request, username="olga", password="kalah 6 by 6") == user
    user.refresh_from_db()
    assert user.password.startswith("argon2$argon2id$v=19$m=102400,t=2,p=8$"), "upgraded, Django's parameters"
    assert authenticate(request, username="olga", password="kalah 6 by 6") == user


def test_one_password_hash_at_a_time_per_process() -> None:
    import threading

    pytest.importorskip("argon2", reason="the server's extra is not installed: pip install 'arena[server]'")
    from arena.server.people import hashing

    inside, most, lock = 0, 0, threading.Lock()

    def hash_once() -> None:
        nonlocal inside, most
        with hashing._turn():
            with lock:
                inside += 1
                most = max(most, inside)
            with hashing._turn():  # a hasher calling its own encode within a turn does not wait for itself
                time.sleep(0.02)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=hash_once) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert most == hashing.HASHING == 1


def test_before_the_class_exists_every_page_that_needs_it_says_so_alike(django_class: Path) -> None:
    """One guard (views/common.in_class): before the class was made, a page answered as each view chose (a
    student's page at 200 without a class, the teacher's pages a redirect or a message, a join form that
    took any code), now each the same one line."""
    from django.test import Client

    from arena.server.models import Role
    from arena.server.people import members as accounts
    from arena.server.views.common import NO_CLASS

    student, teacher = Client(), Client()
    student.force_login(accounts.add_member("ida", "a long password 5").user)
    teacher.force_login(accounts.add_member("tom", "a long password 6", Role.TEACHER).user)
    for client, method, path in (
        (student, "get", "/me"),
        (student, "post", "/me/upload"),
        (student, "get", "/ladder"),
        (student, "get", "/games/1"),
        (teacher, "get", "/teacher"),
        (teacher, "post", "/teacher/settings"),
        (teacher, "post", "/teacher/freeze"),
        (Client(), "get", "/join"),
    ):
        answer = getattr(client, method)(path)
        assert answer.status_code == 409 and NO_CLASS in answer.content.decode(), (path, answer)
    for path in ("/ladder.json", "/final.json"):
        answer = student.get(path)
        assert answer.status_code == 409 and answer.json() == {"error": NO_CLASS}, path
    assert Client().post("/api/submit").json() == {"error": NO_CLASS}


@pytest.mark.slow
def test_a_playing_ladder_draws_its_bot_pages_now_and_then(tmp_path: Path) -> None:
    """The bot pages' rating history is a pass over every game: a playing ladder's snapshot, rewritten every
    few seconds, draws them again only every PAGES_S, or at once for a bot that has none; settled, always.
    (Drawn again: the file is replaced, a new inode.)"""
    import json

    from arena.api import Tournament
    from arena.match.clock import TimeControl
    from arena.server.standings import ladder
    from arena.tournament.settings import Settings
    from tests import classroom

    classroom.build(tmp_path / "arena.sqlite", rounds=1)
    pages = tmp_path / ladder.BOTS
    with Tournament(tmp_path, Settings("kalah", TimeControl(1000, 10_000), 3)) as cup:
        ladder.write_snapshot(cup, "playing", False)
        drawn = pages.stat().st_ino
        ladder.write_snapshot(cup, "playing", False)
        assert pages.stat().st_ino == drawn, "drawn again within PAGES_S"
        data = json.loads(pages.read_text())
        data.pop("sofia")
        pages.write_text(json.dumps(data))
        ladder.write_snapshot(cup, "playing", False)
        assert "sofia" in json.loads(pages.read_text()), "a bot without its page gets it at once"
        stale = time.time() - ladder.PAGES_S - 1
        os.utime(pages, (stale, stale))
        drawn = pages.stat().st_ino
        ladder.write_snapshot(cup, "playing", False)
        assert pages.stat().st_ino != drawn, "drawn again after PAGES_S"
        drawn = pages.stat().st_ino
        ladder.write_snapshot(cup, "settled", True)
        assert pages.stat().st_ino != drawn, "a settled ladder's pages are drawn at once"


@pytest.mark.slow
def test_the_ladder_keeps_its_ratings_and_rates_only_whats_new(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A snapshot's TrueSkill (its standings and its bot pages' history, from one pass) is the kept state
    (rated.json) advanced by the games since, equal to a full pass float for float: after games stored out
    of schedule order, across a restart (each snapshot reads the file back), and after a file cut short by
    a kill -9 or otherwise unfit, which is rated again, never trusted."""
    import json
    import random

    from arena.api import Tournament
    from arena.game.rules import parse_rules
    from arena.match.clock import TimeControl
    from arena.server.standings import ladder, rated
    from arena.stats import ratings
    from arena.store import queries
    from arena.tournament.schedule import Slot
    from arena.tournament.settings import Settings
    from tests import classroom

    classroom.build(tmp_path / "arena.sqlite", rounds=1)
    rng, rules = random.Random(1), parse_rules("kalah")

    def one_pass_only(*args: object, **kwargs: object) -> None:
        raise AssertionError("a snapshot rated the field's games a second time")

    trueskill_ratings = ratings.trueskill_ratings
    monkeypatch.setattr(ratings, "rating_history", one_pass_only)
    monkeypatch.setattr(ratings, "trueskill_ratings", one_pass_only)
    with Tournament(tmp_path, Settings("kalah", TimeControl(1000, 10_000), 3)) as cup:
        bots = [b for b in cup.store.db.execute("SELECT name, digest FROM bots")]

        def play(rnd: int, count: int) -> None:
            from arena.match.bots import Bot

            field = [Bot(n, ("true",), tmp_path, tmp_path / f"{n}.py", d) for n, d in bots]
            pairs = rng.sample([(s, n) for s in field for n in field if s is not n], count)  # one game a pair
            for k, (south, north) in enumerate(pairs):
                record = classroom._game(rules, south, north, {b.name: 1 for b in field}, rng)
                cup.store.add_game(Slot(rnd, f"{k:06d}", south, north), record)

        def full() -> dict[int, ratings.Skill]:
            field = queries.field_ids(cup.store)
            return trueskill_ratings(queries.rating_games(cup.store, field), field)

        ladder.write_snapshot(cup, "playing", False)
        assert (tmp_path / ladder.BOTS).is_file()
        first = rated.read(tmp_path)
        assert first is not None and first.skills == full() and first.games == cup.store.count_games()
        play(5, 6)
        play(3, 6)  # stored after round 5's: earlier in schedule order, as a late worker's games are
        ladder.write_snapshot(cup, "playing", False)
        kept = rated.read(tmp_path)
        assert kept is not None and kept.skills == full() and kept.games == first.games + 12
        board = {row["bot"]: row["mu"] for row in ladder.snapshot(tmp_path)["board"]}
        names = dict(cup.store.db.execute("SELECT id, name FROM bots"))
        assert board == {names[i]: round(s.mu, 2) for i, s in full().items()}
        whole = (tmp_path / rated.RATED).read_text()
        for unfit in (whole[: len(whole) // 2], whole.replace('"every": ', '"every": -'), "[]", ""):
            (tmp_path / rated.RATED).write_text(unfit)
            assert rated.read(tmp_path) is None
            play(9 + len(unfit), 2)
            ladder.write_snapshot(cup, "playing", False)
            again = rated.read(tmp_path)
            assert again is not None and again.skills == full() and again.games == cup.store.count_games()
        assert json.loads((tmp_path / ladder.SNAPSHOT).read_text())["games"] == cup.store.count_games()
