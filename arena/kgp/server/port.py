"""The class server's KGP port (`arena serve --kgp-port PORT`): a student's agent, on their own machine,
connects over TCP (or a WebSocket at /socket, with --kgp-websocket-port, as on the course server), is
greeted `kgp 1 0 1`, says `set auth:token TOKEN` (the token of `arena submit`) and `mode freeplay`, and
then plays practice games, game after game, until it leaves: against the ladder's bots and, when
another student's agent is connected too, against it (they meet in kgp_lobby.py's lobby; each student keeps
the games).

The referee is arena's own: the agent's side is the KgpWire of arena/match/kgp_wire.py (what a sandboxed KGP
agent speaks over its relay), here over the socket, and the opponent a ladder bot in the sandbox, under the
server's rules and clock (the last legal `move` before `stop` counts; none is a forfeit on time). A fault of
the agent (no move in time, a dropped connection, too many lines that are not KGP) loses the game in progress
and ends the connection, as a faulty bot's process is ended. The games go to a practice store of their own
(CLASS_DIR/practice/SLUG.jsonl, one GameRecord a line), never the ranked ladder's. Where the teacher ranks
remote agents (Classroom.kgp_ranked), a student's connection plays the ranked ladder's games instead, lent to
them by kgp_ranked.py's desk, and its practice games stop while it does.

The port faces the open internet: a token is required (wrong ones counted by the sign-in throttle as
`arena submit`'s are), connections are bounded per student and in all, games per student a day, a line
by kgp.py's limit (a longer one is answered `error`, as garbage is, and counted), the handshake by
HANDSHAKE_S; nothing an agent writes ends more than its own connection. One thread a connection: the
games' work is the bots' processes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from arena.kgp.grammar import LINE_LIMIT, Command
from arena.kgp.server.lobby import Lobby, Waiting
from arena.kgp.server.ranked import Desk
from arena.kgp.wire import Kgp
from arena.match.bots import Bot, BotError, Where, load_bot
from arena.match.process import Fault
from arena.match.protocol import Wire
from arena.match.record import GameRecord, Reason
from arena.match.referee import Player
from arena.report.replay import Replay, replay, unpiped
from arena.server.classdir import ClassDir
from arena.tournament.settings import Settings

PER_STUDENT = 2  # connections one student may hold at once
CONNECTIONS = 64  # connections in all, authenticated or not
UNPROVEN = 4  # connections one address may hold before they have a token (or a guest's place)
HANDSHAKE_S = 30.0  # from connecting to `mode freeplay`
FORWARD_S = 5.0  # a ranked game's line to an agent that reads nothing: the connection is given up
LATE_S = 0.5  # past a deadline, lines already come are still read for this long
GAMES_A_DAY = 1000  # practice games a student may play in 24 hours (each starts a ladder bot's process)
GAMES_PER_OPPONENT = 2  # a game from each side, then the next bot of the ladder
GUEST = "_guests"  # the practice file of guests' games, and their lobby name: no student's slug has a "_"
GUEST_CONNECTIONS = 4  # guests connected at once, in all (one an address)
GUEST_GAMES_A_DAY = 200  # practice games all guests together may play in 24 hours
NO_TOKEN = (
    "auth:token required (this class admits no guests): set it to your token from your page on the server"
)
WRONG_TOKEN = "no valid token: copy it from your page on the server"
THROTTLED = "too many wrong tokens from your address: wait a few minutes, then try again"
log = logging.getLogger("arena")


class SocketLines:
    """What KgpWire and the referee ask of a bot's process (process.Channel), over a TCP socket.
    A line over the limit is cut to one character past it (so that the grammar answers it `error` and
    counts it) and the rest of it skipped: an agent cannot make the server hold more than a line."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.closed = False
        self._buffer = bytearray()
        self._skipping = False  # inside an over-long line, until its end
        self.on_close: Callable[[], None] = lambda: None  # the student's connection given back
        self._out: socket.socket | None = None  # `forward`'s own descriptor of the socket

    def _write(self, data: bytes, wait: float) -> None:
        """Send a line (TimeoutError, OSError)."""
        self.sock.settimeout(wait)
        self.sock.sendall(data)

    def _recv(self, wait: float) -> bytes | None:
        """What came within `wait` seconds (None: nothing; b"": the connection closed)."""
        try:
            self.sock.settimeout(wait)
            return self.sock.recv(65536)
        except TimeoutError:
            return None
        except OSError:
            return b""

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        if self._out is not None:
            self._out.close()

    def forward(self, line: str) -> None:
        """Send a line from another thread than the reader's (a ranked game's, kgp_ranked.py), through a
        descriptor of its own, so that the reader's timeouts are not the writer's. OSError if it failed."""
        if self.closed:
            raise OSError("the connection closed")
        if self._out is None:
            self._out = self.sock.dup()
            self._out.settimeout(FORWARD_S)
        self._out.sendall(_crlf(line).encode("ascii", "replace"))

    def gone(self) -> bool:
        """Whether the agent has closed its end (what it wrote meanwhile stays to be read)."""
        if self.closed:
            return True
        try:
            self.sock.settimeout(0.0)  # no waiting: nothing to read raises BlockingIOError at once
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def send(self, line: str, deadline: float) -> None:
        data = _crlf(line).encode("ascii")
        try:
            self._write(data, max(0.01, deadline - time.monotonic()))
        except TimeoutError:
            raise Fault(Reason.TIMEOUT, "does not read what the server writes") from None
        except OSError:
            self.kill()
            raise Fault(Reason.CRASH, "the connection closed") from None

    def read_line(
        self, deadline: float, on_slow: Any = None, slow_after: float = 0.005, limit: int = LINE_LIMIT
    ) -> str | None:
        on_slow_at = time.monotonic() + slow_after if on_slow is not None else None
        while True:
            newline = self._buffer.find(b"\n")
            if self._skipping and newline >= 0:
                del self._buffer[: newline + 1]
                self._skipping = False
                continue
            if self._skipping:
                self._buffer.clear()
            elif newline >= 0:
                raw = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                return raw.removesuffix(b"\r").decode("ascii", errors="replace")
            elif len(self._buffer) > limit:
                cut = bytes(self._buffer[: limit + 1]).decode("ascii", errors="replace")
                self._buffer.clear()
                self._skipping = True
                return cut
            now = time.monotonic()
            if now > deadline + LATE_S:  # what keeps coming after the deadline waits (a ping flood)
                return None
            if on_slow_at is not None and now >= on_slow_at:
                on_slow()
                on_slow_at = None
            wait = deadline - now
            if on_slow_at is not None:
                wait = min(wait, on_slow_at - now)
            if wait <= 0 and on_slow_at is None:
                return None
            chunk = self._recv(max(wait, 0.001))
            if chunk is None:
                continue
            if not chunk:
                self.kill()
                raise Fault(Reason.CRASH, "the connection closed")
            self._buffer += chunk

    def quit(self, line: str, grace: float) -> None:
        with contextlib.suppress(Fault):
            self.send(line, time.monotonic() + grace)
        self.kill()

    def kill(self) -> None:
        if not self.closed:
            self.closed = True
            self.on_close()  # before the agent sees the end: it may connect again at once
            self._close()

    # What a bot's process has and a remote agent has not: its stderr, limits, signals.
    def stderr_tail(self, since: int = 0) -> str:
        return ""

    def stderr_mark(self, settle: float = 0.0) -> int:
        return 0

    def memory_verdict(self, said: str = "", settle: float = 0.0, since: int = 0) -> str:
        return ""

    def check_limits(self) -> None:
        return None

    def pause(self) -> None:
        return None

    def resume(self) -> None:
        return None


def _crlf(line: str) -> str:
    """A line as go-kgp writes it, on TCP and in a WebSocket frame alike: ending in CRLF. The course's
    Python library drops a command without arguments (`stop`, `goodbye`) that lacks a line end."""
    return line.removesuffix("\n").removesuffix("\r") + "\r\n"


class WebSocketLines(SocketLines):
    """The same over a WebSocket (`/socket`, as the course server's): a message is a line (CRLF-ended, as
    go-kgp's), or several."""

    def __init__(self, ws: Any) -> None:
        super().__init__(cast(socket.socket, None))
        self.ws = ws

    def _write(self, data: bytes, wait: float) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            self.ws.send(data.decode("ascii"))  # a line with its CRLF, as go-kgp's frames
        except ConnectionClosed:
            raise OSError("closed") from None

    def _recv(self, wait: float) -> bytes | None:
        from websockets.exceptions import ConnectionClosed

        try:
            message = self.ws.recv(timeout=wait)
        except TimeoutError:
            return None
        except ConnectionClosed:
            return b""
        data = message if isinstance(message, bytes) else message.encode("utf-8", "replace")
        return data if data.endswith(b"\n") else data + b"\n"

    def _close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()

    def forward(self, line: str) -> None:
        if self.closed:
            raise OSError("the connection closed")
        self._write(_crlf(line).encode("ascii", "replace"), FORWARD_S)

    def gone(self) -> bool:
        from websockets.protocol import State

        return self.closed or self.ws.protocol.state is not State.OPEN


class Remote(Player):
    """The agent's seat: a Player whose wire is the connection's, never restarted (after a fault the
    connection is closed, and the agent connects again)."""

    def __init__(self, wire: Kgp, name: str) -> None:
        here = Path(".")
        super().__init__(Bot(name, (), here, here, "remote", protocol="kgp"), name)
        self._connection: Kgp | None = wire

    def start(self) -> Wire:
        if self._wire is None:
            if self._connection is None:
                raise Fault(Reason.CRASH, "the connection closed")
            self._wire, self._connection = self._connection, None
            # No startup allowance: the agent was running before it connected, on a machine of its own.
            self._fresh, self._mark = False, 0
        return self._wire

    def kill(self) -> None:
        """After a fault: `goodbye` (if the connection still takes it), and the connection closed."""
        if self._wire is not None:
            self._wire.quit(0.2)
        super().kill()


class Door:
    """One connection's place: whether it was let in, and whether it has proved itself (a token, or a
    guest's place) and so no longer counts against its address."""

    def __init__(self, doors: Doors, address: str, allowed: bool, why: str) -> None:
        self.doors, self.address, self.allowed, self.why = doors, address, allowed, why
        self.proven = False

    def prove(self) -> None:
        if self.allowed and not self.proven:
            self.proven = True
            self.doors.give_back(UNPROVEN_KEY + self.address)


UNPROVEN_KEY = "unproven "  # the doors' key of an address's connections without a token yet


class Doors:
    """Who holds a connection: at most PER_STUDENT a student, CONNECTIONS in all, and UNPROVEN an address
    before its connections have a token (so that one address cannot fill the port with idle ones)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self.open = 0

    @contextlib.contextmanager
    def connection(self, address: str = "") -> Iterator[Door]:
        key = UNPROVEN_KEY + address
        with self._lock:
            why = ""
            if self.open >= CONNECTIONS:
                why = "the server has too many connections: try again later"
            elif self._held.get(key, 0) >= UNPROVEN:
                why = f"{UNPROVEN} connections from your address wait for their token: send it, or close them"
            if not why:
                self.open += 1
                self._held[key] = self._held.get(key, 0) + 1
        door = Door(self, address, not why, why)
        try:
            yield door
        finally:
            door.prove()  # a connection that never proved itself gives its address's place back too
            with self._lock:
                self.open -= door.allowed

    def take(self, slug: str, most: int = PER_STUDENT) -> bool:
        """One of `most` connections of `slug` (a student; guests, or one address's guest), if one is left
        (give it back with `give_back`)."""
        with self._lock:
            if self._held.get(slug, 0) >= most:
                return False
            self._held[slug] = self._held.get(slug, 0) + 1
            return True

    def give_back(self, slug: str) -> None:
        with self._lock:
            self._held[slug] -= 1
            if not self._held[slug]:
                del self._held[slug]  # an address or a student gone leaves nothing behind


def refuse(lines: SocketLines, why: str) -> None:
    """`error` saying why, `goodbye`, and the connection closed."""
    with contextlib.suppress(Fault):
        lines.send(Command("error", (why,)).line() + "\r", time.monotonic() + 1.0)
    lines.quit("goodbye\r", 1.0)


class Gate:
    """The token check of one connection, counted by the sign-in throttle against its address; without a
    token, a guest's, if the teacher admits guests. `slug` is whose connection it is (GUEST for a guest)."""

    def __init__(self, address: str, doors: Doors) -> None:
        from django.http import HttpRequest

        self.doors = doors
        self.request = HttpRequest()
        self.request.META["REMOTE_ADDR"] = address
        self.request.path = self.request.path_info = "/kgp"
        self.request.method = "POST"
        self.address = address
        self.slug: str | None = None
        self._held: list[str] = []  # the doors' keys this connection holds
        # Its door's prove: called as the token is taken, before any answer to it is written, so that a
        # client that reads its `ok` and connects again finds its address's place already given back.
        self.proven: Callable[[], None] = lambda: None

    def __call__(self, token: str) -> str | None:
        from arena.server.people import throttle

        if not throttle.token_allowed(self.request):
            return THROTTLED
        if not token:
            return self._guest()
        from arena.server.people.access import member_of_token  # Django's models: once the worker set it up

        member = member_of_token(token)
        if member is None:
            throttle.token_failed(self.request)
            return WRONG_TOKEN
        if not self._take(member.slug, PER_STUDENT):
            return f"at most {PER_STUDENT} connections a student at once"
        self.slug = member.slug
        self.proven()
        return None

    def _guest(self) -> str | None:
        """A guest in, if the teacher admits guests and the guests' connections are not all taken."""
        from arena.server.models import Classroom

        classroom = Classroom.current()
        if classroom is None or not classroom.kgp_guests:
            return NO_TOKEN
        if not self._take(GUEST, GUEST_CONNECTIONS):
            return f"the server has {GUEST_CONNECTIONS} guests already: try again later, or use your token"
        if not self._take(f"{GUEST} {self.address}", 1):
            self.leave()
            return "one guest connection an address at once"
        self.slug = GUEST
        self.proven()
        return None

    def _take(self, key: str, most: int) -> bool:
        taken = self.doors.take(key, most)
        if taken:
            self._held.append(key)
        return taken

    def leave(self) -> None:
        """The connection is closed: what it held given back, once."""
        while self._held:
            self.doors.give_back(self._held.pop())


AGENT_MARK = " (KGP)"  # what ends an agent's name in its practice games; no ladder bot's name has a space


def agent_name(slug: str) -> str:
    """The name a student's agent (or a guest's) plays its practice games under."""
    return f"a guest{AGENT_MARK}" if slug == GUEST else f"{slug}{AGENT_MARK}"


def games_a_day(slug: str) -> int:
    """The practice games a student may play in 24 hours; guests, all together, fewer."""
    return GUEST_GAMES_A_DAY if slug == GUEST else GAMES_A_DAY


def practice_file(where: ClassDir, slug: str) -> Path:
    return where.practice / f"{slug}.jsonl"


def store(where: ClassDir, slug: str, record: GameRecord, agent: str) -> None:
    """One practice game, appended to the student's file in one write (O_APPEND): their two connections
    may end games at the same moment, and a line is never split between them."""
    row = {**record.to_dict(), "remote": True, "agent": agent, "at": time.time()}
    where.practice.mkdir(exist_ok=True)
    fd = os.open(practice_file(where, slug), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(row) + "\n").encode())
    finally:
        os.close(fd)


def practice_games(where: ClassDir, slug: str) -> list[GameRecord]:
    """A student's practice games, oldest first, for the replay."""
    return [record for record, _ in practice_played(where, slug)]


def practice_played(where: ClassDir, slug: str) -> list[tuple[GameRecord, datetime]]:
    """A student's practice games with when each ended, oldest first: a game's number on its page is its
    place here, from 1."""
    path = practice_file(where, slug)
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [(GameRecord.from_dict(row), datetime.fromtimestamp(float(row.get("at", 0)), UTC)) for row in rows]


def practice_replay(
    where: ClassDir,
    record: GameRecord,
    settings: Settings,
    may_see: Callable[[str], bool],
    named: Callable[[str, str], str | None],
) -> Replay | None:
    """A practice game replayed for its page with the lines that bring its fault back where they mean
    something: a ladder bot's, fed to it in its author's folder (`named`, as for a ladder game: its active
    version, since a practice file does not keep which played) at the server's clock; an agent's none, for
    it was sent KGP over its connection, not arena's protocol on a pipe. None where there is no fault or
    the viewer may not see its lines (the page's replay then has none)."""
    bot = record.faulty
    if not bot or not may_see(bot):
        return None
    if bot.endswith(AGENT_MARK):
        return unpiped(replay(record))
    place = next((Where(b.path, b.argv) for b in opponents(where) if b.name == bot), None)
    folder = named(bot, "")
    return replay(
        record, settings.clock, places={bot: place} if place else None,
        named={bot: folder} if folder is not None else None,
    )  # fmt: skip


def games_today(where: ClassDir, slug: str) -> int:
    """The student's practice games of the last 24 hours."""
    path, since = practice_file(where, slug), time.time() - 86400
    if not path.exists():
        return 0
    with path.open() as rows:
        return sum(1 for row in rows if float(json.loads(row).get("at", 0)) >= since)


def opponents(where: ClassDir) -> list[Bot]:
    """The ladder's bots as they are now (a folder that cannot be loaded is left out)."""
    found = []
    for path in sorted(where.bots.iterdir()) if where.bots.is_dir() else []:
        with contextlib.suppress(BotError, OSError):
            found.append(load_bot(path))
    return found


def ranks_agents(slug: str) -> bool:
    """Whether `slug`'s agent plays on the ranked ladder (the teacher's choice; a guest's never)."""
    from arena.server.models import Classroom

    classroom = Classroom.current()
    return slug != GUEST and classroom is not None and classroom.kgp_ranked


def field_changed() -> None:
    """Tell the ladder its field changed (a remote agent came or left)."""
    from arena.server.models import Classroom

    classroom = Classroom.current()
    if classroom is not None:
        classroom.bump()


def serve_connection(
    lines: SocketLines, address: str, where: ClassDir, settings: Settings, doors: Doors, lobby: Lobby,
    desk: Desk | None = None,
) -> None:  # fmt: skip
    """One agent's connection, from the greeting to its last game: practice games, or the ranked ladder's
    (kgp_ranked.py) while the teacher ranks remote agents."""
    from django.db import connection

    gate = Gate(address, doors)
    lines.on_close = gate.leave
    try:
        with doors.connection(address) as door:
            gate.proven = door.prove
            wire = Kgp(lines, gate=gate)
            if not door.allowed:
                refuse(lines, door.why)
                return
            if problem := Kgp.rules_problem(settings.game_rules()):
                refuse(lines, f"the class plays other rules: an agent {problem}")
                return
            try:
                wire.greet(time.monotonic() + HANDSHAKE_S)
            except Fault:
                return
            door.prove()
            slug = cast(str, gate.slug)
            me = Waiting(slug, Remote(wire, agent_name(slug)), wire.agent, lines.gone)
            ranked = lambda: ranks_agents(slug)  # noqa: E731
            practice = Practice(where, settings, lines, me, lobby, ranked if desk else lambda: False)
            while not lines.closed and not lines.gone():
                if desk is not None and ranked():
                    wire.last_id = desk.serve(lines, slug, ranked, wire.last_id, wire.version)
                else:
                    practice.play()
    except Exception:  # never the listener's end: this connection's alone, logged
        log.exception("KGP connection from %s", address)
    finally:
        lines.kill()
        connection.close()  # this thread's own


class Practice:
    """One connection's practice games, until it closes: turn about, a ladder bot's pair of games (a game
    from each side) and, when another student's agent is connected too, a pair against it (met in the
    lobby: whichever comes second plays both agents' games, and both students keep them)."""

    def __init__(
        self, where: ClassDir, settings: Settings, lines: SocketLines, me: Waiting, lobby: Lobby,
        ranked: Callable[[], bool],
    ) -> None:  # fmt: skip
        self.where, self.settings, self.lines, self.me, self.lobby = where, settings, lines, me, lobby
        self.ranked = ranked  # whether the agent should leave practice for the ranked ladder now
        self.rng = random.Random()

    def play(self) -> None:
        met = False  # the last pair was against an agent: the next is a ladder bot's
        while not self.lines.closed and not self.ranked():
            if games_today(self.where, self.me.slug) >= (most := games_a_day(self.me.slug)):
                refuse(self.lines, f"you have played {most} practice games in 24 hours: try again later")
                return
            field = opponents(self.where)
            if not met and self._meet():
                met = True
                continue
            met = False
            if self.lines.gone():
                return
            if not field:
                refuse(self.lines, "the ladder has no bots yet: try again later")
                return
            self._pair(self.rng.choice(field), None)

    def _meet(self) -> bool:
        """A pair of games against another student's connected agent, either ours to play (it was waiting)
        or theirs (we waited, and it came): whether there was one."""
        other = self.lobby.take(self.me.slug)
        if other is None:
            self.me.taken = False
            self.me.done.clear()
            return self.lobby.wait(self.me)
        try:
            self._pair(other.seat, other)
        finally:
            other.done.set()
        return True

    def _pair(self, opponent: Bot | Remote, other: Waiting | None) -> None:
        """GAMES_PER_OPPONENT games against a ladder bot, or against the agent `other` waited with."""
        from arena.api import Match

        played = Match(self.me.seat, opponent, self.settings)
        try:
            for _ in range(GAMES_PER_OPPONENT):
                record = played.play()
                store(self.where, self.me.slug, record, self.me.agent)
                if other is not None:
                    store(self.where, other.slug, record, other.agent)
                if self.lines.closed or (other is not None and other.gone()):
                    break
        finally:
            for player in played.players:
                if isinstance(player, Player) and not isinstance(player, Remote):
                    player.close(self.settings.limits().quit_grace_ms)
            played.warden.close()


def listen(host: str, port: int, where: ClassDir, settings: Settings, ws_port: int | None = None) -> None:
    """Accept connections until interrupted, each served by a thread of its own; WebSockets on `ws_port`
    (at /socket) too, if given."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    doors, lobby, desk = Doors(), Lobby(), Desk(where, field_changed)
    desk.listen()
    if ws_port:
        websockets = _websockets(host, ws_port, where, settings, doors, lobby, desk)
        threading.Thread(target=websockets.serve_forever, daemon=True).start()
    with socket.socket(family, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, port))
        server.listen(64)
        while True:
            sock, peer = server.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            args = (SocketLines(sock), str(peer[0]), where, settings, doors, lobby, desk)
            threading.Thread(target=serve_connection, args=args, daemon=True).start()


def _websockets(
    host: str, port: int, where: ClassDir, settings: Settings, doors: Doors, lobby: Lobby, desk: Desk
) -> Any:
    """The WebSocket listener (the websockets library's threaded server): /socket alone, a message at
    most a few lines long."""
    from websockets.sync.server import serve

    def only_socket(ws: Any, request: Any) -> Any:
        return None if request.path == "/socket" else ws.respond(404, "KGP is at /socket\n")

    def handler(ws: Any) -> None:
        address = str(ws.remote_address[0])
        serve_connection(WebSocketLines(ws), address, where, settings, doors, lobby, desk)

    return serve(handler, host, port, process_request=only_socket, max_size=4 * LINE_LIMIT, compression=None)
