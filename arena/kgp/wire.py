"""KGP agents as bots: the referee's `Wire` spoken in the Kalah Game Protocol's freeplay mode.

The agent runs in its sandbox behind arena's relay (arena/kgp/relay.py), which listens on the KGP port
of the sandbox's private loopback and joins the agent's connection to the process's pipes; this class speaks
KGP over those pipes as the course server does over TCP: the greeting `kgp 1 0 1`, the agent's `mode
freeplay`, then for every position a `state` that the agent answers with `move`s until its time is up (or
it says `yield`), then `ping` and, once it answered `pong`, `stop`. The last legal `move` counts, as for an
anytime v1 bot; what arena chooses where the spec leaves a choice is in protocol.md ("KGP agents"). Every
line is parsed by arena/kgp/grammar.py.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from arena.game.rules import Move, Position, Rules, parse_rules
from arena.kgp.grammar import LINE_LIMIT, PORT, VERSION, Arg, Board, Command, KgpError, parse
from arena.kgp.relay import CONNECTED  # what the relay writes to stderr once the agent is connected
from arena.match.bots import Bot
from arena.match.process import Channel, Fault
from arena.match.record import Reason

RELAY = Path(__file__).with_name("relay.py")
PONG_GRACE_S = 0.1  # past a state's deadline, for the `pong` before its `stop` (and before the next `state`)
ASK_AGAIN = 6  # a position yielded without a move is sent again (a new `state`) this often, time allowing
ASK_PAUSE_S = 0.004  # before the first new `state`, doubled for each one after
PONG_S = 5.0  # the least an agent is given to answer `ping` after a state without a move (go-kgp: 20 s)
MAX_ERRORS = 16  # lines that are not KGP an agent may write (each answered with `error`) before it forfeits
_SHOWN = 40
_LEADING_ID = re.compile(
    r"[ \t]*([0-9]+)"
)  # the id of a line that is not KGP, for the `error` that answers it


class NoMove(Fault):
    """The agent gave no legal move for a position by `stop` (or said `yield` without one). The spec says
    the server MUST then make a random decision for it, as the course server does: the referee plays a random
    legal move unless the agent's `Bot.no_move` is "forfeit", when this is the timeout it says. `how` names
    the case in the words the game page counts it in."""

    def __init__(self, reason: Reason, detail: str, how: str) -> None:
        super().__init__(reason, detail)
        self.how = how
        self.took = 0.0  # the milliseconds it had (the referee's clock sets it)


def relay_argv(bot: Bot) -> tuple[str, ...]:
    """The command that starts a KGP agent: arena's relay on the agent's port, the agent's command after it.
    Isolated Python (-I): the relay imports nothing of arena nor of the agent's folder."""
    return (sys.executable, "-I", str(RELAY), str(bot.port or PORT), *bot.argv)


class Kgp:
    """A KGP agent spoken to over one process (the relay and the agent behind it)."""

    name = "kgp"
    one_game = False  # one connection plays game after game, as on the course server
    from_position = True  # every `state` carries the whole board

    def __init__(self, proc: Channel, gate: Callable[[str], str | None] | None = None) -> None:
        self.proc = proc
        # The class server's door (arena/kgp/server/port.py): given the agent's `set auth:token` ("" if none)
        # when it asks for freeplay, why it is refused, or None to let it play.
        self.gate = gate
        self.token = ""
        self._rules: Rules | None = None
        self._ready = False  # greeted, and the agent chose freeplay
        self._id = 0  # arena's ids are even, as the course server's
        self.errors = 0  # lines that were not KGP, each answered with `error`
        self.agent = ""  # its `set info:name`, if it said one
        self.authors = ""  # its `set info:authors`
        self.stated = ""  # its `set info:version`
        self.comment = ""  # its last `set info:comment`
        # a state whose `stop` waits for a `pong`: (state, ping)
        self._unstopped: tuple[int, int] | None = None
        self._pongs = True  # it answered its last `ping` in time (else its `stop`s come without one)
        self._missed = 0  # the `ping` it did not answer in time: a `pong` to it, late, and it is asked again

    @property
    def last_id(self) -> int:
        """The id of arena's last command: ids rise for as long as the connection lasts, whoever speaks for
        arena on it (the class server lends a connection to its ranked games, arena/kgp/server/ranked.py)."""
        return self._id

    @last_id.setter
    def last_id(self, value: int) -> None:
        self._id = max(self._id, value)

    @property
    def version(self) -> str:
        """The version the agent states: its `set info:version`, else the name and authors it sends (a
        ranked agent's new version starts a new rating, as an upload does)."""
        return self.stated or f"{self.agent} / {self.authors}"

    @staticmethod
    def rules_problem(rules: Rules) -> str | None:
        """KGP has no swap move and no word for rules: its agents play standard Kalah, any board size."""
        if rules.spec == parse_rules(f"kalah,pits={rules.pits},seeds={rules.seeds}").spec:
            return None
        return (
            "speaks KGP, whose agents know standard Kalah only (no pie rule, no other options): play it "
            f"under the rules 'kalah,pits={rules.pits},seeds={rules.seeds}' or another board size"
        )

    def _send(
        self, name: str, *args: Arg, ref: int | None = None, deadline: float, ident: bool = True
    ) -> int:
        self._id += 2 if ident else 0
        command = Command(name, args, self._id if ident else None, ref)
        self.proc.send(command.line() + "\r", deadline)  # the pipe adds "\n": lines end in CRLF
        return self._id

    def _read(self, until: float, on_slow: Callable[[], None] | None = None) -> Command | None:
        """The agent's next command by `until` (None: none came), answering what is not KGP with `error`
        and forfeiting an agent that writes too many such lines."""
        while True:
            line = self.proc.read_line(until, on_slow, limit=LINE_LIMIT)
            on_slow = None
            if line is None:
                return None
            if not line.strip():
                continue  # an empty line, as the course server, is no command
            if len(line) > LINE_LIMIT and self._ready:  # a connection's reader cuts it one past the limit
                raise Fault(
                    Reason.GARBLED, f"wrote a line longer than KGP's limit of {LINE_LIMIT} characters"
                )
            try:
                return parse(line)
            except KgpError as e:
                self.errors += 1
                if self.errors > MAX_ERRORS:
                    raise Fault(  # the grammar's words quote the agent's: its author's to read alone
                        Reason.GARBLED, f"wrote {self.errors} lines that are not KGP", f"the last: {e}"
                    ) from None
                ident = _LEADING_ID.match(line)
                ref = int(ident.group(1)) if ident else None
                self._send("error", str(e), ref=ref, deadline=time.monotonic() + 1.0)

    def _greet(self, deadline: float) -> None:
        """The greeting, once per connection: `kgp 1 0 1`, then the agent's `set`s and its `mode`."""
        self._send("kgp", *VERSION, deadline=deadline, ident=False)
        while True:
            command = self._read(deadline)
            if command is None and CONNECTED not in self.proc.stderr_tail():
                raise Fault(
                    Reason.TIMEOUT,
                    f"never connected to the KGP port (localhost:{PORT}, or bot.toml's port) in its sandbox",
                )
            if command is None:
                raise Fault(
                    Reason.TIMEOUT, "did not ask for a mode (`mode freeplay`) after the greeting `kgp 1 0 1`"
                )
            if command.name == "mode":
                if command.args[:1] != ("freeplay",):
                    self._send("error", "Unsupported activity", ref=command.id, deadline=deadline)
                    self._send("goodbye", deadline=deadline, ident=False)
                    mode = _shown(str(command.arg(0)))
                    raise Fault(
                        Reason.GARBLED,
                        "asked for a mode arena does not play (only `mode freeplay`)",
                        f"it asked for mode {mode}",
                    )
                refused = self.gate(self.token) if self.gate is not None else None
                if refused is not None:
                    self._send("error", refused, ref=command.id, deadline=deadline)
                    self._send("goodbye", deadline=deadline, ident=False)
                    raise Fault(Reason.GARBLED, f"was refused: {refused}")
                self._send("ok", "freeplay", ref=command.id, deadline=deadline)
                self._ready = True
                return
            self._aside(command, deadline)

    def greet(self, deadline: float) -> None:
        """The greeting now, unless done: the class server greets before it chooses the opponent."""
        if not self._ready:
            self._greet(deadline)

    def _aside(self, command: Command, deadline: float) -> None:
        """What may come at any time: `set`, `ping`, replies; `goodbye` ends the agent's part."""
        if command.name == "ping":  # answered, not echoed: what an agent sends is not written back
            self._send("pong", ref=command.id, deadline=deadline)
        elif command.name == "set" and len(command.args) >= 2:
            key, value = command.args[0], command.args[1]
            if key == "info:name":
                self.agent = str(value)[:100]
            elif key in ("info:authors", "info:author"):
                self.authors = str(value)[:200]
            elif key == "info:version":
                self.stated = str(value)[:100]
            elif key == "info:comment":
                self.comment = str(value)[:200]
            elif key == "auth:token" and not self._ready:
                self.token = str(value)[:200]
        elif command.name == "goodbye":
            raise Fault(Reason.CRASH, "said goodbye during the game")
        elif command.name == "mode":
            self._send("error", "Duplicate mode request", ref=command.id, deadline=deadline)
        elif command.name == "pong" and command.ref == self._missed:
            self._pongs = True  # late, but it answers: its `stop`s wait for a `pong` again
        # ok, error, pong, an unknown set option or command: nothing to do (the spec: never end for them)

    def new_game(self, rules: Rules, side: int, deadline: float) -> None:
        """Nothing on the wire: freeplay has no game start (the first `state` is the game's)."""
        self._rules = rules

    def move(
        self,
        pos: Position,
        side: int,
        ms: int,
        deadline: float,
        on_slow: Callable[[], None] | None = None,
        soon: float | None = None,
    ) -> Move:
        """Send `state`, take `move`s until the time is up (or `yield`), then `stop`: the last legal move.
        A state ends as on the course server: `ping`, and its `stop` once the agent answered (`_stop`). A
        new connection's greeting comes first, on the first move's startup allowance."""
        self._stop_unstopped(PONG_GRACE_S)  # on this move's clock: the agent's own answer it waits for
        sent = time.monotonic()
        if not self._ready:
            self._greet(deadline)
        assert self._rules is not None, "new_game comes first"
        legal = self._rules.legal_moves(pos)
        board = Board.seen_by(pos, side)
        state = self._send("state", board, deadline=deadline)
        asked = 0  # times the position was sent again after a `yield` without a move
        best: Move | None = None
        illegal: Move | None = None
        soon = soon or deadline
        soon = min(deadline, max(soon, time.monotonic() + soon - sent))  # after a greeting: the whole time
        until = soon
        while True:
            command = self._read(until, on_slow)
            on_slow = None
            done = command is None or time.monotonic() > until
            if command is not None and command.ref in (state, None):
                if command.name == "move":
                    pit = command.arg(0)
                    if not isinstance(pit, int) or isinstance(pit, bool):
                        self._send("error", "move takes a pit number", ref=command.id, deadline=deadline)
                    elif pit in legal:
                        best = pit
                    else:
                        illegal = pit
                elif command.name == "yield":
                    done = True
                elif command.ref is None:
                    self._aside(command, deadline)
            elif command is not None and command.name not in ("move", "yield"):
                self._aside(command, deadline)  # a move for an older state is ignored, as the spec asks
            if best is not None and until > soon:  # the startup allowance's first answer
                done = True
            if not done:
                continue
            if best is None and illegal is None and command is None and until < deadline:
                until = deadline  # a new connection's first answer may take the startup allowance
                continue
            yielded = command is not None and command.name == "yield"
            unanswered = yielded and best is None and illegal is None
            if unanswered and asked < ASK_AGAIN and time.monotonic() < until:
                # The course's Java library can drop the first moves of a search that starts before it has
                # noted the state (a race of its threads), then yields with none sent: the same position
                # again, a new `state` on the same clock, is searched afresh (protocol.md: "Where arena
                # chooses").
                self._send_stop(state)
                # A pause first: the threads' race, once lost, is often lost again at once (the same
                # scheduling), and a moment later seldom.
                time.sleep(max(0.0, min(ASK_PAUSE_S * 2**asked, until - time.monotonic() - ASK_PAUSE_S)))
                state = self._send("state", board, deadline=deadline)
                asked += 1
                continue
            if best is None and illegal is None and not yielded:
                # No move by its time: as go-kgp, `ping`, and `stop` once it answered `pong`; an agent that
                # does not is gone (there it resigns), else it is given a random legal move.
                wait = max(PONG_S, ms / 1000)
                answered = self._pong(self._send_ping(), time.monotonic() + wait)
                self._send_stop(state)
                if not answered:
                    raise Fault(
                        Reason.TIMEOUT,
                        f"no move within {ms} ms, and no `pong` to arena's `ping` within {wait:.0f} s (KGP: "
                        "the course server then resigns for it; an agent that answers `pong` is given a "
                        "random legal move instead)",
                    )
            elif best is not None:
                self._stop(state, max(until, time.monotonic()) + (0.0 if yielded else PONG_GRACE_S))
                return best
            else:  # an illegal move alone, or a yield without a move when it may not be asked again
                self._send_stop(state)
            if illegal is not None:
                return illegal
            said = "yielded without a legal move" if yielded else f"no move within {ms} ms"
            said += f" (its position sent {asked + 1} times)" if asked else ""
            raise NoMove(
                Reason.TIMEOUT,
                f"{said} (KGP: the last legal `move` before `stop` counts){_late(sent)}",
                how="yield without a move" if yielded else "no move by stop",
            )

    def _send_stop(self, state: int) -> None:
        """The `stop` of `state`, written within a second."""
        self._send("stop", ref=state, deadline=time.monotonic() + 1.0)

    def _send_ping(self) -> int:
        """A `ping`, written within a second: its id, which the `pong` refers to."""
        return self._send("ping", deadline=time.monotonic() + 1.0)

    def _pong(self, ping: int, until: float) -> bool:
        """Whether the agent answers the `ping` of id `ping` by `until`. What else comes meanwhile is dealt
        with as ever; a move or yield is late (its state is over) and ignored."""
        while (command := self._read(until)) is not None:
            if command.name == "pong" and command.ref in (ping, None):
                return True
            if command.name not in ("move", "yield"):
                self._aside(command, time.monotonic() + 1.0)
        return False

    def _stop(self, state: int, until: float) -> None:
        """The end of a state the agent answered (by `yield`, or its time), as go-kgp ends one at its
        timeout: `ping`, and the `stop` once the agent answered `pong` (go-kgp sends a yielded state's
        `stop` at once). The course's Python library kills a state's search process on `stop`, and one
        killed while it still holds the lock of the library's send queue (its lines written, on a busy
        machine not yet let go) leaves the library mute for good, not even a `pong`; its `pong` goes
        through that queue, after the search let go. The `pong` is waited for on the agent's own clock:
        up to the state's deadline (PONG_GRACE_S past it after a timeout, as every agent gets), then
        before its next `state`, when its stop is sent anyway. An agent that has left a `ping` unanswered
        by then gets its `stop`s at once, until it answers that `ping` after all."""
        if not self._pongs:
            self._send_stop(state)
            return
        self._unstopped = (state, self._send_ping())
        self._stop_unstopped(max(0.0, until - time.monotonic()), last=False)

    def _stop_unstopped(self, wait: float, last: bool = True) -> None:
        """The `stop` of a state left waiting for its `pong`, once it comes within `wait` seconds; if it has
        not come by then and this is the `last` wait, the `stop` anyway."""
        if self._unstopped is None:
            return
        state, ping = self._unstopped
        if not self._pong(ping, time.monotonic() + wait):
            if not last:
                return
            self._pongs, self._missed = False, ping
        self._unstopped = None
        self._send_stop(state)

    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None:
        """Nothing: the agent sees the board in its next `state`."""

    def end(self, result: str, mine: int, theirs: int, reason: str) -> None:
        """Nothing but a `stop` still owed: freeplay has no game end; the next game's `state`s follow."""
        with contextlib.suppress(Fault):
            self._stop_unstopped(PONG_S)

    def quit(self, grace: float) -> None:
        with contextlib.suppress(Fault):
            self._stop_unstopped(grace)
        self.proc.quit("goodbye\r", grace)


def _late(sent: float) -> str:
    return f", {(time.monotonic() - sent) * 1000:.0f} ms after `state`"


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")
