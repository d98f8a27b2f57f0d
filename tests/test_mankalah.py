"""Manchester-protocol agents (arena/match/mankalah.py) next to protocol v1 bots, and the time bank.

The agents are written here, in Python and in Java, the way students write them for the Manchester engine:
they read START/CHANGE/END lines, keep the board from the CHANGE states, answer MOVE;<hole> or SWAP, and log
every line they read to stderr ("< " first). The referee keeps a game's stderr tail in the record, so each
stored game shows exactly what each agent was told; the tests rebuild that transcript from the record's
moves and the rules engine alone and compare line by line.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_kit import arena

from arena.game.rules import MANKALAH, NORTH, SOUTH, SWAP, Kalah, RulesError, parse_rules
from arena.match.bots import Bot, load_bot
from arena.match.clock import TimeControl
from arena.match.mankalah import change_line, parse_reply, start_line, state_text
from arena.match.process import Fault
from arena.match.record import GameRecord
from arena.match.referee import Limits, Player, check_rules, play_game
from arena.store.writer import store_path
from arena.tournament.settings import MANKALAH_BANK_MS, Settings, resolve

ROOT = Path(__file__).resolve().parent.parent
FAST = Limits(TimeControl(move_ms=1000, startup_ms=5000))

# --- the agents -------------------------------------------------------------------------------------------

PY_AGENT = '''\
"""A Manchester-protocol agent: the first non-empty hole; argv[1] makes it swap or break a rule on its
second turn. It logs its pid and every line it reads ("< " first) to stderr."""
import os, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else "first"
os.write(2, f"pid {os.getpid()}\\n".encode())
side, board, changes, turns = None, [7] * 7 + [0] + [7] * 7 + [0], 0, 0
skip = False  # it answered its next turn before it was asked


def send(text):
    os.write(1, text.encode())


def answer():
    """The reply on our turn (START;South or CHANGE ... YOU)."""
    global side, turns
    turns += 1
    start = 0 if side == "North" else 8
    row = board[start : start + 7]
    hole = next(i + 1 for i in range(7) if row[i])
    empty = [i + 1 for i in range(7) if not row[i]]
    if mode in ("swap", "lateswap") and side == "North" and turns == 1 and changes == 1:
        side = "South"  # the swapper is not told: it owns South now
        return "SWAP\\n"
    if turns < 2 or mode in ("first", "swap"):
        return f"MOVE;{hole}\\n"
    if mode == "space":
        return f"MOVE; {hole}\\n"
    if mode == "cr":
        return f"MOVE;{hole}\\r\\n"
    if mode == "zero":
        return "MOVE;0\\n"
    if mode == "eight":
        return "MOVE;8\\n"
    if mode == "empty":
        return f"MOVE;{empty[0] if empty else 8}\\n"
    if mode == "lateswap":
        return "SWAP\\n"
    if mode == "hang":
        time.sleep(1000)
    if mode == "crash":
        os.write(2, b"giving up\\n")
        sys.exit(3)
    if mode == "chatty":
        return f"MOVE;{hole}\\nthanks\\n"
    if mode == "eager":  # a move into its own store: its next turn is sure, so it answers that one unasked
        for h in range(1, 7):
            if row[h - 1] == 8 - h:
                after = row[:h - 1] + [0] + [seeds + 1 for seeds in row[h:]]
                global skip
                skip = True
                os.write(2, b"early reply\\n")
                return f"MOVE;{h}\\nMOVE;{next(i + 1 for i in range(7) if after[i])}\\n"
    return f"MOVE;{hole}\\n"


for line in sys.stdin:
    os.write(2, ("< " + line).encode())
    if line.startswith("START;"):
        side = line[6:].strip()
        mine = side == "South"
    elif line.startswith("CHANGE;"):
        _, move, state, turn = line.rstrip("\\n").split(";")
        changes += 1
        if move == "SWAP":
            side = "North" if side == "South" else "South"
        board = [int(x) for x in state.split(",")]
        mine = turn == "YOU"
    elif line == "END\\n":
        break
    else:
        mine = False
    if mine and skip:
        skip = False
    elif mine:
        send(answer())
'''

JAVA_AGENT = """\
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;

/** A Manchester-protocol agent: a hole that ends in its store if there is one, else its fullest hole;
 *  "swap" as the first argument makes it swap whenever it may, "hog" makes it allocate without end on its
 *  second turn. A second argument N makes it hold N MiB of live objects (a search's table) all game, and say
 *  on stderr how much the JVM may hold ("max heap MiB"). Every line it reads goes to stderr. */
public class Agent {
    static ArrayList<long[]> table = new ArrayList<>();

    static void hold(int mib) {
        for (int i = 0; i < mib * 16; i++) {  // blocks of 64 KiB, each written, so each is really held
            long[] block = new long[8192];
            for (int j = 0; j < block.length; j += 512) block[j] = i + j;
            table.add(block);
        }
    }

    public static void main(String[] args) throws IOException {
        String mode = args.length > 0 ? args[0] : "first";
        System.err.print("max heap MiB " + Runtime.getRuntime().maxMemory() / (1 << 20) + "\\n");
        if (args.length > 1) {
            hold(Integer.parseInt(args[1]));
            System.err.print("holds MiB " + table.size() / 16 + "\\n");
        }
        boolean swapper = mode.equals("swap");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int[] board = {7, 7, 7, 7, 7, 7, 7, 0, 7, 7, 7, 7, 7, 7, 7, 0};
        boolean north = false;
        int changes = 0, turns = 0;
        String line;
        while ((line = in.readLine()) != null) {
            System.err.print("< " + line + "\\n");
            boolean mine = false;
            if (line.startsWith("START;")) {
                north = line.equals("START;North");
                mine = !north;
            } else if (line.startsWith("CHANGE;")) {
                String[] parts = line.split(";", -1);
                changes++;
                if (parts[1].equals("SWAP")) north = !north;
                String[] cells = parts[2].split(",");
                for (int i = 0; i < 16; i++) board[i] = Integer.parseInt(cells[i]);
                mine = parts[3].equals("YOU");
            } else if (line.equals("END")) {
                break;
            }
            if (!mine) continue;
            turns++;
            if (mode.equals("hog") && turns == 2) {
                while (true) hold(64);
            }
            String reply;
            if (swapper && north && turns == 1 && changes == 1) {
                reply = "SWAP";
                north = false; // the swapper is not told: it owns South now
            } else {
                int base = north ? 0 : 8, best = 0;
                for (int hole = 1; hole <= 7; hole++) {
                    int seeds = board[base + hole - 1];
                    if (seeds == 0) continue;
                    if (seeds == 8 - hole) { best = hole; break; }
                    if (best == 0 || seeds > board[base + best - 1]) best = hole;
                }
                reply = "MOVE;" + best;
            }
            System.out.print(reply + "\\n");
            System.out.flush();
        }
    }
}
"""


def py_agent(folder: Path, name: str, mode: str = "first") -> Bot:
    """A bot folder NAME with the Python agent in `mode` and its bot.toml (protocol = "mankalah")."""
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "agent.py").write_text(PY_AGENT, encoding="utf-8")
    (path / "bot.toml").write_text(f'command = "python3 agent.py {mode}"\nprotocol = "mankalah"\n')
    return load_bot(path)


def java_missing() -> str | None:
    """Why the Java agent cannot be built here (None: it can); on CI a missing JDK is an error."""
    if shutil.which("javac") and shutil.which("java"):
        return None
    if os.environ.get("CI"):
        pytest.fail("javac/java are missing on CI; install a JDK (apt-get install default-jdk-headless)")
    return "javac is not installed: the Java Manchester agent is not tested (install a JDK 17)"


def java_agent(folder: Path, name: str, mode: str = "swap", toml: str = "", java: str = "java") -> Bot:
    """A bot folder NAME with the Java agent built in it; `mode` (and a MiB to hold) are its arguments,
    `toml` more lines of its bot.toml, `java` the start of its command (e.g. "java -Xmx1g")."""
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "Agent.java").write_text(JAVA_AGENT, encoding="utf-8")
    subprocess.run(["javac", "-d", ".", "Agent.java"], cwd=path, check=True, timeout=120)
    (path / "bot.toml").write_text(f'command = "{java} -cp . Agent {mode}"\nprotocol = "mankalah"\n{toml}')
    return load_bot(path)


# --- what each agent must have been told ------------------------------------------------------------------


def transcript(record: dict | GameRecord, name: str) -> list[str]:
    """The lines agent `name` must have read in this game: START, a CHANGE for every move (none to a swapper
    for its SWAP) and END, rebuilt from the moves with the rules engine; state North first."""
    r = record if isinstance(record, dict) else record.to_dict()
    rules = parse_rules(r["rules"])
    owner = [r["south"], r["north"]]  # who owns each side now
    lines = [f"START;{'South' if name == r['south'] else 'North'}"]
    pos = rules.initial()
    for move in r["moves"]:
        mover = owner[pos.to_move]
        pos = rules.play(pos, move)
        if move == SWAP:
            owner.reverse()
            if mover == name:
                continue
        board = pos.board
        state = ",".join(map(str, board[8:] + board[:8]))
        turn = "END" if pos.ended else "YOU" if owner[pos.to_move] == name else "OPP"
        lines.append(f"CHANGE;{move};{state};{turn}")
    return [*lines, "END"]


def heard(record: dict | GameRecord, name: str) -> list[str]:
    """The lines agent `name` logged as read, from the record's stderr tail."""
    stderr = record["stderr"] if isinstance(record, dict) else record.stderr
    return [line[2:] for line in stderr[name].splitlines() if line.startswith("< ")]


def replays(record: dict | GameRecord) -> None:
    """The recorded opening and moves replay under the record's rules to the recorded stores."""
    r = record if isinstance(record, dict) else record.to_dict()
    rules = parse_rules(r["rules"])
    pos = rules.initial()
    for move in r["opening"] + r["moves"]:
        pos = rules.play(pos, move)
    assert (pos.store(SOUTH), pos.store(NORTH)) == (r["south_store"], r["north_store"])
    if r["faulty"] is None:
        assert rules.is_over(pos)
        names = (r["south"], r["north"])
        ends = [r["south_store"], r["north_store"]][:: -1 if SWAP in r["moves"] else 1]
        expected = None if ends[0] == ends[1] else names[0] if ends[0] > ends[1] else names[1]
        assert r["winner"] == expected


# --- the pure translation ---------------------------------------------------------------------------------


def test_lines_follow_the_manchester_grammar() -> None:
    pos = MANKALAH.play(MANKALAH.initial(), 2)  # South's first move: no extra turn, North may swap
    assert start_line(SOUTH) == "START;South" and start_line(NORTH) == "START;North"
    # North's holes 1..7 and store first; the last seed went into North's hole 1.
    assert state_text(pos) == "8,7,7,7,7,7,7,0,7,0,8,8,8,8,8,1"
    assert change_line(pos, 2, NORTH) == "CHANGE;2;8,7,7,7,7,7,7,0,7,0,8,8,8,8,8,1;YOU"
    assert change_line(pos, 2, SOUTH).endswith(";OPP")
    swapped = MANKALAH.play(pos, SWAP)  # the first mover now owns North and moves next
    assert change_line(swapped, SWAP, NORTH) == f"CHANGE;SWAP;{state_text(pos)};YOU"


@pytest.mark.parametrize(
    ("line", "can_swap", "move"),
    [
        ("MOVE;1", False, 1),
        ("MOVE;7", False, 7),
        ("MOVE;8", False, 8),
        ("MOVE;+3", False, 3),
        ("SWAP", True, SWAP),
    ],
)
def test_replies_that_parse(line: str, can_swap: bool, move: object) -> None:
    assert parse_reply(line, can_swap) == move


@pytest.mark.parametrize(
    ("line", "can_swap", "words"),
    [
        ("MOVE; 3", False, ["no spaces"]),
        ("MOVE;3\r", False, ["\\r"]),
        ("MOVE;0", False, ["numbered from 1"]),
        ("MOVE;-2", False, ["numbered from 1"]),
        ("SWAP", False, ["North's first reply"]),
        ("swap", True, ["MOVE;<hole> or SWAP"]),
        ("3", False, ["MOVE;<hole> or SWAP"]),
        ("MOVE 3", False, ["no spaces"]),
        ("", False, ["MOVE;<hole> or SWAP"]),
    ],
)
def test_invalid_messages_are_garbled(line: str, can_swap: bool, words: list[str]) -> None:
    with pytest.raises(Fault) as caught:
        parse_reply(line, can_swap)
    assert caught.value.reason == "garbled"
    assert "invalid message" in caught.value.detail
    for word in words:
        assert word in caught.value.told()


def test_the_example_in_protocol_md_is_what_agents_are_told() -> None:
    doc = (ROOT / "protocol.md").read_text(encoding="utf-8")
    block = doc.split("The start of a game in which Bob swaps", 1)[1].split("```text\n", 1)[1].split("```")[0]
    told: dict[str, list[str]] = {"Alice": [], "Bob": []}
    said: dict[str, list[str]] = {"Alice": [], "Bob": []}
    for line in block.splitlines()[1:]:
        who = "Bob" if line.startswith(" ") else "Alice"
        marker, text = line.strip().split(" ", 1)
        (told if marker == ">" else said)[who].append(text)
    assert said == {"Alice": ["MOVE;2", "MOVE;1"], "Bob": ["SWAP", "MOVE;3"]}
    record = {"rules": "mankalah", "south": "Alice", "north": "Bob", "moves": [2, SWAP, 1, 3]}
    for name in ("Alice", "Bob"):
        assert told[name] == transcript(record, name)[:-1]  # the game goes on: no END yet


# --- games and faults through the referee -----------------------------------------------------------------


def game(south: Bot, north: Bot, limits: Limits = FAST) -> GameRecord:
    players = [Player(south), Player(north)]
    try:
        record = play_game(MANKALAH, *players, limits)
        assert not any(p.running for p in players), "a Manchester agent's process ends with its game"
        return record
    finally:
        for p in players:
            p.kill()


@pytest.mark.parametrize("mode", ["first", "swap"])
def test_two_agents_play_and_hear_every_move(tmp_path: Path, mode: str) -> None:
    opener, replier = py_agent(tmp_path, "opener"), py_agent(tmp_path, "replier", mode)
    record = game(opener, replier)
    assert (record.reason, record.faulty) == ("normal", None), record
    assert record.swapped == (mode == "swap")
    replays(record)
    for name in ("opener", "replier"):
        assert heard(record, name) == transcript(record, name)
    if mode == "swap":
        assert not any(line.startswith("CHANGE;SWAP") for line in heard(record, "replier"))
        told = heard(record, "opener")
        assert any(line.startswith("CHANGE;SWAP") and line.endswith(";YOU") for line in told)
    assert heard(record, "opener")[-2].endswith(";END")


def test_an_agent_that_answers_before_it_is_asked_plays_on(tmp_path: Path) -> None:
    """Their engine reads an agent's line only when it waits for one, so a reply written early is the next
    reply: an agent that knows its extra turn is coming answers it at once, and plays the game out."""
    eager, other = py_agent(tmp_path, "eager", "eager"), py_agent(tmp_path, "other")
    for south, north in ((eager, other), (other, eager)):
        record = game(south, north)
        assert (record.reason, record.faulty) == ("normal", None), record
        assert "early reply" in record.stderr["eager"], record.stderr["eager"]
        replays(record)
        assert heard(record, "eager") == transcript(record, "eager")


def test_a_player_starts_a_new_agent_process_for_every_game(tmp_path: Path, bots) -> None:
    agent = Player(py_agent(tmp_path, "agent"))
    other = bots.player(bots.make("good"))
    pids = []
    try:
        for south, north in ((agent, other), (other, agent)):
            record = play_game(MANKALAH, south, north, FAST)
            assert record.reason == "normal", record
            assert not agent.running
            assert heard(record, "agent") == transcript(record, "agent")
            pids += [line for line in record.stderr["agent"].splitlines() if line.startswith("pid ")]
    finally:
        agent.kill()
    assert len(set(pids)) == len(pids) == 2
    assert len(bots.pids("good")) == 1  # a v1 bot keeps its process


FAULTS = [
    # mode, hostile side, reason, words in the detail
    ("space", SOUTH, "garbled", ["'MOVE; ", "no spaces", "invalid message"]),
    ("cr", NORTH, "garbled", ["\\r", "invalid message"]),
    ("zero", SOUTH, "garbled", ["MOVE;0", "numbered from 1"]),
    ("empty", NORTH, "illegal", ["is empty"]),
    ("eight", SOUTH, "illegal", ["its move: 8", "out of range 1..7"]),
    ("lateswap", SOUTH, "garbled", ["SWAP", "North's first reply"]),
    ("lateswap", NORTH, "garbled", ["SWAP", "North's first reply"]),  # swaps, then SWAP again as South
    ("hang", NORTH, "timeout", ["no reply within 300 ms"]),
    ("crash", SOUTH, "crash", ["exited with code 3", "giving up"]),
    ("chatty", NORTH, "garbled", ["its message: 'thanks'", "invalid message"]),  # an early line is a reply
]


@pytest.mark.parametrize(("mode", "side", "reason", "words"), FAULTS)
def test_each_fault_forfeits_and_the_other_agent_hears_end(
    tmp_path: Path, mode: str, side: int, reason: str, words: list[str]
) -> None:
    hostile, good = py_agent(tmp_path, "hostile", mode), py_agent(tmp_path, "good")
    south, north = (hostile, good) if side == SOUTH else (good, hostile)
    record = game(south, north, Limits(TimeControl(move_ms=300, startup_ms=5000)))
    assert (record.reason, record.faulty, record.winner) == (reason, "hostile", "good"), record
    for word in words:
        assert word in record.told(), f"{word!r} not in {record.told()!r}"
    replays(record)
    # The other agent heard every move up to the abort, no CHANGE ...;END, and END last.
    assert heard(record, "good") == transcript(record, "good")
    assert not any(line.endswith(";END") for line in heard(record, "good"))
    # The faulty agent heard its part up to where it broke the rules.
    told = heard(record, "hostile")
    assert told == transcript(record, "hostile")[: len(told)] and told


def test_south_told_start_then_end_when_north_cannot_start(tmp_path: Path) -> None:
    ghost = Bot("ghost", (str(tmp_path / "no-such-program"),), tmp_path, tmp_path, "0" * 16)
    record = game(py_agent(tmp_path, "agent"), ghost)
    assert (record.reason, record.faulty, record.winner) == ("crash", "ghost", "agent"), record
    assert heard(record, "agent") == ["START;South", "END"]


def test_agent_under_other_rules_is_refused_before_the_game(tmp_path: Path, bots) -> None:
    agent = py_agent(tmp_path, "agent")
    for rules in (Kalah(), Kalah(pits=7, seeds=7, pie=True), parse_rules("relay,pits=7,seeds=7,pie")):
        with pytest.raises(RulesError, match="'agent' speaks the Manchester protocol.*'mankalah'"):
            play_game(rules, Player(agent), bots.player(bots.make("good")), FAST)
    check_rules([agent], parse_rules("kalah,pits=7,seeds=7,pie,no-first-extra"))  # that is mankalah
    assert not bots.log("good"), "nothing was started"


def test_java_agent_plays_a_v1_bot(tmp_path: Path, bots) -> None:
    if why := java_missing():
        pytest.skip(why)
    agent = Player(java_agent(tmp_path, "jagent"))
    other = bots.player(bots.make("good"))
    try:
        for south, north in ((agent, other), (other, agent)):
            record = play_game(MANKALAH, south, north, FAST)
            assert (record.reason, record.faulty) == ("normal", None), record
            replays(record)
            assert heard(record, "jagent") == transcript(record, "jagent")
        assert record.swapped  # the Java agent, as North, swapped
    finally:
        agent.kill()


# --- a tournament through the command ---------------------------------------------------------------------


@pytest.mark.slow
def test_tournament_of_v1_bots_and_manchester_agents(tmp_path: Path) -> None:
    folder = tmp_path / "bots"
    folder.mkdir()
    for name in ("greedy", "random"):
        shutil.copy(ROOT / "bots" / f"{name}.py", folder / f"{name}.py")
    py_agent(folder, "mk_first")
    py_agent(folder, "mk_swap", "swap")
    py_agent(folder, "mk_eager", "eager")  # writes a reply before it is asked, as their engine allows
    agents = ["mk_eager", "mk_first", "mk_swap"]
    if java_missing() is None:  # holds a search table of 300 MiB, with a memory allowance of its own
        java_agent(folder, "mk_java", "swap 300", toml="memory = 2048\n")
        agents.append("mk_java")
    out = tmp_path / "reports"
    args = ["run", "--rounds", 1, "--bots", folder, "--out", out, "--name", "t", "--quiet"]
    # No other flags: their rules bring their engine's clock, an hour per agent per game, no limit per move.
    run = arena(*args, "--rules", "mankalah", cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "report: " in run.stdout
    with sqlite3.connect(store_path(out, "t")) as db:
        stored = json.loads(db.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
    settings = Settings.from_dict(stored)
    clock = settings.clock
    assert (settings.rules, clock.bank_ms, clock.move_ms) == ("mankalah", 3_600_000, 3_600_000)
    assert settings.memory_mb == 4096
    page = (out / "t" / "index.html").read_text()
    assert "3600000 ms per bot per game" in page
    assert "cannot begin at an opening (Manchester agents)" in page
    if "mk_java" in agents:
        assert "4096 MiB; a bot.toml may ask for up to 4096 MiB; by their bot.toml: mk_java 2048 MiB" in page
    # fixed for the tournament's life
    other = arena(*args, "--time-bank", "5", cwd=tmp_path, timeout=300)
    assert other.returncode == 2 and "bank_ms 3600000 (asked: 5000)" in other.stderr
    exported = arena("export", "--out", out, "--name", "t", "--format", "jsonl", cwd=tmp_path, timeout=300)
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    bots = 2 + len(agents)
    assert len(records) == bots * (bots - 1)
    for r in records:
        assert r["rules"] == "mankalah"
        assert (r["reason"], r["faulty"]) == ("normal", None), r
        replays(r)
        # An agent's protocol cannot begin at an opening: its games start at the start position, the others'
        # from the round's opening (South's first turn under the pie rule).
        with_agent = bool({r["south"], r["north"]} & set(agents))
        assert (r["opening"] == []) == with_agent, r
        for name in agents:
            if name in (r["south"], r["north"]):
                assert heard(r, name) == transcript(r, name), (name, r)
    swapped = {(r["north"], SWAP in r["moves"]) for r in records}
    assert ("mk_swap", True) in swapped and ("mk_first", False) in swapped
    if "mk_java" in agents:
        assert ("mk_java", True) in swapped
        java = [r["stderr"]["mk_java"] for r in records if "mk_java" in (r["south"], r["north"])]
        assert all("max heap MiB 15" in log and "holds MiB 300" in log for log in java), java  # 3/4 of 2048
    for name in agents:  # each agent played both sides
        assert {name} <= {r["south"] for r in records} and {name} <= {r["north"] for r in records}


@pytest.mark.slow
def test_commands_refuse_agents_under_other_rules(tmp_path: Path) -> None:
    folder = tmp_path / "bots"
    py_agent(folder, "mk_first")
    shutil.copy(ROOT / "bots" / "greedy.py", folder / "greedy.py")
    for args in (["play", "mk_first", "greedy"], ["run", "--out", tmp_path / "reports"]):
        done = arena(
            *args, "--bots", folder, "--rules", "kalah,pits=7,seeds=7,pie", cwd=tmp_path, timeout=300
        )
        assert done.returncode == 2, done
        assert "arena: error: bot 'mk_first' speaks the Manchester protocol" in done.stderr
        assert "'mankalah'" in done.stderr and len(done.stderr.splitlines()) == 1


# --- the time bank ----------------------------------------------------------------------------------------

SLEEPER = """
def answer(board, moves):
    time.sleep(DELAY)
    say(str(first_legal(board)))
"""


def test_v1_bot_sees_its_bank_shrink_in_move(tmp_path: Path, bots) -> None:
    bots.make("sleeper", SLEEPER, setup="DELAY = 0.03")
    shutil.copy(ROOT / "bots" / "greedy.py", tmp_path / "greedy.py")
    done = arena(
        "play", "sleeper", "greedy", "--bots", tmp_path, "--rules", "kalah,pits=4,seeds=3",
        "--time-bank", "3", "--json", "--no-sandbox", cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["reason"] == "normal", record
    offered = [int(line.split()[1]) for line in bots.log("sleeper") if line.startswith("MOVE ")]
    # No --move-time: the bank is the only limit. The first move, within the startup allowance, is free.
    assert offered[:2] == [3000, 3000] and len(offered) >= 4, offered
    assert all(later <= earlier - 25 for earlier, later in zip(offered[1:-1], offered[2:], strict=True)), (
        offered
    )


def test_bot_that_overspends_its_bank_times_out(bots) -> None:
    hostile = bots.player(bots.make("hostile", SLEEPER, setup="DELAY = 0.25"))
    good = bots.player(bots.make("good"))
    limits = Limits(TimeControl(move_ms=1000, startup_ms=2000, bank_ms=600))
    record = play_game(parse_rules("kalah,pits=4,seeds=3"), hostile, good, limits)
    assert (record.reason, record.faulty, record.winner) == ("timeout", "hostile", "good"), record
    assert "time bank of 600 ms for the game ran out" in record.detail
    offered = [int(line.split()[1]) for line in bots.log("hostile") if line.startswith("MOVE ")]
    assert offered[:2] == [600, 600]  # the first move, within the startup allowance, is not charged
    assert offered[2] < 400 and len(offered) <= 5
    replays(record)


def test_agent_that_overspends_its_bank_times_out(tmp_path: Path) -> None:
    hostile, good = py_agent(tmp_path, "hostile", "hang"), py_agent(tmp_path, "good")
    record = game(good, hostile, Limits(TimeControl(move_ms=5000, startup_ms=5000, bank_ms=400)))
    assert (record.reason, record.faulty) == ("timeout", "hostile"), record
    assert "no reply within 400 ms: its time bank of 400 ms for the game ran out" in record.detail


def test_their_rules_bring_their_engines_clock_unless_a_clock_is_asked() -> None:
    hour = MANKALAH_BANK_MS
    for asked, clock in [
        ({"rules": "mankalah"}, (hour, hour)),  # a bank of an hour, no limit per move
        ({"rules": "kalah,pits=7,seeds=7,pie,no-first-extra"}, (hour, hour)),  # the same game
        ({"rules": "mankalah", "move_ms": 2000}, (None, 2000)),
        ({"rules": "mankalah", "bank_ms": 60_000}, (60_000, 60_000)),
        ({"rules": "mankalah", "move_ms": 500, "bank_ms": 60_000}, (60_000, 500)),
        ({"rules": "kalah"}, (None, Settings().clock.move_ms)),
    ]:
        settings = resolve(None, asked)
        assert (settings.clock.bank_ms, settings.clock.move_ms) == clock, asked
    stored = Settings(rules="mankalah", clock=TimeControl(move_ms=700))  # a stored tournament keeps its clock
    assert resolve(stored, {"rules": "mankalah"}) == stored
