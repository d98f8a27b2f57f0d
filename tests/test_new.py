"""`arena new`: every starter, made through the real CLI, builds where it must and plays clean games (kalah,
the pie rule, a small board) confined as by default, clearly stronger than random; bad input is one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import cli_kit
import pytest
from conftest import assert_one_line_error

from arena.student.new import LANGUAGES, PLACEHOLDER, PROTOCOLS

ROOT = Path(__file__).resolve().parent.parent
STARTERS = ROOT / "arena" / "student" / "starters"
# The tools each starter needs on this machine; CI installs them all.
TOOLS = {"python": (), "c": ("cc",), "cpp": ("c++",), "java": ("javac", "java"), "js": ("node",)}


def arena(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ARENA_SEED": "7"}  # random.py's choices repeat: the strength test cannot flake
    return cli_kit.arena(*args, cwd=cwd, env=env, timeout=180)


def needs(lang: str) -> None:
    missing = [tool for tool in TOOLS[lang] if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: the {lang} starter is not tested")


@pytest.fixture
def bots(tmp_path: Path) -> Path:
    """A bots folder with the bundled greedy and random bots, and a student's notes beside them."""
    folder = tmp_path / "bots"
    folder.mkdir()
    for name in ("greedy.py", "random.py"):
        shutil.copy(ROOT / "bots" / name, folder / name)
    (folder / "notes.md").write_text("# my ideas\n- count seeds in the last pit\n")
    return folder


def games(run: subprocess.CompletedProcess[str]) -> list[dict]:
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_new_bot_plays_clean_games_and_beats_random(lang: str, bots: Path):
    needs(lang)
    made = arena("new", "me", "--lang", lang, "--bots", str(bots))
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"made {bots / 'me'}: a greedy {lang} bot")
    assert f"arena check me --bots {bots}" in made.stdout and f"arena run --bots {bots}" in made.stdout
    for source in (bots / "me").iterdir():
        assert PLACEHOLDER not in source.read_text(), source
    assert "me:" in (bots / "me" / "bot.toml").read_text()

    # Against the bundled greedy bot on Kalah(6,6): every game played to its end, on both sides.
    play = ["play", "me", "greedy", "--bots", str(bots), "--json", "--move-time", "200"]
    records = games(arena(*play, "--games", "4", "--rules", "kalah"))
    assert [r["reason"] for r in records] == ["normal"] * 4, [r["detail"] for r in records]
    assert all("me: new game as" in r["stderr"]["me"] for r in records)  # its logs went to stderr
    build = tomllib.loads((bots / "me" / "bot.toml").read_text()).get("build")
    assert bool(build) == (lang in ("c", "cpp", "java"))
    if build:  # arena ran the build command of bot.toml before the first game
        assert (bots / "me" / ("out/Bot.class" if lang == "java" else "bot")).is_file()

    # Against random on a small board under the pie rule: it swaps when random's opening gained, never
    # where SWAP is illegal, and wins a clear majority (random's choices are seeded: no flakes).
    play = ["play", "me", "random", "--bots", str(bots), "--json", "--move-time", "200"]
    records = games(arena(*play, "--games", "10", "--rules", "kalah,pits=4,seeds=3,pie"))
    assert [r["faulty"] for r in records] == [None] * 10, [r["detail"] for r in records]
    assert any("SWAP" in r["moves"] for r in records)
    wins = sum(r["winner"] == "me" for r in records)
    assert wins >= 8, f"{lang} starter won only {wins} of 10 games against random"


def test_starters_speak_the_protocol_by_hand(tmp_path: Path):
    """The Python starter as protocol.md's checklist says to test a bot: typed lines in, one line per MOVE
    out, SWAP only as north's first MOVE under pie, the best greedy move otherwise, logs on stderr."""
    made = arena("new", "hand", "--bots", str(tmp_path))
    assert made.returncode == 0, made.stderr
    lines = [
        "NEWGAME 3 2 south kalah,pits=3,seeds=2",
        "MOVE 1000 2 2 2 0 2 2 2 0",  # pit 2 ends in our store: the extra turn
        "HELLO there",  # a line it does not know: ignored
        "NEWGAME 6 6 north kalah,pie",
        "MOVE 1000 6 6 6 6 6 6 0 6 6 0 7 7 7 1",  # south banked a seed: swap
        "END loss 1 2 normal",
        "NEWGAME 6 6 north kalah",
        "MOVE 1000 6 6 6 6 6 6 0 6 6 0 7 7 7 1",  # the same board without pie: a move
        "NEWGAME 3 3 south kalah,pits=3,seeds=3",
        "MOVE 1000 1 0 3 0 2 4 1 0",  # pit 1 captures their 4 seeds: more than pit 3's store seed
        "QUIT",
    ]
    run = subprocess.run(
        [sys.executable, "bot.py"],
        input="".join(line + "\n" for line in lines),
        cwd=tmp_path / "hand",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["2", "SWAP", "1", "1"]
    assert "hand: new game as north under kalah,pie" in run.stderr
    assert "hand: game over: loss 1 2 normal" in run.stderr


@pytest.mark.slow
def test_a_tournament_of_new_bots_beside_their_sources_and_notes(bots: Path, tmp_path: Path):
    """The issue's end: a bots folder with a student's compiled bot (sources, build outputs) and notes."""
    needs("c")
    for name, lang in (("pybot", "python"), ("cbot", "c")):
        assert arena("new", name, "--lang", lang, "--bots", str(bots)).returncode == 0
    (bots / "greedy.py").unlink()
    out = tmp_path / "reports"
    run = arena(
        "run", "--rounds", "1", "--bots", str(bots), "--out", str(out), "--rules", "kalah,pits=4,seeds=3"
    )
    assert run.returncode == 0, run.stderr
    exported = arena("export", "--out", str(out), "--format", "jsonl")
    records = games(exported)
    assert len(records) == 6  # three bots, each pair twice
    assert {r["south"] for r in records} == {"pybot", "cbot", "random"}
    assert [r["faulty"] for r in records] == [None] * 6, [r["detail"] for r in records]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["new", "my bot"], ["a bot's name may use letters", "my_bot"]),
        (["new", "-x"], ["No such option"]),
        (["new", "me", "--lang", "rust"], ["'rust' is not one of", "'python', 'c', 'cpp', 'java', 'js'"]),
        (["new", "me.py"], ["without .py", "e.g. me"]),
        (["new", "taken"], ["bots/taken already exists"]),
        (["new", "random"], ["bots/random.py already exists"]),
        (["new", "me", "--bots", "notes.md"], ["notes.md: not a folder"]),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], words: list[str], tmp_path: Path):
    (tmp_path / "bots" / "taken").mkdir(parents=True)
    (tmp_path / "bots" / "random.py").write_text("")
    (tmp_path / "notes.md").write_text("")
    before = sorted(tmp_path.rglob("*"))
    run = arena(*args, cwd=tmp_path)
    assert_one_line_error(run, words)
    assert sorted(tmp_path.rglob("*")) == before  # nothing made


def test_a_missing_bots_folder_is_made(tmp_path: Path):
    run = arena("new", "first", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "bots" / "first").iterdir()) == ["bot.py", "bot.toml"]
    assert "arena play first first --show" in run.stdout  # no greedy.py there to watch it against


def test_every_starter_ships_with_the_package():
    """A non-editable install has the starters: pyproject's package-data globs cover every starter file,
    and there is one starter folder per language."""
    wanted = [
        lang if protocol == "v1" else f"{lang}-{protocol}"
        for protocol, langs in PROTOCOLS.items()
        for lang in langs
    ]
    assert sorted(p.name for p in STARTERS.iterdir() if p.is_dir()) == sorted(wanted)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["arena.student"]
    package = ROOT / "arena" / "student"
    shipped = {p for pattern in globs for p in package.glob(pattern) if p.is_file()}
    files = {p for p in STARTERS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files and files <= shipped
    for source in files:  # short enough for a student to read whole
        assert len(source.read_text().splitlines()) <= 150, source


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_new_bot_passes_arena_check_as_written(lang: str, bots: Path):
    needs(lang)
    assert arena("new", "fresh", "--lang", lang, "--bots", str(bots)).returncode == 0
    run = arena("check", "fresh", "--bots", str(bots), "--move-time", "200")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "fresh: ready to play: nothing the referee would hold against it"


@pytest.mark.slow
def test_a_new_kgp_agent_connects_and_passes_arena_check(bots: Path):
    """`arena new --protocol kgp`: an agent that connects to the relay on localhost:2671 from its sandbox,
    plays clean games against greedy and passes the check as written."""
    from arena.sandbox import Confinement, capabilities

    if not capabilities(Confinement(), want_sandbox=True)[0].sandbox:
        pytest.skip("a KGP agent's private loopback is the sandbox's")
    made = arena("new", "agent", "--protocol", "kgp", "--bots", str(bots))
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"made {bots / 'agent'}: a greedy python KGP agent")
    assert 'protocol = "kgp"' in (bots / "agent" / "bot.toml").read_text()
    for source in (bots / "agent").iterdir():
        assert PLACEHOLDER not in source.read_text(), source
    play = ["play", "agent", "greedy", "--bots", str(bots), "--json", "--move-time", "200"]
    records = games(arena(*play, "--games", "2", "--rules", "kalah,pits=4,seeds=3"))
    assert [r["reason"] for r in records] == ["normal"] * 2, [r["detail"] for r in records]
    run = arena("check", "agent", "--bots", str(bots), "--move-time", "200")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith("agent: ready to play"), run.stdout  # a warning under load


def test_there_is_no_kgp_starter_in_other_languages_yet(bots: Path):
    made = arena("new", "agent", "--lang", "c", "--protocol", "kgp", "--bots", str(bots))
    assert made.returncode == 2, made.stdout + made.stderr
    assert "no kgp starter for language 'c'; known: python" in made.stderr
