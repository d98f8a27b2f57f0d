"""KGP agents as bots (bot.toml `protocol = "kgp"`): an agent written from the spec alone (tests/kgp_agent.py)
starts in its sandbox, connects over the sandbox's private loopback to arena's relay on port 2671, and is
refereed as the course server would: the last legal `move` before `stop` counts. Real processes, the real
sandbox, the real CLI."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL

from arena.game.rules import SOUTH, RulesError, parse_rules
from arena.kgp.wire import ASK_AGAIN
from arena.match.bots import BotError, load_bot
from arena.match.clock import Limits, TimeControl
from arena.match.referee import Player, play_game
from arena.sandbox import Confinement, capabilities

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "tests" / "kgp_agent.py"
RULES = parse_rules("kalah,pits=4,seeds=3")
LIMITS = Limits(TimeControl(move_ms=300, startup_ms=5000))
CONF, _ = capabilities(Confinement(), want_sandbox=True)
needs_sandbox = pytest.mark.skipif(not CONF.sandbox, reason="a KGP agent's private loopback is the sandbox's")


COURSE = ROOT / "tests" / "kgp_course_client.py"
JAVA_LIKE = ROOT / "tests" / "kgp_java_client.py"


def agent_folder(bots: Path, name: str, style: str = "greedy", extra: str = "") -> Path:
    """An agent's folder: the spec agent in `style`, or (style "course", "course --race") the client that
    behaves as the course's Python library (tests/kgp_course_client.py), or (style "java ...") the one that
    behaves as its Java library (tests/kgp_java_client.py)."""
    folder = bots / name
    folder.mkdir(parents=True)
    shutil.copy(AGENT, folder / "kgp_agent.py")
    shutil.copy(COURSE, folder / "kgp_course_client.py")
    shutil.copy(JAVA_LIKE, folder / "kgp_java_client.py")
    command = f"python3 kgp_agent.py localhost 2671 --style {style}"
    if style.startswith("course"):
        command = f"python3 kgp_course_client.py localhost 2671{style.removeprefix('course')}"
    if style.startswith("java"):
        command = f"python3 kgp_java_client.py localhost 2671{style.removeprefix('java')}"
    (folder / "bot.toml").write_text(f'command = "{command}"\nprotocol = "kgp"\n{extra}')
    return folder


def first_legal(bots: Path) -> Path:
    bots.mkdir(parents=True, exist_ok=True)
    (bots / "first.py").write_text(FIRST_LEGAL)
    return bots / "first.py"


def play(tmp_path: Path, jailer, style: str, south: bool = True, rules=RULES, extra: str = "", seed: int = 0):
    bots = tmp_path / "bots"
    warden = jailer.warden(CONF)
    agent = jailer.player(load_bot(agent_folder(bots, "agent", style, extra)), warden)
    other = jailer.player(load_bot(first_legal(bots)), warden)
    pair = (agent, other) if south else (other, agent)
    record = play_game(rules, *pair, LIMITS, seed=seed)
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
def test_an_agent_with_only_an_illegal_move_forfeits_in_kgp_words(tmp_path, jailer):
    """The detail speaks of KGP's `state`, not of protocol v1's MOVE line."""
    record, _ = play(tmp_path, jailer, "illegal-only")
    assert (record.faulty, record.reason) == ("agent", "illegal"), record.detail
    assert "`state` shows its own row" in record.detail and "MOVE line" not in record.detail


@needs_sandbox
def test_a_late_move_after_stop_is_ignored(tmp_path, jailer):
    record, _ = play(tmp_path, jailer, "deepen")
    assert record.faulty is None, record.detail


@pytest.mark.slow
@needs_sandbox
def test_an_agent_that_never_moves_forfeits_on_time_where_its_bot_toml_says_so(tmp_path, jailer):
    record, _ = play(tmp_path, jailer, "silent", extra='no_move = "forfeit"\n')
    assert (record.faulty, record.reason) == ("agent", "timeout")
    assert "the last legal `move` before `stop` counts" in record.detail
    assert record.random_moves == {}


def positions_asked(record, rules=RULES, mine=SOUTH) -> int:
    """The agent's positions with more than one legal move: those a KGP agent is sent a `state` for."""
    pos, asked = rules.initial(), 0
    for ply in record.plies:
        asked += pos.to_move == mine and len(rules.legal_moves(pos)) > 1
        pos = rules.play(pos, ply)
    return asked


@pytest.mark.slow
@needs_sandbox
def test_an_agent_that_never_moves_gets_a_random_legal_move_for_every_position_as_on_the_course_server(
    tmp_path, jailer
):
    """The spec: with no `move` by `stop`, the server MUST make a random decision for the client. The game
    ends normally, every such move counted on the record, and the same seed draws the same moves."""
    record, _ = play(tmp_path, jailer, "silent")
    assert record.faulty is None, record.detail
    assert record.random_moves == {"agent": positions_asked(record)} and positions_asked(record) > 0
    again, _ = play(tmp_path / "again", jailer, "silent")
    assert again.moves == record.moves


@needs_sandbox
def test_an_agent_that_misses_one_answer_plays_on_with_one_random_move(tmp_path, jailer):
    """One position without a move: one random legal move stands in (the course server's), the game goes on
    to its normal end; with `no_move = "forfeit"` it is lost on time."""
    record, _ = play(tmp_path, jailer, "course --miss 2")
    assert record.faulty is None, record.detail
    assert record.random_moves == {"agent": 1}
    strict, _ = play(tmp_path / "strict", jailer, "course --miss 2", extra='no_move = "forfeit"\n')
    assert (strict.faulty, strict.reason) == ("agent", "timeout")


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("how", [" --hold 0.2", " --hold 0.42 --no-yield"])
def test_a_states_stop_waits_for_the_pong_the_course_librarys_search_must_let_go_of_its_lock_for(
    tmp_path, jailer, how
):
    """The course's Python library kills a state's search process on `stop`; killed while it still holds
    the lock of the library's send queue (its lines written, on a busy machine not yet let go), it leaves
    the library mute for good, not even a `pong`. The client here holds its lock 0.2 s after its `yield`,
    or (a search that never yields) 0.42 s after its moves, past its 300 ms: a `stop` then leaves it
    stuck, as it did on main (100 ms after the yield; at once at the time's end). Arena ends a state with
    `ping` and sends its `stop` once the `pong` came, which the library sends through the same queue: the
    client plays every position itself."""
    record, _ = play(tmp_path, jailer, f"course{how}")
    assert record.faulty is None, (record.detail, record.stderr)
    assert record.random_moves == {} and "stuck" not in record.stderr["agent"], record.stderr


@pytest.mark.slow
@needs_sandbox
def test_a_position_yielded_without_a_move_is_sent_again_as_the_java_library_needs(tmp_path, jailer):
    """The course's Java library can drop the moves of a search that starts before its main thread has
    noted the state, and then yields with none sent (a race of its threads, frequent on a loaded machine):
    the course server plays a random move; arena sends the position again on the same clock, and the agent
    plays every position itself. An agent that yields nothing every time gets its random move once the
    position has been sent again a few times (as often as ASK_AGAIN says and its clock lets)."""
    record, _ = play(tmp_path, jailer, "java --race-every 2")
    assert record.faulty is None, record.detail
    assert "dropped" in record.stderr["agent"], record.stderr
    assert record.random_moves == {}, record.stderr
    always, _ = play(tmp_path / "always", jailer, "java --race-every 1")
    assert always.faulty is None, always.detail
    assert always.random_moves == {"agent": positions_asked(always)}, always.stderr
    dropped = len(re.findall(r"^dropped \d+$", always.stderr["agent"], re.M))
    assert 2 * positions_asked(always) <= dropped <= (ASK_AGAIN + 1) * positions_asked(always), always.stderr


@needs_sandbox
def test_an_agent_runs_as_a_batch_job_so_a_thread_it_wakes_does_not_preempt_its_waker(tmp_path, jailer):
    """The course's Java library loses its moves when the search thread its main thread wakes runs first
    (a busy machine, one CPU): arena starts a KGP agent as a batch job (SCHED_BATCH), whose woken threads
    wait for their turn, as on the idle machine the library was written for."""
    record, _ = play(tmp_path, jailer, "java")
    assert record.faulty is None, record.detail
    assert "scheduled as SCHED_BATCH" in record.stderr["agent"], record.stderr


@needs_sandbox
def test_a_position_with_one_legal_move_is_played_without_asking_the_agent(tmp_path, jailer):
    """go-kgp's auto-move: the agent is sent no `state` with a single legal pit (the client writes `one legal
    move` to stderr if it is), and such positions came up in the game (else the test shows nothing)."""
    rules = parse_rules("kalah,pits=4,seeds=2")
    record, _ = play(tmp_path, jailer, "course", rules=rules)
    assert record.faulty is None, record.detail
    pos, single = rules.initial(), 0
    for ply in record.plies:
        single += pos.to_move == SOUTH and len(rules.legal_moves(pos)) == 1
        pos = rules.play(pos, ply)
    assert single > 0
    assert "one legal move" not in record.stderr["agent"]


@needs_sandbox
def test_an_agent_of_nothing_but_lines_that_are_not_kgp_forfeits_as_garbled(tmp_path, jailer):
    record, agent = play(tmp_path, jailer, "garbage")
    assert (record.faulty, record.reason) == ("agent", "garbled")
    assert record.detail == "wrote 17 lines that are not KGP"  # the reason, in arena's words alone
    assert record.said.startswith("the last: not an integer")  # the agent's own words: for its author
    assert "KGP!" in record.said and "KGP!" not in record.detail


@pytest.mark.slow
@needs_sandbox
def test_an_agent_that_never_connects_is_told_so(tmp_path, jailer):
    record, _ = play(tmp_path, jailer, "elsewhere")
    assert (record.faulty, record.reason) == ("agent", "timeout")
    assert "never connected to the KGP port (localhost:2671" in record.detail


@needs_sandbox
def test_lines_that_are_not_kgp_are_answered_with_error_and_counted(tmp_path, jailer):
    record, agent = play(tmp_path, jailer, "noisy")
    assert record.faulty is None, record.detail
    assert agent.wire().errors == positions_asked(record)  # type: ignore[attr-defined]


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
        ('command = "python3 a.py"\nprotocol = "kgp"\nno_move = "pass"\n', "'no_move' is what"),
        ('command = "python3 a.py"\nno_move = "forfeit"\n', 'with protocol = "kgp"'),
    ],
)
def test_bad_kgp_settings_say_what_is_wrong(tmp_path, toml, words):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "a.py").write_text("")
    (tmp_path / "b" / "bot.toml").write_text(toml)
    with pytest.raises(BotError, match=words):
        load_bot(tmp_path / "b")


@pytest.mark.slow
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


@pytest.mark.slow
@needs_sandbox
def test_arena_run_draws_an_agents_random_moves_from_its_seed_and_its_pages_count_them(tmp_path):
    """A live agent that never moves: every position it is asked gets a random legal move (as the course
    server's), the same --seed draws the same, and the report's bot page counts them in words."""
    bots = tmp_path / "bots"
    agent_folder(bots, "agent", "silent")
    first_legal(bots)
    runs = []
    for k in range(2):
        out = tmp_path / f"reports{k}"
        argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(out), "--rounds", "1"]
        argv += ["--rules", "kalah,pits=4,seeds=3", "--move-time", "100", "--openings", "0", "--quiet"]
        run = subprocess.run([*argv, "--seed", "5"], capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert run.returncode == 0, run.stderr
        export = subprocess.run(
            [sys.executable, "-m", "arena", "export", "--out", str(out)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        runs.append(
            sorted(
                (g["south"], g["moves"], g["random_moves"])
                for g in map(json.loads, export.stdout.splitlines())
            )
        )
    assert runs[0] == runs[1]
    games = runs[0]
    assert all(randoms.get("agent", 0) > 0 for _, _, randoms in games), games
    total = sum(randoms["agent"] for _, _, randoms in games)
    page = " ".join(p.read_text() for p in (tmp_path / "reports0").rglob("*.html"))
    assert f"no move by stop: a random legal move was played, {total} times in" in page


@pytest.mark.slow
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


# A scripted client: it logs every line arena sends, and answers its first state with one of each thing the
# referee must sort out (an illegal move, a legal one, a move for a state that is not this one, a ping, a
# line that is not KGP, then yield); later states with its first legal pit; a ping with pong.
SCRIPTED = r"""
import socket, sys
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
stream = sock.makefile("rw", newline="")
log = open("received.log", "w")
def send(line):
    stream.write(line + "\r\n"); stream.flush()
first = True
for line in stream:
    log.write(line); log.flush()
    words = line.split()
    if words[0] == "kgp":
        send('1 set info:name "scripted"'); send("3 mode freeplay")
    elif words[1] == "state":
        sid = words[0]
        pits = [int(n) for n in words[2].strip("<>").split(",")]
        legal = [p for p in range(1, pits[0] + 1) if pits[2 + p]]
        if first:
            send(f"5@{sid} move 9"); send(f"@{sid} move {legal[-1]}"); send(f"7@999 move {legal[0]}")
            send("9 ping"); send("garbage!!"); send(f"11@{sid} yield")
            first = False
        else:
            send(f"@{sid} move {legal[0]}"); send(f"@{sid} yield")
    elif words[1] == "ping":
        send(f"13@{words[0]} pong")
    elif words[-1] == "goodbye":
        break
"""


def test_the_wire_answers_a_scripted_client_line_by_line(tmp_path):
    """Without the sandbox the relay listens on the machine's loopback, here on a free port (bot.toml
    `port`): the lines arena writes, and what it makes of each of the client's, exactly."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tmp_path / "scripted"
    folder.mkdir()
    (folder / "client.py").write_text(SCRIPTED)
    (folder / "bot.toml").write_text(
        f'command = "python3 client.py {port}"\nprotocol = "kgp"\nport = {port}\n'
    )
    rules = parse_rules("kalah,pits=3,seeds=2")
    me, other = Player(load_bot(folder)), Player(load_bot(first_legal(tmp_path)))
    try:
        record = play_game(rules, me, other, LIMITS)
        wire = me.wire()
    finally:
        me.close()
        other.close()
    assert record.faulty is None, record.detail
    assert record.plies[0] == 3  # its last legal move, not the illegal 9 after it nor the one for state 999
    assert (wire.agent, wire.errors) == ("scripted", 1)  # type: ignore[attr-defined]
    got = (folder / "received.log").read_text().splitlines()
    assert got[0] == "kgp 1 0 1"
    raw = (folder / "received.log").read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n")  # every line ends in CRLF, as the grammar says
    ids = [int(line.split()[0].split("@")[0]) for line in got[1:] if line[0].isdigit()]
    assert ids == sorted(ids) and all(i % 2 == 0 for i in ids)  # arena's ids: even and rising
    text = "\n".join(got)
    assert got[1:3] == ["2@3 ok freeplay", "4 state <3,0,0,2,2,2,2,2,2>"]  # as the spec's example
    state = re.search(r"^(\d+) state <3,0,0,2,2,2,2,2,2>$", text, re.M)
    assert state, text
    assert re.search(r"^\d+@9 pong$", text, re.M)
    assert re.search(r'^\d+ error "not a KGP command: .garbage!!."$', text, re.M)
    # Its yield is met by a ping, and the state's stop comes once it answered (the course's Python library
    # can have its search still holding its send queue's lock, which the pong then waits for).
    after = got[got.index(state.group(0)) + 1 :]
    stop = next(k for k, line in enumerate(after) if re.fullmatch(rf"\d+@{state.group(1)} stop", line))
    assert any(re.fullmatch(r"\d+ ping", line) for line in after[:stop]), after
    assert got[-1] == "goodbye"


@pytest.mark.slow
@needs_sandbox
def test_an_agent_connects_when_arena_runs_as_an_ordinary_user(tmp_path):
    """Run by an ordinary user, the sandbox is a user namespace of that user's: its private loopback is up
    all the same (bubblewrap raises lo in the new network namespace before it drops its capabilities)."""
    import os
    import tempfile

    from test_redteam import as_nobody

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("run as root: the test drops to an ordinary user with setpriv")
    work = Path(tempfile.mkdtemp(prefix="arena-kgp-", dir="/tmp"))
    try:
        bots = work / "bots"
        agent_folder(bots, "agent")
        shutil.copy(ROOT / "bots" / "random.py", bots / "random.py")
        subprocess.run(["chmod", "-R", "a+rwX", str(work)], check=True)
        play = [sys.executable, "-m", "arena", "play", "agent", "random", "--bots", str(bots), "--json"]
        play += ["--rules", "kalah,pits=4,seeds=3", "--move-time", "200", "--games", "2"]
        keep = [ROOT, Path(sys.executable).resolve().parent]
        run = subprocess.run(as_nobody(play, keep), capture_output=True, text=True, timeout=180, cwd=ROOT)
        assert run.returncode == 0, run.stderr
        records = [json.loads(line) for line in run.stdout.splitlines()]
        assert [r["faulty"] for r in records] == [None, None], [r["detail"] for r in records]
    finally:
        shutil.rmtree(work, ignore_errors=True)


@needs_sandbox
def test_after_goodbye_the_connection_closes_so_an_agent_that_reads_on_exits(tmp_path, jailer):
    """The course's Python library reads on after `goodbye` until the server closes the connection: arena
    closes it after its goodbye, as the course server does, so such an agent exits in time (not killed)."""
    record, agent = play(tmp_path, jailer, "to-the-end")
    assert record.faulty is None, record.detail
    proc = agent.wire().proc
    began = time.monotonic()
    agent.close(LIMITS.quit_grace_ms)
    assert proc.returncode() == 0 and time.monotonic() - began < LIMITS.quit_grace_ms / 1000
