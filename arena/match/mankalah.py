"""The Manchester protocol: Kalah agents written for the University of Manchester's engine, run unmodified.

Their engine plays Kalah(7,7) with the pie rule (arena's `mankalah` preset) over lines `NAME(;ARG)*`: it
opens a game with START;South or START;North, tells both agents about every move with
CHANGE;<hole|SWAP>;<state>;<YOU|OPP|END> (the state absolute, North first) and closes it with END; an agent
answers MOVE;<hole> or SWAP whenever the last message said it is its turn. `Mankalah` translates that to and
from the referee's `Wire` interface, so the referee, the records and the reports do not know which protocol a
bot speaks. As in their engine, one process plays one game.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from arena.game.rules import MANKALAH, NORTH, SOUTH, SWAP, Move, Position, Rules
from arena.match.process import BotProcess, Fault, quoted
from arena.match.record import Reason

_MOVE = re.compile(r"MOVE;([+-]?[0-9]{1,9})")  # their engine reads the hole with Java's parseInt
_SIDES = ("South", "North")


def start_line(side: int) -> str:
    return f"START;{_SIDES[side]}"


def state_text(pos: Position) -> str:
    """The board as their engine writes it: North's holes 1..n and store, then South's holes and store."""
    return ",".join(map(str, pos.view(NORTH)))


def change_line(pos: Position, move: Move, side: int) -> str:
    """CHANGE after `move`, for the agent that now owns `side`: YOU if it moves next, OPP if not, END."""
    turn = "END" if pos.ended else "YOU" if pos.to_move == side else "OPP"
    return f"CHANGE;{move};{state_text(pos)};{turn}"


def _said(line: str) -> str:
    return f"its message: {quoted(line)}"


def parse_reply(line: str, can_swap: bool) -> Move:
    """An agent's answer, exactly `MOVE;<hole>` or `SWAP`, else Fault('garbled'): their engine's "invalid
    message", which a hole below 1 and a SWAP at any time but North's first reply are too. A hole beyond the
    board or an empty one is for the rules engine to find illegal."""
    if line == SWAP:
        if can_swap:
            return SWAP
        raise Fault(Reason.GARBLED, "answered SWAP, allowed only as North's first reply (invalid message)")
    if match := _MOVE.fullmatch(line):
        hole = int(match.group(1))
        if hole >= 1:
            return hole
        raise Fault(
            Reason.GARBLED,
            "answered a hole below 1: holes are numbered from 1 (invalid message)",
            _said(line),
        )
    if line.endswith("\r"):
        hint = "the line ends with \\r: end it with \\n alone"
    elif " " in line or "\t" in line:
        hint = "the protocol allows no spaces"
    else:
        hint = "expected MOVE;<hole> or SWAP, in capitals; logs go to stderr"
    raise Fault(Reason.GARBLED, f"answered what is not a move: {hint} (invalid message)", _said(line))


class Mankalah:
    """The Manchester protocol spoken over one agent process, for one game.

    The message that asks for a move (START;South, or a CHANGE ending in YOU) is held back until the
    referee asks for the move, so the agent's clock starts when it is sent, as a v1 MOVE's does. Lines are
    read only when a reply is due, as their engine does: one written early is the next reply.
    """

    name = "mankalah"
    one_game = True
    from_position = False  # START assumes the start position; their agents track the board themselves

    def __init__(self, proc: BotProcess) -> None:
        self.proc = proc
        self._prompt: str | None = None  # the message that asks for the next move, sent by `move`
        self._over = False  # END was sent: their agents exit on it, and nothing may follow

    @staticmethod
    def rules_problem(rules: Rules) -> str | None:
        """Their agents know one game only: Kalah(7,7) with the pie rule and no extra first turn."""
        if rules == MANKALAH:
            return None
        return (
            "speaks the Manchester protocol, whose agents know only their engine's game: play it under the "
            f"rules 'mankalah' (Kalah(7,7), pie, no extra turn on the first move), not {rules.spec!r}"
        )

    def new_game(self, rules: Rules, side: int, deadline: float) -> None:
        if side == SOUTH:
            self._prompt = start_line(SOUTH)  # South moves first: START;South is its first move request
        else:
            self.proc.send(start_line(NORTH), deadline)

    def move(
        self,
        pos: Position,
        side: int,
        ms: int,
        deadline: float,
        on_slow: Callable[[], None] | None = None,
        soon: float | None = None,
    ) -> Move:
        """Send the held-back request and read the answer (legality is checked by the referee). A line the
        agent wrote before it was asked is its answer, as in their engine, which reads an agent's lines only
        when it waits for one: it is still in the pipe, and read first."""
        if self._prompt is None:
            raise RuntimeError("mankalah: a move was asked for that the agent was not told is its turn")
        self.proc.send(self._prompt, deadline)
        self._prompt = None
        line = self.proc.read_line(deadline, on_slow, keep_cr=True)
        if line is None:
            raise Fault(Reason.TIMEOUT, f"no reply within {ms} ms")
        return parse_reply(line, pos.can_swap)

    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None:
        """Both agents hear of every move, except the swapper of its SWAP; a CHANGE that makes it this
        agent's turn waits for `move`."""
        if mine and move == SWAP:
            return
        line = change_line(pos, move, side)
        if line.endswith(";YOU"):
            self._prompt = line
        else:
            self.proc.send(line, time.monotonic() + 1.0)

    def end(self, result: str, mine: int, theirs: int, reason: str) -> None:
        """END alone, after a finish by the rules (announced by CHANGE ...;END) and after an abort alike;
        a South whose game was aborted before its first move gets its START first, as in their engine."""
        self._over = True
        if self._prompt == start_line(SOUTH):
            self.proc.send(self._prompt, time.monotonic() + 1.0)
        self.proc.send("END", time.monotonic() + 1.0)

    def quit(self, grace: float) -> None:
        """Their agents have no QUIT: they exit on END, the last message. Wait for that, then end them."""
        self.proc.resume()
        deadline = time.monotonic() + grace
        if not self._over:
            self._over = True
            try:
                self.proc.send("END", deadline)
            except Fault:
                pass
        while self.proc.returncode() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        self.proc.kill()
