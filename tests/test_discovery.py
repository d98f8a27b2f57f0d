"""Finding bots: the three kinds, and a clear error for everything that cannot run."""

import os
import sys
from pathlib import Path

import pytest

from arena.match.bots import BotError, discover, find_bot, load_bot, survey

BOTS = Path(__file__).resolve().parent.parent / "bots"


def manifest(text: str):
    """A setup step: a bot folder x/ whose bot.toml holds `text`."""

    def setup(folder: Path) -> None:
        (folder / "x").mkdir()
        (folder / "x" / "bot.toml").write_text(text)

    return setup


def make_exec(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_bundled_bots_are_found():
    names = [b.name for b in discover(BOTS)]
    assert {"random", "greedy", "alphabeta"} <= set(names)
    assert names == sorted(names)


def test_three_kinds(tmp_path):
    (tmp_path / "py_bot.py").write_text("print(1)\n")
    make_exec(tmp_path / "shbot")
    folder = tmp_path / "cbot"
    folder.mkdir()
    make_exec(folder / "bot")
    (folder / "bot.toml").write_text('command = "./bot --fast"\nauthor = "Ada"\n')
    (tmp_path / "README.md").write_text("notes for the class\n")
    (tmp_path / "__pycache__").mkdir()
    bots = {b.name: b for b in discover(tmp_path)}
    assert sorted(bots) == ["cbot", "py_bot", "shbot"]
    assert bots["py_bot"].argv[0] == sys.executable
    assert bots["shbot"].argv == (str(tmp_path / "shbot"),)
    assert bots["cbot"].argv == ("./bot", "--fast") and bots["cbot"].cwd == folder
    assert bots["cbot"].author == "Ada"


def test_digest_changes_with_the_code(tmp_path):
    bot = tmp_path / "b.py"
    bot.write_text("print(1)\n")
    before = load_bot(bot).digest
    bot.write_text("print(2)\n")
    assert load_bot(bot).digest != before


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (
            lambda d: (d / "run.sh").write_text("#!/bin/sh\nexec ./bot\n"),
            ["not a .py file and not executable", "chmod +x"],
        ),
        (lambda d: ((d / "x").mkdir(), (d / "x" / "Bot.java").write_text("")), ["needs a bot.toml"]),
        (manifest("command = ["), ["not valid TOML"]),
        (manifest("cmd = 'a'"), ["unknown key 'cmd'"]),
        (manifest("command = 3"), ["'command' must be"]),
        (manifest("command = './bot'"), ["build it first"]),
        (
            manifest("command = 'javac Bot.java && java Bot'"),
            ["shell syntax ('&&')", "no shell runs it", "script"],
        ),
        (
            manifest("command = 'no-such-program-xyz'"),
            ["not installed"],
        ),
        (
            manifest("command = 'ls'\nprotocol = 'uci'"),
            ["unknown protocol 'uci'"],
        ),
        (lambda d: ((d / "dup.py").write_text(""), make_exec(d / "dup")), ["two bots are named 'dup'"]),
        (lambda d: (d / "bad name.py").write_text(""), ["letters, digits", "e.g. to bad_name.py"]),
    ],
)
def test_bad_bots_get_a_clear_error(tmp_path, setup, words):
    setup(tmp_path)
    with pytest.raises(BotError) as info:
        discover(tmp_path)
    for word in words:
        assert word in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(tmp_path):
    bot = tmp_path / "b.py"
    bot.write_text("")
    bot.chmod(0)
    with pytest.raises(BotError, match="cannot be read"):
        load_bot(bot)


def test_missing_folder_and_unknown_name(tmp_path):
    with pytest.raises(BotError, match="no such bots folder"):
        discover(tmp_path / "nope")
    (tmp_path / "alpha.py").write_text("")
    with pytest.raises(BotError, match="no bot named 'beta' .* bots there: alpha"):
        find_bot("beta", tmp_path)
    with pytest.raises(BotError, match="no such file"):
        find_bot(str(tmp_path / "gone.py"), tmp_path)
    assert find_bot("alpha", tmp_path).name == "alpha"
    assert find_bot(str(tmp_path / "alpha.py"), BOTS).name == "alpha"


def test_a_bots_folder_with_sources_data_and_notes_gives_its_bots_and_lists_the_broken_ones(tmp_path):
    """What a class's bots folder holds beside the bots: skipped, or listed with a fix; never a stop."""
    for name in ("greedy.py", "élève.py", "first.py"):
        (tmp_path / name).write_text("print(1)\n", encoding="utf-8")
    for name in ("bot.c", "Bot.java", "Bot.class", "Makefile", "README", "weights.npy", "notes.md"):
        (tmp_path / name).write_bytes(b"not a bot\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.bin").write_bytes(b"\0")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")  # a script someone forgot to chmod
    (tmp_path / "my bot.py").write_text("", encoding="utf-8")
    (tmp_path / "greedy").mkdir()  # beside greedy.py
    (tmp_path / "greedy" / "bot.toml").write_text('command = "python bot.py"\n', encoding="utf-8")
    (tmp_path / "javabot").mkdir()  # sources but no bot.toml yet
    (tmp_path / "javabot" / "Bot.java").write_text("class Bot {}\n", encoding="utf-8")
    found = survey(tmp_path)
    assert [b.name for b in found.bots] == ["first", "élève"]
    broken = dict(found.broken)
    assert set(broken) == {"greedy", "greedy.py", "javabot", "my bot.py", "run.sh"}
    assert "two bots are named 'greedy' (greedy and greedy.py): rename or remove one" == broken["greedy.py"]
    assert "needs a bot.toml" in broken["javabot"]
    assert "rename it, e.g. to my_bot.py" in broken["my bot.py"]
    assert "chmod +x" in broken["run.sh"]
    assert all("\n" not in why for why in broken.values())
