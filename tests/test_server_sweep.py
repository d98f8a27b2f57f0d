"""Every page read as a person reads it: each address of the URL conf (as the access test walks it), opened
as the teacher, a student, another student, a member with no bot and a visitor signed out, in each phase of
a class's day (before any upload, the ladder playing, frozen in the undo window, the final played, the
results released), in a class whose bots speak on stderr, crash and time out. A page's visible text must
hold nothing no person should read (tests/pagetext.py: Python reprs, None, nan, template names, raw times,
UTC beside the reader's own zone), its title must be text, and every HTML answer, a 404 too, is the site's
page with its navigation. Release day printed the reference games' list of dicts on "Your result".

One class is carried through the phases (its games played once by arena, a second or two each), Django's
test client reads the pages; Chromium opens only the pages a phone opens, for their width (390 px).
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.pagetext import findings
from tests.server_kit import need_extra, setup_django

need_extra()

SPEAKS = """\
import sys
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        b = [int(x) for x in w[2:]]
        print("thinking about", b[:3], "{'depth': 2}", file=sys.stderr, flush=True)
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""
CRASHES = """\
import sys
n = 0
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        n += 1
        if n == 3:
            raise SystemExit("out of ideas")
        b = [int(x) for x in w[2:]]
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""
STALLS = """\
import sys
n = 0
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        n += 1
        while n == 2:
            pass
        b = [int(x) for x in w[2:]]
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""
BOTS = {"alice": SPEAKS, "bob": CRASHES, "carol": STALLS}
ROLES = ("teacher", "alice", "bob", "dave", "anonymous")  # dave: a member with no bot
PHASES = ("empty", "ladder", "frozen", "played", "released")
PHONE = {  # the pages a student opens on a phone: their own, the standings, a bot's, a game, a mistyped one
    ("released", "alice"): ("/me", "/final", "/final/bots/alice"),
    ("ladder", "bob"): ("/versions/1", "/ladder", "/games/1", "/me"),
}
NOT_OURS = ("admin",)  # Django's own admin, for the teacher: its pages are Django's


@dataclass
class Sweep:
    read: int = 0
    found: list[str] = field(default_factory=list)
    phone: dict[str, str] = field(default_factory=dict)  # name -> the HTML a phone opens
    names: set[str] = field(default_factory=set)


def _paths(where: Any, ids: dict[str, Any]) -> dict[str, list[str]]:
    """Each address's paths to open: every game and bot there is, both students' versions by the id and
    by the number they know them by."""
    from arena.server.standings import final, ladder

    def games(folder: Path) -> list[int]:
        return list(range(1, ladder.snapshot(folder).get("games", 0) + 1))[:4]

    def bots(folder: Path) -> list[str]:
        return [row["bot"] for row in ladder.snapshot(folder).get("board", [])]

    refs = ladder.players(where.final / "references")
    ref_games = sorted({g["id"] for p in refs.values() for g in p.get("games", [])})
    versions = sorted({*ids["versions"], 1, 2})
    return {
        "home": ["/"], "signin": ["/signin"], "signout": ["/signout"], "join": ["/join"],
        "join_code": [f"/join/{ids['code']}", "/join/not-the-code"], "setup": ["/setup/not-the-token"],
        "me": ["/me"], "upload": ["/me/upload"], "choose": ["/me/choose"], "token": ["/me/token"],
        "version": [f"/versions/{n}" for n in versions],
        "source": [f"/versions/{n}/source" for n in versions],
        "scrimmage_ask": ["/me/scrimmages"],
        "scrimmage": [f"/scrimmages/{s}" for s in ids["scrimmages"]] or ["/scrimmages/1"],
        "scrimmage_game": [f"/scrimmages/{s}/games/{g}" for s in ids["scrimmages"] for g in (1, 2)],
        "practice_game": ["/practice/alice/1"],
        "ladder": ["/ladder"], "ladder_json": ["/ladder.json"],
        "game": [f"/games/{n}" for n in games(where.ladder)] or ["/games/1"],
        "game_analyse": [f"/games/{n}/analyse" for n in games(where.ladder)[:1]] or ["/games/1/analyse"],
        "ladder_bot": [f"/ladder/bots/{b}" for b in bots(where.ladder)] or ["/ladder/bots/alice"],
        "final": ["/final"], "final_json": ["/final.json"],
        "final_game": [f"/final/games/{n}" for n in games(final.final_folder(where))] or ["/final/games/1"],
        "final_game_analyse": ["/final/games/1/analyse"],
        "final_bot": [f"/final/bots/{b}" for b in bots(final.final_folder(where))] or ["/final/bots/alice"],
        "reference_game": [f"/final/references/games/{n}" for n in ref_games[:4]]
        or ["/final/references/games/1"],
        "teacher": ["/teacher"], "class_settings": ["/teacher/settings"], "freeze": ["/teacher/freeze"],
        "references": ["/teacher/references"], "member_action": ["/teacher/members/1/reset"],
        "gradebook": ["/teacher/gradebook.csv"], "api_submit": ["/api/submit"],
        "api_version": [f"/api/versions/{n}" for n in versions], "admin": ["/admin/"],
    }  # fmt: skip


def _walk(sweep: Sweep, phase: str, clients: dict[str, Any], where: Any, ids: dict[str, Any]) -> None:
    for name, paths in _paths(where, ids).items():
        sweep.names.add(name)
        for path in paths:
            for role in ROLES:
                answer = clients[role].get(path, follow=role != "anonymous")  # a visitor's: to /signin
                sweep.read += 1
                kind = answer.get("Content-Type", "")
                if answer.status_code in (302, 405) or name in NOT_OURS or not kind.startswith("text/html"):
                    continue  # sent to sign in (read as its own address), a form's (POST only), JSON, CSV
                page = answer.content.decode(errors="replace")
                where_ = f"{phase} {role} {path} ({answer.status_code})"
                if "<header>" not in page or 'name="viewport"' not in page:
                    sweep.found.append(f"{where_}: not the site's page (no navigation): {page[:80]!r}")
                for said in findings(page, zoned=role != "anonymous"):
                    sweep.found.append(f"{where_}: {said}")
                for shown in PHONE.get((phase, role), ()):
                    if shown == path:
                        sweep.phone[f"{phase}-{role}-{path.strip('/').replace('/', '-')}"] = page


def _version(where: Any, classroom: Any, member: Any, source: str) -> Any:
    from arena.server.models import Status
    from arena.server.versions import submitting

    data = source.encode()
    sub = submitting.submit(where, classroom, member, f"{member.slug}bot.py", io.BytesIO(data), len(data))
    sub.status = Status.PASSED
    sub.checklist = {"items": [{"name": "a game", "status": "ok", "summary": "played", "stderr": ""}]}
    sub.save()
    member.active = sub
    member.save()
    return sub


def _practice(where: Any, slug: str) -> None:
    """A practice game of `slug`'s KGP agent, stored as the KGP port stores one: their first ladder game."""
    from dataclasses import replace

    from arena.kgp.server import port as kgp
    from arena.match.record import GameRecord
    from arena.store import queries
    from arena.store.writer import STORE_FILE, Store

    with Store(where.ladder / STORE_FILE, create=False) as store:
        records = [GameRecord.from_dict(queries.game_record(store, n) or {}) for n in range(1, 7)]
    record = next(r for r in records if slug in (r.south, r.north))
    named = {slug: kgp.agent_name(slug)}
    renamed = replace(
        record,
        south=named.get(record.south, record.south),
        north=named.get(record.north, record.north),
        winner=named.get(record.winner or "", record.winner),
        stderr={},
    )
    kgp.store(where, slug, renamed, "test")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sweep]:
    from django.core.management import call_command
    from django.test import Client
    from django.utils import timezone

    setup_django(tmp_path_factory.mktemp("sweep") / "class")
    call_command("flush", interactive=False, verbosity=0)
    from django.conf import settings

    from arena.api import Tournament
    from arena.match.bots import load_bot
    from arena.match.clock import TimeControl
    from arena.server import scrimmages
    from arena.server.classdir import ClassDir
    from arena.server.models import Classroom, FinalState, Role, Visibility
    from arena.server.people import members as accounts
    from arena.server.standings import field as fields
    from arena.server.standings import ladder
    from arena.tournament.settings import Settings

    where = ClassDir(Path(settings.ARENA_CLASS_DIR))
    played = (where.bots, where.ladder, where.final, where.submissions, where.scrimmages, where.practice)
    for folder in played:
        shutil.rmtree(folder, ignore_errors=True)
    where.make()
    classroom = Classroom.objects.create(name="Sweep", references=["greedy"])
    members = {"teacher": accounts.add_member("teach", "correct horse 42", Role.TEACHER)}
    for name in (*BOTS, "dave"):
        members[name] = accounts.add_member(name, f"a long password of {name}")
    clients = {"anonymous": Client()}
    for role in ROLES[:-1]:
        clients[role] = Client()
        clients[role].force_login(members[role].user)
    ids: dict[str, Any] = {"code": classroom.join_code, "versions": [], "scrimmages": []}
    found = Sweep()
    _walk(found, "empty", clients, where, ids)

    versions = {name: _version(where, classroom, members[name], source) for name, source in BOTS.items()}
    ids["versions"] = [v.pk for v in versions.values()]
    games = Settings(clock=TimeControl(move_ms=150), openings=0)
    fields.sync(where.bots, fields.wanted(where, classroom))
    with Tournament(where.ladder, games) as cup:
        entered = cup.enter(where.bots)
        digests = {bot.name: bot.digest for bot in entered.bots}
        ladder.remember_versions(where.ladder, digests, fields.versions(where.bots))
        cup.run(where.bots, rounds=1)
        ladder.write_snapshot(cup, "settled: waiting for a new version", True)
    Classroom.objects.update(ladder_note="settled: waiting for a new version")
    _practice(where, "alice")
    scrimmage = scrimmages.ask(where, classroom, members["alice"], versions["alice"], "bob")
    assert scrimmages.play(where, scrimmage, games).status == "done", scrimmage.note
    ids["scrimmages"] = [scrimmage.pk]
    _walk(found, "ladder", clients, where, ids)

    Classroom.objects.update(freeze_at=timezone.now(), undo_seconds=3600)
    _walk(found, "frozen", clients, where, ids)

    Classroom.objects.update(freeze_at=timezone.now() - timedelta(hours=1), undo_seconds=60)
    final_bots = where.final / "bots"
    fields.sync(final_bots, fields.wanted(where, classroom))
    with Tournament(where.final / "ranking", games) as cup:
        cup.run(final_bots, rounds=1)
        snap = ladder.write_snapshot(cup, "the final", True, pages="final")
    with Tournament(where.final / "references", games) as cup:
        for name in ("alice", "bob"):
            cup.run([load_bot(final_bots / name), load_bot(where.references / "greedy.py")], 1, gauntlet=name)
        ladder.write_games(cup)
        tally: dict[str, dict[str, list[int]]] = {}
        for record in cup.records():
            for me in ("alice", "bob"):
                if me in (record["south"], record["north"]):
                    wdl = tally.setdefault(me, {}).setdefault("greedy", [0, 0, 0])
                    wdl[0 if record["winner"] == me else 1 if record["winner"] is None else 2] += 1
    results = {"board": snap["board"], "references": tally, "frozen": fields.versions(final_bots)}
    (where.final / "results.json").write_text(json.dumps(results))
    Classroom.objects.update(final_state=FinalState.DONE)
    _walk(found, "played", clients, where, ids)

    Classroom.objects.update(visibility=Visibility.RELEASED)
    _walk(found, "released", clients, where, ids)
    yield found
    for folder in played:  # the next module's class starts as new (Django's class folder is the process's)
        shutil.rmtree(folder, ignore_errors=True)
    where.make()


def test_every_address_is_swept(sweep: Sweep) -> None:
    from arena.server.urls import urlpatterns

    assert {p.name for p in urlpatterns if getattr(p, "name", None)} | {"admin"} == sweep.names


def test_every_page_in_every_phase_reads_as_text(sweep: Sweep) -> None:
    assert sweep.read > 500, sweep.read
    assert sweep.found == [], f"{len(sweep.found)} findings, the first of each kind:\n" + "\n".join(
        {
            said.partition(": ")[2][:40] + said.partition(" (")[0].split(" ", 2)[-1]: said
            for said in sweep.found
        }.values()
    )


def test_the_pages_a_phone_opens_fit_390_px(sweep: Sweep, tmp_path: Path) -> None:
    """The student's own page on release day, the final and their bot's page, and a mistyped version: in
    Chromium at 390 px, none scrolls sideways (the page itself; a wide table scrolls in its own box)."""
    driver = _chromium()
    try:
        opened = {"released-alice-me", "released-alice-final", "released-alice-final-bots-alice"}
        opened |= {"ladder-bob-versions-1", "ladder-bob-ladder", "ladder-bob-games-1", "ladder-bob-me"}
        assert set(sweep.phone) == opened, sorted(sweep.phone)
        wide = {}
        from arena.report import look

        static = f'href="{look.STATIC.as_uri()}/'  # the site's stylesheet, as the server serves it
        for name, page in sweep.phone.items():
            file = tmp_path / f"{name}.html"
            file.write_text(page.replace('href="/static/', static))
            driver.get(file.as_uri())
            laid = "const e = document.documentElement; return Math.max(e.scrollWidth, e.clientWidth)"
            if driver.execute_script(laid) > 390:  # a page without a phone's viewport is laid out 980 px wide
                wide[name] = driver.execute_script(laid)
        assert wide == {}, f"wider than a phone (px): {wide}"
    finally:
        driver.quit()


def _chromium() -> Any:
    """Headless Chromium (skipped, saying so, where it is not installed; never on CI)."""
    import os

    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    from tests.test_browser import _driver_paths

    paths = _driver_paths()
    if paths is None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail("chromium and chromium-driver must be installed on CI")
        pytest.skip("chromium or chromium-driver is not installed (apt-get install chromium-driver)")
    options = Options()
    options.binary_location = paths[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(arg)
    options.add_experimental_option(  # a phone's screen: the page's viewport is honoured as a phone's is
        "mobileEmulation", {"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 3.0}}
    )
    driver = webdriver.Chrome(options=options, service=Service(paths[1]))
    driver.set_page_load_timeout(60)
    return driver
