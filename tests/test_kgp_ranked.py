"""The ranked ladder's side of a remote agent (arena/server/kgp_ranked.py), without a server: a greeted
connection at the desk plays the referee's games through arena's bridge, one server to the agent (ids go on
from game to game, the game's `goodbye` is kept from it), and once it has left, a game of it says why."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.game.rules import parse_rules
from arena.kgp.server.port import SocketLines
from arena.kgp.server.ranked import Desk, bots, connected, port_on, sessions
from arena.match.bots import Bot, load_bot
from arena.match.clock import Limits, TimeControl
from arena.match.record import GameRecord, Reason
from arena.match.referee import Player, play_game
from arena.server.classdir import ClassDir
from arena.store.writer import STORE_FILE, Store
from arena.tournament.schedule import Slot

ROOT = Path(__file__).resolve().parent.parent
STATE = re.compile(r"([0-9]+) state <([0-9,]+)>")
PING = re.compile(r"([0-9]+) ping")


def _agent(sock: socket.socket, seen: list[str], slow: threading.Event) -> None:
    """A greeted agent: each `state` answered with its first legal pit and `yield` (the first after `slow`
    is set half a second late), each `ping` with `pong`, every line kept."""
    ident = 1
    for raw in sock.makefile("rb"):
        line = raw.decode().rstrip("\r\n")
        seen.append(line)
        found = STATE.fullmatch(line)
        if ping := PING.fullmatch(line):
            with contextlib.suppress(OSError):
                sock.sendall(f"{ident}@{ping.group(1)} pong\r\n".encode())
            ident += 2
        if found and slow.is_set():
            slow.clear()
            time.sleep(0.5)
        if found:
            n, _, _, *pits = map(int, found.group(2).split(","))
            pit = next(k + 1 for k in range(n) if pits[k])
            try:
                sock.sendall(
                    f"{ident}@{found.group(1)} move {pit}\r\n{ident + 2}@{found.group(1)} yield\r\n".encode()
                )
            except OSError:  # the test closed it
                return
            ident += 4


def _until(what: str, check: Callable[[], Any], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"waited {seconds:.0f} s for {what}"
        time.sleep(0.05)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A class folder with a short path: a Unix socket's path is at most 107 bytes, a test's may be more."""
    made = Path(tempfile.mkdtemp(prefix="kgp", dir="/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.mark.slow
def test_a_connected_agent_plays_ranked_games_through_the_desk_and_is_absent_once_gone(
    short_dir: Path,
) -> None:
    where = ClassDir(short_dir)
    told: list[list[str]] = []
    desk = Desk(where, lambda: told.append(connected(where)))
    desk.listen()
    ours, theirs = socket.socketpair()
    seen: list[str] = []
    slow = threading.Event()
    threading.Thread(target=_agent, args=(theirs, seen, slow), daemon=True).start()
    threading.Thread(
        target=desk.serve, args=(SocketLines(ours), "tom", lambda: True, 100), daemon=True
    ).start()
    _until("the agent at the desk", lambda: connected(where) == ["tom"])
    [agent] = bots(where)
    assert agent.name == "tom.kgp" and agent.remote and agent.protocol == "kgp"
    rules, greedy = parse_rules("kalah"), load_bot(ROOT / "bots" / "greedy.py")
    limits = Limits(TimeControl(move_ms=2000, startup_ms=5000))
    records = []
    for _ in range(2):
        seat, other = Player(agent), Player(greedy)
        try:
            records.append(play_game(rules, seat, other, limits))
        finally:
            seat.close()
            other.close()
    for record in records:
        assert record.faulty is None and record.reason in (Reason.NORMAL, Reason.EARLY), record.detail
    slow.set()  # no startup allowance: the agent ran before its game, unlike a bot's new process
    [strict] = bots(where, no_move="forfeit")  # the teacher's choice (Classroom.kgp_no_move)
    seat, other = (
        Player(strict),
        Player(greedy),
    )  # the teacher's choice
    try:
        late = play_game(rules, seat, other, Limits(TimeControl(move_ms=200, startup_ms=5000)))
    finally:
        seat.close()
        other.close()
    assert late.faulty == "tom.kgp" and late.reason == Reason.TIMEOUT, late.told()
    _its_page_has_no_pipe(short_dir / "ladder", agent, greedy, late)
    states = [int(m.group(1)) for line in seen if (m := STATE.fullmatch(line))]
    assert states[0] > 100 and states == sorted(set(states)), "one server: ids go on from game to game"
    assert not any(line.endswith(("goodbye", "kgp 1 0 1", "ok freeplay")) for line in seen), seen[-3:]
    stops = [line for line in seen if line.endswith(" stop")]
    assert len(stops) == len(states), "a stop for every state, the one of the game lost on time too"
    assert stops and all(
        re.match(rf"[0-9]+@{state} stop", stop) for state, stop in zip(states, stops, strict=False)
    ), stops
    for _ in range(3):  # a bridge whose game worker was ended as the agent became its: the agent is freed
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.connect(str(short_dir / "kgp.sock"))
        dead.sendall(b"tom\n")
        dead.close()
    seats = desk._seats["tom"]  # noqa: SLF001 (the desk's own state: whether a game still holds the agent)
    _until("the agent free again", lambda: all(seat.session is None for seat in seats), 10)
    theirs.sendall(b"9 ping\r\n")  # between games: answered
    _until("the pong between games", lambda: "@9 pong" in seen)
    theirs.sendall(b"11 move 1\r\n")  # a line left unread must not hide that the agent then leaves
    theirs.shutdown(socket.SHUT_RDWR)  # it leaves: it is no player of the field, and a game of it says why
    _until("the agent gone from the desk, and the ladder told", lambda: len(told) == 2)
    assert told == [["tom"], []] and connected(where) == []
    seat, other = Player(agent), Player(greedy)
    try:
        lost = play_game(rules, seat, other, limits)
    finally:
        seat.close()
        other.close()
    assert lost.faulty == "tom.kgp" and lost.reason == Reason.CRASH
    assert "tom's agent is not connected to the class server" in lost.told(), lost.told()


def _its_page_has_no_pipe(home: Path, agent: Bot, greedy: Bot, record: GameRecord) -> None:
    """The ladder's page of a game an agent lost by a fault: its reason for all, and no lines to pipe to
    it, even for its student (the page built `printf ... | python3 -P bots/tom.kgp.py`, the bridge's
    path or the like: the agent was sent the game over its connection)."""
    from arena.server.standings import ladder

    home.mkdir()
    with Store(home / STORE_FILE) as store:
        store.add_game(Slot(1, "0" * 16, agent, greedy), record)
    shown = ladder.game(home, 1, lambda bot: True, lambda bot, version: "")
    assert shown is not None and shown["fault"]["bot"] == "tom.kgp", shown
    block = re.search(r"arenaBlock\(0, (.*?)\); arenaList", str(shown["viewer"]))
    fault = json.loads(block.group(1))["1"]["x"]  # type: ignore[union-attr]
    assert (fault["lines"], fault["cmd"], fault["reason"]) == ([], "", "timeout"), fault


def test_an_agent_that_states_a_new_version_enters_the_ladder_as_a_new_version(short_dir: Path) -> None:
    """Its version (Kgp.version: `set info:version`, or its name and authors) is in its digest: a connection
    of the same version is the same player, a new version a new one (a new rating), and the ladder is told
    at once of every new connection (it plays at once, worker.py) and counts them."""
    where = ClassDir(short_dir)
    told: list[list[str]] = []
    desk = Desk(where, lambda: told.append(connected(where)))
    desk.listen()
    digests, ends = [], []
    for k, version in enumerate(("1.0", "1.0", "2.0"), start=1):
        ours, theirs = socket.socketpair()
        ends.append(theirs)
        args = (SocketLines(ours), "tom", lambda: True, 100, version)
        threading.Thread(target=desk.serve, args=args, daemon=True).start()
        _until("the connection at the desk", lambda: len(desk._seats.get("tom", [])) == k)  # noqa: B023, SLF001
        _until("the ladder told of the connection", lambda: len(told) == k)  # noqa: B023
        digests.append(bots(where)[0].digest)
        assert sessions(where) == {"tom": k}
    assert digests[0] == digests[1] != digests[2]
    for end in ends:
        end.close()
    _until("the agent gone from the desk", lambda: len(told) == 4)


def test_a_server_without_a_kgp_port_enters_no_agents_a_former_run_left(monkeypatch: Any) -> None:
    """agents.json outlives its KGP worker: a server started again without --kgp-port must not enter them
    (each of their games would be a forfeit)."""
    monkeypatch.setenv("ARENA_KGP", "127.0.0.1  ")  # as arena serve sets it without --kgp-port
    assert not port_on()
    monkeypatch.setenv("ARENA_KGP", "127.0.0.1 2671 ")
    assert port_on()
