"""A version's checklist on the class server speaks of the student's own copy of the bot: its reproduce lines
run in their folder (`cd mybot && printf ... | python3 bot.py`), never the server's
(class/submissions/carol/1/carol), and a bot.toml asking to read paths is told what holds on this server,
not arena run's --read-only, a flag arena serve does not take."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from arena.server.classdir import ClassDir

CRASHES = (
    b"import sys\nfor line in sys.stdin:\n    if line.startswith(('MOVE', 'QUIT')):\n        sys.exit(3)\n"
)


def _zipped(top: str, *files: tuple[str, bytes]) -> bytes:
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as z:
        for name, data in files:
            z.writestr(f"{top}/{name}", data)
    return packed.getvalue()


def _checked(where: ClassDir, name: str, data: bytes) -> dict[str, Any]:
    from arena.match.clock import TimeControl
    from arena.server.models import Classroom, Member
    from arena.server.people import members as accounts
    from arena.server.versions import checking, submitting
    from arena.tournament.settings import Settings

    classroom = Classroom.current() or Classroom.objects.create(name="C", per_day=100)
    member = Member.objects.filter(slug="carol").first() or accounts.add_member("carol", "a long pw 77")
    version = submitting.submit(where, classroom, member, name, io.BytesIO(data), len(data))
    checked = checking.run_check(where, version, Settings(openings=0, clock=TimeControl(move_ms=2000)))
    items: list[dict[str, Any]] = checked.checklist["items"]
    return {"items": items, "commands": [str(i["command"]) for i in items if i.get("command")]}


@pytest.fixture
def where(django_class: Path) -> ClassDir:
    from arena.server.classdir import ClassDir

    made = ClassDir(django_class)
    shutil.rmtree(made.submissions, ignore_errors=True)
    made.make()
    return made


@pytest.mark.slow
def test_a_zipped_folders_reproduce_lines_run_in_the_students_folder(where: ClassDir) -> None:
    """Fails without the folder's name: the lines read (cd .../class/submissions/carol/1/carol && ...)."""
    data = _zipped("mybot", ("bot.toml", b'command = "python3 bot.py"\n'), ("bot.py", CRASHES))
    commands = _checked(where, "mybot.zip", data)["commands"]
    assert commands, "a bot that crashes at its first move has lines to reproduce it"
    for line in commands:
        assert line.startswith("(cd mybot && "), line
        assert "| python3 bot.py" in line and "submissions" not in line, line


def test_the_reproduce_lines_name_the_folder_the_zip_held_not_the_zips_name(where: ClassDir) -> None:
    """bob uploaded a zip of crashbot/ under another name: the lines read `(cd bob && ...)`, the student's
    name (the server's copy) where the folder he has is crashbot."""
    data = _zipped("crashbot", ("bot.toml", b'command = "python3 bot.py"\n'), ("bot.py", CRASHES))
    commands = _checked(where, "bob.zip", data)["commands"]
    assert commands
    for line in commands:
        assert line.startswith("(cd crashbot && "), line


def test_a_single_files_reproduce_lines_run_where_the_file_is(where: ClassDir) -> None:
    commands = _checked(where, "crasher.py", CRASHES)["commands"]
    assert commands
    for line in commands:
        assert line.startswith("printf ") and line.endswith("| python3 -P -u crasher.py"), line
        assert "submissions" not in line and "cd " not in line, line


def test_a_paths_request_says_what_holds_on_the_server(where: ClassDir) -> None:
    """Fails without the server's wording: it said '(--read-only /etc)', a flag arena serve does not take."""
    toml = b'command = "python3 bot.py"\npaths = ["/etc"]\n'
    data = _zipped("reader", ("bot.toml", toml), ("bot.py", CRASHES))
    (item,) = _checked(where, "reader.zip", data)["items"]
    said = str(item["summary"])
    assert item["status"] == "FAIL", item
    assert "--read-only" not in said and "submissions" not in said, said
    assert "asks to read /etc" in said and "the teacher cannot grant it more here" in said, said
    assert "put the files it needs in its folder" in said, said


def test_a_ladder_games_fault_box_reproduces_it_in_the_students_own_folder(
    where: ClassDir, tmp_path: Path
) -> None:
    """The replay of a game lost by a fault gives its author the lines that bring it back in their own folder
    (as the checklist does) and at the class's move time, not `python3 -P bots/carol.py` (a command the
    server made up) with MOVE 1000, nor the server's copy in class/bots/carol."""
    import json
    import re

    from arena.api import Tournament
    from arena.match.clock import TimeControl
    from arena.server.models import Classroom, Status
    from arena.server.people import members as accounts
    from arena.server.standings import field, ladder
    from arena.server.versions import submitting
    from arena.server.versions.checking import folder_of
    from arena.tournament.settings import Settings

    classroom = Classroom.current() or Classroom.objects.create(name="C", per_day=100)
    uploads = {
        "carol": (
            "mybot.zip",
            _zipped("mybot", ("bot.toml", b'command = "python3 bot.py"\n'), ("bot.py", CRASHES)),
        ),
        "dave": ("crasher.py", CRASHES),
    }
    for slug, (name, data) in uploads.items():
        member = accounts.add_member(slug, f"a long pw for {slug} 77")
        version = submitting.submit(where, classroom, member, name, io.BytesIO(data), len(data))
        version.status = Status.PASSED  # as a check that passed would leave it (these crash: no check runs)
        version.save()
        member.active = version
        member.save()
    bots, home = tmp_path / "bots", tmp_path / "ladder"  # the class's own, as the ladder's worker has them
    field.sync(bots, field.wanted(where, classroom))
    with Tournament(home, Settings(openings=0, clock=TimeControl(move_ms=2000))) as cup:
        entered = cup.enter(bots)
        ladder.remember_versions(home, {b.name: b.digest for b in entered.bots}, field.versions(bots))
        cup.run(entered, rounds=1)
    commands = {}
    for game in (1, 2):
        shown = ladder.game(home, game, lambda bot: True, folder_of)
        assert shown is not None and shown["fault"] is not None
        block = re.search(r"arenaBlock\(0, (.*?)\); arenaList", str(shown["viewer"]))
        assert block is not None
        commands[shown["fault"]["bot"]] = json.loads(block.group(1))[str(game)]["x"]["cmd"]
        assert "run where its author keeps the bot" in str(shown["viewer"])
    assert commands["carol"].startswith("(cd mybot && printf 'NEWGAME "), commands
    assert commands["carol"].endswith("| python3 bot.py)"), commands
    assert commands["dave"].startswith("printf 'NEWGAME ") and commands["dave"].endswith(
        "| python3 -P -u crasher.py"
    )
    for line in commands.values():
        assert "MOVE 2000 " in line and "bots/" not in line and "submissions" not in line, line
    hidden = ladder.game(home, 1, lambda bot: False, folder_of)
    assert hidden is not None and "printf" not in str(hidden["viewer"]), "another student never reads them"
