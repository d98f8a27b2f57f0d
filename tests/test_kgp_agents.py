"""KGP agents as bots (bot.toml `protocol = "kgp"`): an agent written from the spec alone (tests/kgp_agent.py)
starts in its sandbox, connects over the sandbox's private loopback to arena's relay on port 2671, and is
refereed as the course server would: the last legal `move` before `stop` counts. Real processes, the real
sandbox, the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL

from arena.game.rules import SOUTH, RulesError, parse_rules
from arena.match.bots import BotError, load_bot
from arena.match.clock import Limits
from arena.match.confine import Confinement, capabilities
from arena.match.referee import Player, play_game

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "tests" / "kgp_agent.py"
RULES = parse_rules("kalah,pits=4,seeds=3")
LIMITS = Limits(move_ms=300, startup_ms=5000)
CONF, _ = capabilities(Confinement(), want_sandbox=True)
needs_sandbox = pytest.mark.skipif(not CONF.sandbox, reason="a KGP agent's private loopback is the sandbox's")


def agent_folder(bots: Path, name: str, style: str = "greedy", extra: str = "") -> Path:
    folder = bots / name
    folder.mkdir(parents=True)
    shutil.copy(AGENT, folder / "kgp_agent.py")
    (folder / "bot.toml").write_text(
        f'command = "python3 kgp_agent.py localhost 2671 --style {style}"\nprotocol = "kgp"\n{extra}'
    )
    return folder


def first_legal(bots: Path) -> Path:
    bots.mkdir(parents=True, exist_ok=True)
    (bots / "first.py").write_text(FIRST_LEGAL)
    return bots / "first.py"


def play(tmp_path: Path, jailer, style: str, south: bool = True, rules=RULES):
    bots = tmp_path / "bots"
    warden = jailer.warden(CONF)
    agent = jailer.player(load_bot(agent_folder(bots, "agent", style)), warden)
    other = jailer.player(load_bot(first_legal(bots)), warden)
    pair = (agent, other) if south else (other, agent)
    record = play_game(rules, *pair, LIMITS)
    return record, agent


def best(pos, rules) -> int:
    """The agent's best pit by its own measure (tests/kgp_agent.py `gain`), from the mover's view."""
    sys.path.insert(0, str(AGENT.parent))
    import kgp_agent

    view = pos.view(pos.to_move)
    n = rules.pits
    legal = [p for p in range(1, n + 1) if view[p - 1]]
    return max(legal, key=lambda p: kgp_agent.gain(view[n], list(view[:n]), list(view[n + 1 : 2 * n + 1]), p))


@needs_sandbox
@pytest.mark.parametrize("south", [True, False])
def test_an_agent_from_the_spec_plays_its_last_legal_move_on_both_sides(tmp_path, jailer, south):
    record, agent = play(tmp_path, jailer, "greedy", south)
    assert record.faulty is None, (record.detail, record.stderr)
    pos = RULES.initial()
    mine = SOUTH if south else 1 - SOUTH
    for ply in record.plies:
        if pos.to_move == mine:
            assert ply == best(pos, RULES)  # its second answer, not its first
        pos = RULES.play(pos, ply)
    assert agent.wire().agent == "spec agent"  # type: ignore[attr-defined]


@needs_sandbox
def test_an_illegal_move_written_last_does_not_replace_the_last_legal_one(tmp_path, jailer):
    record, _ = play(tmp_path, jailer, "illegal-last")
    assert record.faulty is None, record.detail


@needs_sandbox
def test_a_late_move_after_stop_is_ignored(tmp_path, jailer):
    record, _ = play(tmp_path, jailer, "deepen")
    assert record.faulty is None, record.detail


@needs_sandbox
def test_an_agent_that_never_moves_forfeits_on_time(tmp_path, jailer):
    record, _ = play(tmp_path, jailer, "silent")
    assert (record.faulty, record.reason) == ("agent", "timeout")
    assert "the last legal `move` before `stop` counts" in record.detail


@needs_sandbox
def test_lines_that_are_not_kgp_are_answered_with_error_and_counted(tmp_path, jailer):
    record, agent = play(tmp_path, jailer, "noisy")
    assert record.faulty is None, record.detail
    assert agent.wire().errors == record.moves_made["agent"]  # type: ignore[attr-defined]


def test_kgp_agents_play_standard_kalah_only(tmp_path):
    bot = load_bot(agent_folder(tmp_path, "agent"))
    south, north = Player(bot), Player(load_bot(first_legal(tmp_path)))
    with pytest.raises(RulesError, match="speaks KGP"):
        play_game(parse_rules("kalah,pits=4,seeds=3,pie"), south, north, LIMITS)


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('command = "python3 a.py"\nprotocol = "kgp"\nport = 0\n', "'port' is the port"),
        ('command = "python3 a.py"\nport = 2671\n', "'port' is the port"),
        ('command = "python3 a.py"\nprotocol = "kgp"\nanytime = true\n', "anytime by its protocol"),
    ],
)
def test_bad_kgp_settings_say_what_is_wrong(tmp_path, toml, words):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "a.py").write_text("")
    (tmp_path / "b" / "bot.toml").write_text(toml)
    with pytest.raises(BotError, match=words):
        load_bot(tmp_path / "b")


@needs_sandbox
def test_arena_run_plays_a_kgp_agent_from_a_bots_folder(tmp_path):
    bots = tmp_path / "bots"
    agent_folder(bots, "agent")
    shutil.copy(ROOT / "bots" / "random.py", bots / "random.py")
    out = tmp_path / "reports"
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(out), "--rounds", "1"]
    argv += ["--rules", "kalah,pits=4,seeds=3", "--move-time", "200", "--openings", "0", "--quiet"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    export = subprocess.run(
        [sys.executable, "-m", "arena", "export", "--out", str(out)], capture_output=True, text=True, cwd=ROOT
    )
    games = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(games) == 2 and {g["south"] for g in games} == {"agent", "random"}
    assert all(g["faulty"] is None for g in games), games


@needs_sandbox
def test_arena_check_plays_a_kgp_agent_without_the_pie_game_and_says_goodbye(tmp_path):
    folder = agent_folder(tmp_path, "agent")
    argv = [sys.executable, "-m", "arena", "check", str(folder), "--json", "--move-time", "200"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    names = [item["name"] for item in report["items"]]
    assert not any("pie" in name for name in names), names  # KGP has no swap move
    assert all(item["status"] == "ok" for item in report["items"] if item["name"].startswith("game")), report
    assert any(name.startswith("goodbye: exits") for name in names), names
