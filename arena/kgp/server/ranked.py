"""Remote agents on the ranked ladder, when the teacher lets them (`Classroom.kgp_ranked`, off by default).

A student's agent connected to the KGP port (kgp.py) is then, while connected, a player of the ladder's
field named SLUG.kgp (a slug has no "."): the KGP worker keeps the connected agents in CLASS_DIR/agents.json
and moves the field's generation when they change; the ladder worker enters each as a KGP bot whose process
is arena's bridge (kgp_bridge.py), outside the sandbox, which reaches the agent through this worker's Unix
socket (CLASS_DIR/kgp.sock). A game takes the agent's connection for itself (another game of the agent waits
for it, before its clock starts), and the `Desk` relays the lines: it answers the game's greeting for the
agent (greeted once, when it connected), keeps the game's `goodbye` from it, and numbers the game's ids after
the connection's earlier ones, so that the agent sees one server. The referee, the clock and the store are
the ladder's: a game is rated like any; a dropped connection forfeits the game in progress, and an agent
that is not connected is not in the field (the ladder restarts without it at once). The final's ranking
has the agents connected when it begins (final.py): not frozen, an agent must be connected when its games
come, or each is lost saying it is not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from arena.kgp.grammar import LINE_LIMIT, Command, KgpError, parse
from arena.kgp.server.bridge import READY
from arena.match.bots import Bot
from arena.match.process import Fault
from arena.match.referee import REMOTE_WAIT_S
from arena.server.classdir import ClassDir

SUFFIX = ".kgp"  # SLUG.kgp: a student's remote agent on the ladder
MARK = "remote agent (computing power not limited by arena)"  # what the pages say of one
AGENTS = "agents.json"
VERSIONS = "agent_versions.json"  # the version each connected agent states (its newest connection's)
SESSIONS = "agent_sessions.json"  # each connected agent's count of connections: a new one plays at once
SOCKET = "kgp.sock"
BRIDGE = Path(__file__).with_name("bridge.py")
ASK_S = 10.0  # for a bridge to say whose agent it wants
STILL_S = 1.0  # how often a connection between games asks whether the teacher still ranks remote agents
LOOK_S = 0.1  # how often a waiting or relaying connection looks whether its game (or its agent) is over
log = logging.getLogger("arena")


def bot_name(slug: str) -> str:
    return slug + SUFFIX


def is_agent(name: str) -> bool:
    """Whether a ladder's player is a remote agent (a student's bot or a reference has no '.' in its name)."""
    return name.endswith(SUFFIX)


def connected(where: ClassDir) -> list[str]:
    """The students whose agent is connected and waiting for ranked games, as the KGP worker last wrote."""
    try:
        slugs = json.loads((where.root / AGENTS).read_text())
    except (OSError, ValueError):
        return []
    return [s for s in slugs if isinstance(s, str)] if isinstance(slugs, list) else []


def stated_versions(where: ClassDir) -> dict[str, str]:
    """The version each connected agent states (Kgp.version), as the KGP worker last wrote: a new one is a
    new digest, and so a new rating, as an upload's new version is."""
    try:
        found = json.loads((where.root / VERSIONS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def sessions(where: ClassDir) -> dict[str, int]:
    """Each connected agent's count of connections since the KGP worker started, as it last wrote: the
    ladder gives an agent with a new one games at once, though the ladder had settled (worker.py)."""
    try:
        found = json.loads((where.root / SESSIONS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in found.items() if isinstance(v, int)} if isinstance(found, dict) else {}


def port_on() -> bool:
    """Whether this server has a KGP port (`arena serve --kgp-port`, which sets ARENA_KGP for every worker):
    without its worker, the agents a former run left in agents.json are none."""
    parts = os.environ.get("ARENA_KGP", "").split(" ")
    return len(parts) > 1 and parts[1] != ""


def bots(where: ClassDir, slugs: list[str] | None = None, no_move: str = "random") -> list[Bot]:
    """The connected agents (or those of `slugs`) as bots of a tournament: each a KGP bot whose process is
    the bridge to it, one version a student (arena sees none of the agent's code). `no_move`: the teacher's
    choice for a position an agent gives no move for (Classroom.kgp_no_move)."""
    found = []
    versions = stated_versions(where)
    for slug in connected(where) if slugs is None else slugs:
        argv = (sys.executable, "-I", str(BRIDGE), str(where.root / SOCKET), slug)
        stated = versions.get(slug, "")
        digest = hashlib.sha256(f"remote kgp agent {slug} {stated}".encode()).hexdigest()[:16]
        name = bot_name(slug)
        found.append(Bot(name, argv, where.root, BRIDGE, digest, slug, "kgp", remote=True, no_move=no_move))
    return found


class Lines(Protocol):
    """What the desk needs of an agent's connection (kgp.py's SocketLines)."""

    @property
    def closed(self) -> bool: ...
    def gone(self) -> bool: ...
    def read_line(self, deadline: float) -> str | None: ...
    def forward(self, line: str) -> None: ...


@dataclasses.dataclass(eq=False)
class Session:
    """One game's hold on an agent's connection: the bridge's socket, and where its ids start."""

    conn: socket.socket
    base: int
    over: threading.Event = dataclasses.field(default_factory=threading.Event)


@dataclasses.dataclass(eq=False)
class Lent:
    """A connection waiting for ranked games: its lines, the last id it was sent, and its game if any."""

    lines: Lines
    top: int = 0
    session: Session | None = None
    version: str = ""  # the version its agent states (Kgp.version)


class Desk:
    """The KGP worker's side: the connections of ranked agents, lent to the ladder's games one at a time."""

    def __init__(self, where: ClassDir, told: Callable[[], None]) -> None:
        self.where = where
        self.told = told  # after agents.json changed: the ladder told (kgp.py: the field's generation moved)
        self._changed = threading.Condition()
        self._seats: dict[str, list[Lent]] = {}
        self._sessions: dict[str, int] = {}  # connections made, by student
        self._publishing = threading.Lock()  # one agents.json at a time, each from the seats as they are
        if connected(where):  # a killed worker's agents: gone, and the ladder told
            self._publish()

    def listen(self) -> None:
        """Accept the bridges' connections on the Unix socket, each in a thread of its own (a thread)."""
        path = self.where.root / SOCKET
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(path))
        except OSError as e:
            log.error("remote agents cannot play ranked games: cannot listen at %s (%s)", path, e)
            return
        path.chmod(0o600)
        server.listen(16)
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=self._game, args=(conn,), daemon=True).start()

    def serve(
        self, lines: Lines, slug: str, still: Callable[[], bool], after: int = 0, version: str = ""
    ) -> int:
        """Lend a greeted connection to the ladder's games until it closes, or `still` says the teacher
        no longer ranks remote agents (looked at between games). `after`: the last id arena sent on it;
        returned, as the games left it."""
        seat = Lent(lines, top=after, version=version)
        with self._changed:
            self._seats.setdefault(slug, []).append(seat)
            self._sessions[slug] = self._sessions.get(slug, 0) + 1
        self._publish()  # a new connection, even of the same version, plays at once
        try:
            looked = time.monotonic()
            while not lines.closed:
                # Read between games too: an agent's late lines must not hide that it closed its end.
                try:
                    line = lines.read_line(time.monotonic() + LOOK_S)
                except Fault:  # the agent closed its connection
                    break
                with self._changed:
                    session = seat.session
                if session is not None:  # a game took the connection: what was read is the game's
                    self._relay(seat, session, line)
                    with self._changed:
                        seat.session = None
                        self._changed.notify_all()
                elif line is not None:
                    self._between(lines, line)
                if time.monotonic() - looked >= STILL_S:
                    looked = time.monotonic()
                    if not still():
                        break
        finally:
            with self._changed:
                self._seats[slug].remove(seat)
                last = not self._seats[slug]
                if last:
                    del self._seats[slug]
                if seat.session is not None:  # a game took it as it left: the game sees its end
                    seat.session.over.set()
                    with contextlib.suppress(OSError):
                        seat.session.conn.shutdown(socket.SHUT_RDWR)
                self._changed.notify_all()
            if last:
                self._publish()
        return seat.top

    @staticmethod
    def _between(lines: Lines, line: str) -> None:
        """A line between games: a `ping` answered, the rest (late moves, `set`s) of no game's."""
        with contextlib.suppress(KgpError, ValueError, OSError):
            command = parse(line)
            if command.name == "ping":
                lines.forward(Command("pong", ref=command.id).line() + "\r")

    def _relay(self, seat: Lent, session: Session, line: str | None) -> None:
        """The agent's lines to the game (`line` first, if one was read), their references to the game's
        ids, until the game is over."""
        while not session.over.is_set():
            if line is None:
                try:
                    line = seat.lines.read_line(time.monotonic() + LOOK_S)
                except Fault:  # the agent's connection closed: the game's bridge sees its end
                    break
                if line is None:
                    continue
            out = self._for_game(seat.lines, session, line)
            line = None
            if out is None:
                continue
            try:
                session.conn.sendall(out.encode("ascii", "replace") + b"\r\n")
            except OSError:
                break
        if line is not None:  # read as the game ended: the connection's, between games (a `ping` answered)
            self._between(seat.lines, line)
        session.over.set()
        with contextlib.suppress(OSError):
            session.conn.shutdown(socket.SHUT_RDWR)

    def _for_game(self, lines: Lines, session: Session, line: str) -> str | None:
        """An agent's line as the game reads it (its reference to the game's ids), or None: a `ping` is
        the connection's, answered here (the game may be ending and read no more)."""
        try:
            command = parse(line)
        except KgpError:
            return line  # the game answers it `error`, and counts it
        if command.name == "ping":
            self._between(lines, line)
            return None
        if command.ref is None:
            return line
        ref = command.ref - session.base if command.ref > session.base else 0  # 0: no id of the game's
        return dataclasses.replace(command, ref=ref).line()

    def _game(self, conn: socket.socket) -> None:
        """One game's bridge: the agent it asks for, when free, then the game's lines to the agent."""
        try:
            conn.settimeout(ASK_S)
            reader = conn.makefile("rb")
            slug = reader.readline(100).decode("ascii", "replace").strip()
            conn.settimeout(None)  # then a game's pace: its lines come when the referee sends them
            seat, why = self._take(slug, conn)
            if seat is None:
                conn.sendall(why.encode() + b"\n")
                return
            session = seat.session
            assert session is not None
            try:  # from here the agent is this game's: whatever ends it gives the agent back
                conn.sendall(READY)
                self._to_agent(seat, session, reader)
            finally:
                session.over.set()
        except OSError:
            pass
        finally:
            conn.close()

    def _take(self, slug: str, conn: socket.socket) -> tuple[Lent | None, str]:
        """A free connection of `slug`'s agent, now ours (waiting while the agent plays another game)."""
        until = time.monotonic() + REMOTE_WAIT_S - 5.0
        with self._changed:
            while True:
                seats = self._seats.get(slug, [])
                if not seats:
                    return None, f"{slug}'s agent is not connected to the class server"
                free = next((s for s in seats if s.session is None and not s.lines.closed), None)
                if free is not None:
                    free.session = Session(conn, free.top)
                    return free, ""
                if time.monotonic() >= until:
                    return None, f"{slug}'s agent was busy in other games for {REMOTE_WAIT_S:.0f} s"
                self._changed.wait(LOOK_S)

    def _to_agent(self, seat: Lent, session: Session, reader: Any) -> None:
        """The game's lines to the agent: its greeting answered here, its `goodbye` kept, its ids after
        the connection's earlier ones."""
        greeted = False
        while not session.over.is_set():
            raw = reader.readline(LINE_LIMIT + 2)
            if not raw:
                return
            try:
                command = parse(raw.decode("ascii", "replace").rstrip("\r\n"))
            except KgpError:
                continue  # arena's own lines all parse
            if command.name == "kgp":
                session.conn.sendall(b"mode freeplay\r\n")
                continue
            if command.name == "ok" and not greeted:
                greeted = True  # the game's `ok freeplay`: the agent had its own
                continue
            if command.name == "goodbye":
                return
            if command.id is not None:
                command = dataclasses.replace(command, id=command.id + session.base)
                seat.top = max(seat.top, command.id or 0)
            if command.name == "stop" and command.ref is not None:  # it refers to the game's own `state`
                command = dataclasses.replace(command, ref=command.ref + session.base)
            try:
                seat.lines.forward(command.line() + "\r")
            except (OSError, Fault):
                return

    def _publish(self) -> None:
        """agents.json written anew, and the ladder told its field changed."""
        with self._publishing:
            with self._changed:
                slugs = sorted(self._seats)
                versions = {slug: self._seats[slug][-1].version for slug in slugs}
                made = {slug: self._sessions.get(slug, 0) for slug in slugs}
            for name, data in (
                (VERSIONS, versions),
                (SESSIONS, made),
                (AGENTS, slugs),
            ):  # the versions and sessions first: read with the slugs
                path = self.where.root / name
                part = path.with_name(f".{name}.{os.getpid()}.part")
                part.write_text(json.dumps(data))
                part.replace(path)
        self.told()
