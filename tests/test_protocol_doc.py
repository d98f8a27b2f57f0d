"""protocol.md's own bots must work: the first ```python and ```c blocks, the Java and JavaScript bots, and
the botkit bot of the section on arena's rules engine, are run through the real referee; the C and Java
bots are built by their bot.toml's `build`, confined as arena confines builds."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.game.rules import NORTH, SWAP, parse_rules
from arena.match.bots import load_bot
from arena.match.build import ensure_built
from arena.match.clock import TimeControl
from arena.match.referee import Limits, Player, play_game
from arena.sandbox import Confinement, capabilities

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "protocol.md").read_text()
LIMITS = Limits(TimeControl(move_ms=1000, startup_ms=5000))


def first_block(language: str) -> str:
    match = re.search(rf"^```{language}\n(.*?)^```", DOC, re.S | re.M)
    assert match, f"protocol.md has no ```{language} block"
    return match.group(1)


def block_in_section(heading: str, language: str) -> str:
    """The first ```language block of the section `## heading`."""
    assert f"\n## {heading}\n" in DOC, f"protocol.md has no section {heading!r}"
    section = DOC.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"^```{language}\n(.*?)^```", section, re.S | re.M)
    assert match, f"protocol.md's section {heading!r} has no ```{language} block"
    return match.group(1)


BOTKIT_SECTION = "A Python bot on arena's rules engine"


def built(folder: Path):
    """The bot folder, built by its bot.toml's build as `arena run` builds it (sandbox where there is one)."""
    conf, _ = capabilities(Confinement(), want_sandbox=True)
    return ensure_built(load_bot(folder), conf)


def play_both_sides(bot_path: Path, rules_spec: str) -> None:
    rules = parse_rules(rules_spec)
    doc_bot = Player(load_bot(bot_path))
    opponent = Player(load_bot(ROOT / "bots" / "random.py"))
    try:
        for south, north in ((doc_bot, opponent), (opponent, doc_bot)):
            record = play_game(rules, south, north, LIMITS)
            assert record.faulty is None, record.detail
            assert record.reason == "normal"
    finally:
        doc_bot.close()
        opponent.close()


def test_the_python_bot_in_the_doc_plays_clean_games(tmp_path):
    source = first_block("python")
    assert len(source.strip().splitlines()) <= 15, "the minimal Python bot should stay about ten lines"
    bot = tmp_path / "doc_python.py"
    bot.write_text(source)
    play_both_sides(bot, "kalah")
    play_both_sides(bot, "kalah,pits=4,seeds=3,pie")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) is installed")
def test_the_c_bot_in_the_doc_compiles_and_plays_clean_games(tmp_path):
    folder = tmp_path / "doc_c"
    folder.mkdir()
    (folder / "bot.c").write_text(first_block("c"))
    toml = block_in_section("A minimal C bot", "toml")
    assert 'build = "cc ' in toml
    (folder / "bot.toml").write_text(toml)
    assert built(folder).build
    assert (folder / "bot").is_file()
    warnings = ["cc", "-O2", "-Wall", "-Werror", "-o", str(tmp_path / "strict"), "bot.c"]
    subprocess.run(warnings, cwd=folder, check=True)  # and the doc's C has no warnings
    play_both_sides(folder, "kalah")
    play_both_sides(folder, "kalah,pits=7,seeds=7,pie")


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK (javac) installed")
def test_the_java_bot_in_the_doc_compiles_and_plays_clean_games(tmp_path):
    folder = tmp_path / "doc_java"
    folder.mkdir()
    (folder / "Bot.java").write_text(block_in_section("A minimal Java bot", "java"))
    toml = block_in_section("A minimal Java bot", "toml")
    assert 'build = "javac ' in toml
    (folder / "bot.toml").write_text(toml)
    built(folder)
    assert list(folder.glob("**/Bot.class"))
    play_both_sides(folder, "kalah")
    play_both_sides(folder, "kalah,pits=4,seeds=3,pie")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_javascript_bot_in_the_doc_plays_clean_games(tmp_path):
    folder = tmp_path / "doc_js"
    folder.mkdir()
    (folder / "bot.js").write_text(block_in_section("A minimal JavaScript bot", "javascript"))
    (folder / "bot.toml").write_text('command = "node bot.js"\n')
    play_both_sides(folder, "kalah")
    play_both_sides(folder, "kalah,pits=7,seeds=7,pie")


def test_the_botkit_bot_in_the_doc_plays_clean_games(tmp_path):
    source = block_in_section(BOTKIT_SECTION, "python")
    assert "from arena.botkit import" in source
    assert len(source.strip().splitlines()) <= 15, "the botkit example should stay a few lines"
    bot = tmp_path / "doc_botkit.py"
    bot.write_text(source)
    play_both_sides(bot, "kalah")
    play_both_sides(bot, "kalah,pits=4,seeds=3,pie")
    play_both_sides(bot, "mankalah")


def test_the_botkit_bot_in_the_doc_swaps_when_the_first_player_leads(tmp_path):
    """The doc says SWAP is among the legal moves exactly when the bot may play it: the example's greed
    then takes over a first player who banked a seed, under the pie rule only."""
    bot = tmp_path / "doc_botkit.py"
    bot.write_text(block_in_section(BOTKIT_SECTION, "python"))
    rules = parse_rules("kalah,pie")
    ahead = rules.play(rules.initial(), 3)  # south banked a seed; every pit of north's banks one seed back
    move = "MOVE 1000 " + " ".join(map(str, ahead.view(NORTH)))
    lines = ["NEWGAME 6 6 north kalah,pie", move, "END loss 0 0 crash"]
    lines += ["NEWGAME 6 6 north kalah", move, "QUIT"]  # no pie rule: no SWAP
    run = subprocess.run(
        [sys.executable, "-P", str(bot)],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    answers = run.stdout.splitlines()
    assert answers[0] == SWAP
    assert len(answers) == 2 and answers[1] in {"1", "2", "3", "4", "5", "6"}
