"""Who sees what (arena/server/people/access.py), as a matrix: every address the server answers against
anonymous, student A, student B and the teacher. Each forbidden cell is asserted forbidden by its status and
by what the answer must not hold (another student's source, stderr, checklist; the gradebook), so a guessed id
or a guessed address gets nothing. The class is real: two students' versions stored by the upload code, a
ladder and a final played by arena (two games each), Django's test client in this process.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.server_kit import need_extra, setup_django

need_extra()
pytestmark = pytest.mark.slow  # the module's class, with its ladder and final played, takes 6-16 s to set up

BOT = """\
import sys
# {secret}-SOURCE: a marker in the source, never printed
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        b = [int(x) for x in w[2:]]
        print("{secret}-STDERR", file=sys.stderr, flush=True)
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""
SECRETS = {"alice": "ALICE-7Q", "bob": "BOB-3Z"}


@dataclass
class World:
    clients: dict[str, Any]
    versions: dict[str, int]
    tokens: dict[str, str]
    game: int
    final_game: int
    members: dict[str, int]
    scrimmage: int


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    import io

    from django.core.management import call_command
    from django.test import Client

    root = tmp_path_factory.mktemp("access") / "class"
    setup_django(root)
    call_command("flush", interactive=False, verbosity=0)
    from django.conf import settings

    from arena.api import Tournament
    from arena.match.clock import TimeControl
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom, Role, Status
    from arena.server.people import members as accounts
    from arena.server.standings import field, ladder
    from arena.server.versions import submitting
    from arena.tournament.settings import Settings

    where = ClassDir(Path(settings.ARENA_CLASS_DIR))
    for folder in (where.bots, where.ladder, where.final, where.submissions):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    where.make()
    classroom = Classroom.objects.create(name="Access")
    teacher = accounts.add_member("teach", "correct horse 42", Role.TEACHER)
    members = {"teacher": teacher, "carol": accounts.add_member("carol", "another long pw 9")}
    versions = {}
    for name, secret in SECRETS.items():
        member = accounts.add_member(name, f"pw {secret} long")
        data = BOT.format(secret=secret).encode()
        sub = submitting.submit(where, classroom, member, f"{name}.py", io.BytesIO(data), len(data))
        sub.status = Status.PASSED
        sub.checklist = {
            "items": [{"name": "game 1", "status": "ok", "summary": "", "stderr": f"{secret}-CHECK"}]
        }
        sub.save()
        member.active = sub
        member.save()
        members[name], versions[name] = member, sub.pk
    settings_ = Settings(clock=TimeControl(move_ms=500), openings=0)
    field.sync(where.bots, field.wanted(where, classroom))
    with Tournament(where.ladder, settings_) as cup:
        entered = cup.enter(where.bots)  # as the ladder's worker enters them, their class versions kept
        digests = {bot.name: bot.digest for bot in entered.bots}
        ladder.remember_versions(where.ladder, digests, field.versions(where.bots))
        cup.run(where.bots, rounds=1)
        ladder.write_snapshot(cup, "test", True)
    _practice(where, "alice")
    final_bots = where.final / "bots"
    field.sync(final_bots, field.wanted(where, classroom))
    with Tournament(where.final / "ranking", settings_) as cup:
        cup.run(final_bots, rounds=1)
        snap = ladder.write_snapshot(cup, "final", True)
    from arena.match.bots import load_bot

    with Tournament(where.final / "references", settings_) as cup:
        pair = [load_bot(final_bots / "alice"), load_bot(where.references / "greedy.py")]
        cup.run(pair, 1, gauntlet="alice")
        ladder.write_games(cup)
    results = {"board": snap["board"], "references": {}, "frozen": field.versions(final_bots)}
    (where.final / "results.json").write_text(json.dumps(results))
    from arena.server import scrimmages
    from arena.server.models import Submission

    alice_version = Submission.objects.get(pk=versions["alice"])
    scrimmage = scrimmages.ask(where, classroom, members["alice"], alice_version, "bob")
    assert scrimmages.play(where, scrimmage, settings_).status == "done", scrimmage.note
    clients = {"anonymous": Client()}
    for role in ("alice", "bob", "teacher"):
        clients[role] = Client()
        clients[role].force_login(members[role].user)
    yield World(
        clients,
        versions,
        {n: members[n].token for n in SECRETS},
        game=1,
        final_game=1,
        members={n: m.pk for n, m in members.items()},
        scrimmage=scrimmage.pk,
    )


def _practice(where: Any, slug: str) -> None:
    """A practice game of `slug`'s KGP agent, as the KGP port stores one: the ladder's game 1, replayed."""
    from dataclasses import replace

    from arena.kgp.server import port as kgp
    from arena.match.record import GameRecord
    from arena.store import queries
    from arena.store.writer import STORE_FILE, Store

    store = Store(where.ladder / STORE_FILE, create=False)
    try:
        record = GameRecord.from_dict(queries.game_record(store, 1) or {})
    finally:
        store.close()
    agent = kgp.agent_name(slug)
    assert slug in (record.south, record.north), record
    named = {slug: agent}
    played = replace(
        record,
        south=named.get(record.south, record.south),
        north=named.get(record.north, record.north),
        winner=named.get(record.winner or "", record.winner),
        stderr={},
    )
    kgp.store(where, slug, played, "test")


SIGNIN = "signin"  # anonymous: sent to sign in
OK, DENIED = "ok", "denied"  # denied: 403 or 404, never the content


def _cells(w: World) -> list[tuple[str, str, str, dict[str, str], tuple[str, ...]]]:
    """(url name, method, path, expected by role, what a denied answer must not hold)."""
    a, b = w.versions["alice"], w.versions["bob"]
    alice_secret = (SECRETS["alice"],)
    everyone = {"anonymous": OK, "alice": OK, "bob": OK, "teacher": OK}
    members = {"anonymous": SIGNIN, "alice": OK, "bob": OK, "teacher": OK}
    alice_only = {"anonymous": SIGNIN, "alice": OK, "bob": DENIED, "teacher": OK}
    teacher = {"anonymous": SIGNIN, "alice": DENIED, "bob": DENIED, "teacher": OK}
    return [
        ("home", "get", "/", everyone, ()),
        ("signin", "get", "/signin", everyone, ()),
        ("signout", "post", "/signout", everyone, ()),
        ("join", "get", "/join", everyone, ()),
        ("join_code", "get", "/join/whatever", everyone, ()),
        ("setup", "get", "/setup/not-the-token", {r: DENIED for r in everyone}, ()),
        ("me", "get", "/me", members, ()),
        ("upload", "post", "/me/upload", members, ()),
        ("choose", "post", f"/me/choose?version={a}", alice_only, ()),
        ("token", "post", "/me/token", members, ()),
        ("version", "get", f"/versions/{a}", alice_only, alice_secret),
        ("source", "get", f"/versions/{a}/source", alice_only, alice_secret),
        ("scrimmage_ask", "post", f"/me/scrimmages?version={a}&opponent=none", alice_only, ()),
        ("scrimmage", "get", f"/scrimmages/{w.scrimmage}", alice_only, ()),
        ("scrimmage_game", "get", f"/scrimmages/{w.scrimmage}/games/1", alice_only, alice_secret),
        ("practice_game", "get", "/practice/alice/1", alice_only, ("alice (KGP)",)),
        ("ladder", "get", "/ladder", members, ()),
        ("ladder_json", "get", "/ladder.json", members, ()),
        ("game", "get", f"/games/{w.game}", members, ()),
        ("game_analyse", "post", f"/games/{w.game}/analyse", members, ()),  # refused in a line, not a 403
        ("ladder_bot", "get", "/ladder/bots/bob", members, ()),
        ("final", "get", "/final", teacher, ()),
        ("final_json", "get", "/final.json", teacher, ("alice",)),
        ("final_game", "get", f"/final/games/{w.final_game}", teacher, ("alice",)),
        ("final_game_analyse", "post", f"/final/games/{w.final_game}/analyse", teacher, ()),
        ("final_bot", "get", "/final/bots/alice", teacher, ("alice",)),
        ("reference_game", "get", "/final/references/games/1", teacher, ("STDERR",)),
        ("teacher", "get", "/teacher", teacher, (w.tokens["alice"],)),
        ("class_settings", "post", "/teacher/settings", teacher, ()),
        ("freeze", "post", "/teacher/freeze", teacher, ()),
        ("references", "post", "/teacher/references", teacher, ()),
        ("member_action", "post", f"/teacher/members/{w.members['carol']}/reset", teacher, ("new password",)),
        ("gradebook", "get", "/teacher/gradebook.csv", teacher, ("alice",)),
        ("api_submit", "post", "/api/submit", {r: "token" for r in everyone}, ()),
        ("api_version", "get", f"/api/versions/{a}", {r: "token" for r in everyone}, ()),
        (
            "admin",
            "get",
            "/admin/",
            {"anonymous": "admin", "alice": "admin", "bob": "admin", "teacher": OK},
            (),
        ),
        (
            "version_b",
            "get",
            f"/versions/{b}",
            {"anonymous": SIGNIN, "alice": DENIED, "bob": OK, "teacher": OK},
            (),
        ),
    ]


def _throwaway(world: World, role: str) -> Any:
    """A second session of `role`'s, to sign out of without ending the matrix's own."""
    from django.test import Client

    from arena.server.models import Member

    client = Client()
    if role in world.members:
        client.force_login(Member.objects.get(pk=world.members[role]).user)
    return client


def _send(client: Any, method: str, path: str) -> Any:
    if method == "post":
        base, _, query = path.partition("?")
        data = dict(pair.split("=") for pair in query.split("&")) if query else {}
        return client.post(base, data)
    return client.get(path)


@pytest.mark.slow
def test_every_address_is_in_the_matrix(world: World) -> None:
    from arena.server.urls import urlpatterns

    names = {p.name for p in urlpatterns if getattr(p, "name", None)} | {"admin"}
    assert names == {cell[0] for cell in _cells(world)} - {"version_b"}


@pytest.mark.slow
@pytest.mark.parametrize("role", ["anonymous", "alice", "bob", "teacher"])
def test_the_matrix(world: World, role: str) -> None:
    from django.conf import settings

    settings_hidden = []
    for name, method, path, expected, secret in _cells(world):
        want = expected[role]
        client = world.clients[role] if name != "signout" else _throwaway(world, role)
        answer = _send(client, method, path)
        body = answer.content.decode(errors="replace")
        where = f"{role} {method.upper()} {path}: {answer.status_code}"
        if want == SIGNIN:
            assert answer.status_code == 302 and answer["Location"].startswith(settings.LOGIN_URL), where
        elif want == DENIED:
            assert answer.status_code in (403, 404), where
            for text in secret:
                assert text not in body, f"{where} shows {text}"
        elif want == "token":
            assert answer.status_code == 401, where  # no token: no session lets anyone in
        elif want == "admin":
            assert answer.status_code == 302 and "/admin/login" in answer["Location"], where
        else:
            assert answer.status_code in (200, 302), where
        settings_hidden.append(name)


def test_a_student_sees_their_own_stderr_in_a_replay_and_never_the_other(world: World) -> None:
    mine = world.clients["alice"].get(f"/games/{world.game}").content.decode()
    assert f"{SECRETS['alice']}-STDERR" in mine
    assert f"{SECRETS['bob']}-STDERR" not in mine
    assert "Only its author and the teacher see the stderr of bob" in mine
    everything = world.clients["teacher"].get(f"/games/{world.game}").content.decode()
    assert f"{SECRETS['alice']}-STDERR" in everything and f"{SECRETS['bob']}-STDERR" in everything


def test_a_scrimmage_shows_the_askers_stderr_only_and_stays_off_the_ladder(world: World) -> None:
    import sqlite3

    from django.conf import settings

    mine = world.clients["alice"].get(f"/scrimmages/{world.scrimmage}/games/2").content.decode()
    assert f"{SECRETS['alice']}-STDERR" in mine and f"{SECRETS['bob']}-STDERR" not in mine
    assert "Only its author and the teacher see the stderr of bob" in mine
    everything = world.clients["teacher"].get(f"/scrimmages/{world.scrimmage}/games/2").content.decode()
    assert f"{SECRETS['bob']}-STDERR" in everything
    listed = world.clients["alice"].get(f"/scrimmages/{world.scrimmage}").content.decode()
    assert listed.count('<tr class="scrimmage-game">') == 2, "a game from each side"
    root = Path(settings.ARENA_CLASS_DIR)
    for store in (root / "ladder" / "arena.sqlite", root / "final" / "ranking" / "arena.sqlite"):
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM games").fetchone()[0] == 2, f"{store}: its own games only"
    board = world.clients["alice"].get("/ladder.json").json()["board"]
    assert sum(row["games"] for row in board) == 4, (
        "the ladder's standings count its 2 games, not the scrimmage's"
    )


def test_a_scrimmage_keeps_which_version_of_the_opponent_played(world: World) -> None:
    """Its fault's reproduce command (the teacher's) names the opponent's version that played, not the one
    active when the page is read: the games' folder says which class version each bot that played is."""
    from django.conf import settings

    from arena.server import scrimmages
    from arena.server.classdir import ClassDir
    from arena.server.models import Scrimmage
    from arena.server.standings import ladder

    played = scrimmages.folder(
        ClassDir(Path(settings.ARENA_CLASS_DIR)), Scrimmage.objects.get(pk=world.scrimmage)
    )
    kept = json.loads((played / "games" / ladder.VERSIONS).read_text())
    assert sorted(kept.values()) == ["v1", "v1"], kept  # alice's asked-for version and bob's active one


def test_scrimmages_are_limited_per_day(world: World) -> None:
    from django.contrib.messages import get_messages

    from arena.server.models import Classroom, Scrimmage

    Classroom.objects.update(scrimmages_per_day=2)
    try:
        alice = world.clients["alice"]
        form = {"version": str(world.versions["alice"]), "opponent": "bob"}
        first = alice.post("/me/scrimmages", form)
        assert first.status_code == 302 and "/scrimmages/" in first["Location"]
        refused = alice.post("/me/scrimmages", form, follow=True)
        said = [str(m) for m in get_messages(refused.wsgi_request)] or [refused.content.decode()]
        assert (
            any("you have asked for 2 scrimmages in the last 24 hours, the class's limit" in m for m in said)
            or "the class&#x27;s limit" in refused.content.decode()
        )
        assert Scrimmage.objects.filter(member__slug="alice").count() == 2
        theirs = alice.post("/me/scrimmages", {"version": str(world.versions["bob"]), "opponent": "bob"})
        assert theirs.status_code == 404, "another's version is no version of theirs"
        Classroom.objects.update(scrimmages_per_day=0)
        off = html.unescape(alice.post("/me/scrimmages", form, follow=True).content.decode())
        assert "the teacher has turned scrimmages off for this class" in off
        assert 'id="ask-scrimmage"' not in off
    finally:
        Classroom.objects.update(scrimmages_per_day=10)
        Scrimmage.objects.exclude(pk=world.scrimmage).delete()


def test_the_ladders_poll_brings_the_reports_standings_only_when_they_changed(world: World) -> None:
    """ladder.json carries the report's leaderboard and matrix for the page to put in place, compressed,
    and none to a page that shows the latest already (a settled ladder's poll stays small)."""
    import gzip

    alice = world.clients["alice"]
    fresh = alice.get("/ladder.json", HTTP_ACCEPT_ENCODING="gzip")
    assert fresh["Content-Encoding"] == "gzip"
    data = json.loads(gzip.decompress(fresh.content))
    assert 'id="leaderboard-table"' in data["standings"] and 'id="h2h"' in data["standings"]
    assert "standings" not in alice.get("/ladder.json", {"since": data["updated"]}).json()
    assert "standings" in alice.get("/ladder.json", {"since": "2000-01-01T00:00:00+00:00"}).json()


def test_the_checklist_states_the_memory_cap_and_elo_is_whole(world: World) -> None:
    import re

    from arena.tournament.settings import Settings

    checklist = world.clients["alice"].get(f"/versions/{world.versions['alice']}").content.decode()
    assert f"Memory: a bot may use at most {Settings().memory_mb} MB here" in checklist
    ladder = world.clients["alice"].get("/ladder").content.decode()
    assert re.search(r'<td class="elo">(-?\d+ ± \d+|[≤≥] -?\d+)<', ladder), "Elo in whole points"
    assert not re.search(r"\d\.\d+ ±|[≤≥] -?\d+\.\d", ladder)


def test_every_time_is_one_that_reads_in_the_readers_zone(world: World) -> None:
    """The ladder's update and games, a game, a version's upload: each a <time> in UTC that the page's
    script shows in the reader's zone, with UTC on hover; no raw ISO text (the ladder said
    'updated 2026-11-27T03:40:00+00:00')."""
    import re

    alice = world.clients["alice"]
    stamp = re.compile(r'<time datetime="[\d:T-]+\+00:00" class="utc" title="[\d -]+:\d\d UTC">')
    version = f"/versions/{world.versions['alice']}"
    for path, least in (("/ladder", 3), ("/games/1", 1), ("/me", 1), (version, 1)):
        shown = alice.get(path).content.decode()
        assert len(stamp.findall(shown)) >= least, (path, shown)
        visible = re.sub(r"<[^>]*>", "", re.sub(r"(?s)<script.*?</script>", "", shown))
        assert not re.search(r"\d\d:\d\d:\d\d", visible), (path, "a raw timestamp on the page")


def test_guessing_ids_gets_the_same_answer_as_no_such_id(world: World) -> None:
    bob = world.clients["bob"]
    alice_version = world.versions["alice"]
    for path in (f"/versions/{alice_version}", f"/versions/{alice_version}/source"):
        theirs, none = bob.get(path), bob.get(path.replace(str(alice_version), "999999"))
        assert theirs.status_code == none.status_code == 404
        assert SECRETS["alice"] not in theirs.content.decode()
    theirs, numbers = bob.get("/practice/alice/1"), (bob.get("/practice/alice/999"), bob.get("/practice/x/1"))
    assert theirs.status_code == 404

    def page(answer: Any) -> str:  # the site's 404 page, its sign-out form's token masked anew each time
        return re.sub(r'name="csrfmiddlewaretoken" value="\w+"', "", answer.content.decode())

    assert page(theirs) == page(numbers[0]) == page(numbers[1])


def test_the_api_reads_only_the_tokens_own_versions(world: World) -> None:
    from arena.server.models import Member

    client = world.clients["anonymous"]
    alice, bob = (f"Bearer {Member.objects.get(slug=n).token}" for n in ("alice", "bob"))
    path = f"/api/versions/{world.versions['alice']}"
    assert client.get(path, HTTP_AUTHORIZATION=alice).status_code == 200
    refused = client.get(path, HTTP_AUTHORIZATION=bob)
    assert refused.status_code == 404 and SECRETS["alice"] not in refused.content.decode()
    assert client.get(path, HTTP_AUTHORIZATION="Bearer nonsense").status_code == 401


def test_a_hidden_ladder_is_hidden_from_students_only(world: World) -> None:
    from arena.server.models import Classroom, Visibility

    Classroom.objects.update(visibility=Visibility.HIDDEN)
    try:
        for role in ("alice", "bob"):
            for path in ("/ladder", "/ladder.json", f"/games/{world.game}"):
                answer = world.clients[role].get(path)
                assert answer.status_code == 403, (role, path)
                assert "STDERR" not in answer.content.decode()
        assert world.clients["teacher"].get("/ladder.json").status_code == 200
    finally:
        Classroom.objects.update(visibility=Visibility.OPEN)


def test_released_results_reach_students_with_their_own_stderr_only(world: World) -> None:
    from arena.server.models import Classroom, Visibility

    Classroom.objects.update(visibility=Visibility.RELEASED)
    try:
        board = world.clients["bob"].get("/final.json").json()["board"]
        assert {row["bot"] for row in board} == {"alice", "bob"}
        replay = world.clients["bob"].get(f"/final/games/{world.final_game}").content.decode()
        assert f"{SECRETS['bob']}-STDERR" in replay and f"{SECRETS['alice']}-STDERR" not in replay
        assert world.clients["bob"].get("/teacher/gradebook.csv").status_code == 403
        theirs = world.clients["bob"].get("/final/references/games/1").content.decode()
        assert "alice" in theirs and f"{SECRETS['alice']}-STDERR" not in theirs
        mine = world.clients["alice"].get("/final/references/games/1").content.decode()
        assert f"{SECRETS['alice']}-STDERR" in mine
    finally:
        Classroom.objects.update(visibility=Visibility.OPEN)


def test_a_bots_page_is_the_reports_with_its_source_for_its_author_and_the_teacher(world: World) -> None:
    from arena.server.models import Submission

    standings = world.clients["alice"].get("/ladder").content.decode()
    assert '<a href="/ladder/bots/bob">bob</a>' in standings, "a name in the standings opens its page"
    source = f'href="/versions/{world.versions["bob"]}/source"'
    for role, sees in (("alice", False), ("bob", True), ("teacher", True)):
        page = world.clients[role].get("/ladder/bots/bob").content.decode()
        assert 'class="botpage" id="bot-bob">' in page and "Results by opponent" in page, role
        assert '<a href="/ladder/bots/alice">alice</a>' in page, role
        assert page.count('<tr class="bot-game">') == 2 and f'href="/games/{world.game}"' in page, role
        assert (source in page) == sees, role
        assert "drawn again every 30 s" in page, "how late its page may be while the ladder plays"
    assert Submission.objects.filter(member__slug="bob").count() == 1
    assert world.clients["alice"].get("/ladder/bots/nobody").status_code == 404
    final = world.clients["teacher"].get("/final/bots/alice").content.decode()
    assert f'href="/versions/{world.versions["alice"]}/source"' in final, "the frozen version's source"
    own = world.clients["alice"].get("/me").content.decode()
    assert '<a href="/ladder/bots/alice" id="my-bot-page">' in own, "a student's page links to their bot's"


def test_a_practice_games_fault_is_reproduced_only_where_a_pipe_can_bring_it_back(world: World) -> None:
    """An agent's fault in a practice game has no lines to pipe (it was sent KGP over its connection; the
    page said `printf ... | python3 -P 'bots/alice (KGP).py'`), its reason still shown; a ladder bot's
    fault, which only the teacher's page carries lines for, runs in its author's folder at the server's
    clock, never the server's copy or another clock."""
    import re
    from dataclasses import replace

    from django.conf import settings

    from arena.kgp.server import port as kgp
    from arena.match.record import Reason
    from arena.server.classdir import ClassDir
    from arena.tournament.settings import Settings

    where = ClassDir(Path(settings.ARENA_CLASS_DIR))
    game, _ = kgp.practice_played(where, "alice")[0]
    agent = kgp.agent_name("alice")
    bot = game.north if game.south == agent else game.south
    before = len(kgp.practice_played(where, "alice"))
    for faulty in (agent, bot):
        winner = bot if faulty == agent else agent
        kgp.store(where, "alice", replace(game, winner=winner, reason=Reason.GARBLED, faulty=faulty,
                                          detail="answered what is not a move"), "test")  # fmt: skip

    def fault(role: str, number: int) -> dict[str, Any]:
        page = world.clients[role].get(f"/practice/alice/{number}")
        assert page.status_code == 200, (role, number)
        found = re.search(r"arenaBlock\(0, (.*?)\); arenaList\(", page.content.decode(), re.S)
        assert found, page.content.decode()
        shown: dict[str, Any] = json.loads(found.group(1))[str(number)]["x"]
        return shown

    for role in ("alice", "teacher"):
        theirs = fault(role, before + 1)
        assert (theirs["bot"], theirs["lines"], theirs["cmd"]) == (agent, [], ""), theirs
        assert "answered what is not a move" in theirs["detail"]
    mine = fault("teacher", before + 2)
    move = f"MOVE {Settings.from_dict(settings.ARENA_SETTINGS).clock.move_ms} "
    assert mine["bot"] == bot and any(line.startswith(move) for line in mine["lines"]), mine
    assert "printf" in mine["cmd"] and "submissions" not in mine["cmd"] and str(where.root) not in mine["cmd"]
    assert fault("alice", before + 2)["cmd"] == ""  # another's bot: its lines are its author's, the teacher's


def test_a_bots_page_has_the_reports_think_time_chart_and_a_game_page_one_title(world: World) -> None:
    """The server's bot page lacked the report's 'think time per move' chart (its think times come from
    replays only the report wrote); a game page said 'Game #1' and then the viewer's 'Game 1: ...'."""
    for role in ("alice", "teacher"):
        page = world.clients[role].get("/ladder/bots/bob").content.decode()
        assert "bob: think time per move, as a share of the limit" in page, role
        assert re.search(r"\d+ moves; mean [\d.]+ ms", page), role
    game = world.clients["alice"].get(f"/games/{world.game}").content.decode()
    titles = re.findall(r"<h[12]\b(?![^>]*\bhidden\b)[^>]*>(Game[^<]*)<", game)
    assert len(titles) == 1 and re.fullmatch(r"Game 1: \w+ vs \w+", titles[0]), titles
