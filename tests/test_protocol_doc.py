"""protocol.md's own bots must work: the first ```python and ```c blocks are run through the real referee."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from arena.bots import load_bot
from arena.referee import Limits, Player, play_game
from arena.rules import parse_rules

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "protocol.md").read_text()
LIMITS = Limits(move_ms=1000, startup_ms=5000)


def first_block(language: str) -> str:
    match = re.search(rf"^```{language}\n(.*?)^```", DOC, re.S | re.M)
    assert match, f"protocol.md has no ```{language} block"
    return match.group(1)


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


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_c_bot_in_the_doc_compiles_and_plays_clean_games(tmp_path):
    folder = tmp_path / "doc_c"
    folder.mkdir()
    (folder / "bot.c").write_text(first_block("c"))
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-o", "bot", "bot.c"], cwd=folder, check=True)
    (folder / "bot.toml").write_text('command = "./bot"\nauthor = "protocol.md"\n')
    play_both_sides(folder, "kalah")
    play_both_sides(folder, "kalah,pits=7,seeds=7,pie")
