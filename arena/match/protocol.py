"""Protocol v1 (see protocol.md): what the lines between referee and bot mean.

The pure functions (`parse_move`, the line formatters) hold the whole grammar so it can be tested and fuzzed
without processes; `V1` puts them on a `BotProcess`. A second wire protocol is another class with the same
methods (`Wire`: new_game, move, observe, end, quit), not a copy of the process handling:
arena/match/mankalah.py.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Protocol

from arena.game.rules import NORTH, SIDE_NAMES, SOUTH, SWAP, Move, Position, Rules
from arena.match.clock import Clock, Limits, TimeControl
from arena.match.process import BotProcess, Channel, Fault, quoted
from arena.match.record import GameRecord, Reason

_PIT = re.compile(r"[0-9]{1,9}")


def parse_move(line: str) -> Move:
    """A bot's answer to MOVE: a pit number or SWAP, else Fault('garbled') with a hint for the author.

    Legality (empty pit, out of range, SWAP not allowed) is the rules engine's business, not the parser's.
    """
    text = line.strip(" \t")
    if _PIT.fullmatch(text):
        return int(text)
    if text == SWAP:
        return SWAP
    if not text:
        raise Fault(Reason.GARBLED, "answered an empty line; answer MOVE with one pit number")
    if text.upper() == SWAP:
        hint = "swap in the wrong case; the swap move is spelled SWAP"
    elif any(not c.isprintable() or not c.isascii() for c in line):
        hint = "text that is not plain ASCII; answer with one pit number per line"
    else:
        hint = "what is not a move; print only the move on stdout (a pit number or SWAP), logs go to stderr"
    raise Fault(Reason.GARBLED, f"answered {hint}", f"its answer: {quoted(line)}")


def is_comment(line: str) -> bool:
    return line.startswith("#")


def _is_move(line: str) -> bool:
    try:
        parse_move(line)
    except Fault:
        return False
    return True


def newgame_line(rules: Rules, side: int) -> str:
    return f"NEWGAME {rules.pits} {rules.seeds} {SIDE_NAMES[side]} {rules.spec}"


def move_line(pos: Position, side: int, ms: int) -> str:
    return f"MOVE {ms} " + " ".join(map(str, pos.view(side)))


def end_line(result: str, mine: int, theirs: int, reason: str) -> str:
    return f"END {result} {mine} {theirs} {reason}"


class Wire(Protocol):
    """What the referee asks of a wire protocol spoken over one bot process."""

    name: str
    one_game: bool  # True: the process plays one game and ends (the referee starts a new one per game)
    from_position: bool  # True: a game may begin at any position (an opening), not only at the start

    @property
    def proc(self) -> Channel: ...  # a bot's process, or a remote agent's connection (KGP)

    def rules_problem(self, rules: Rules) -> str | None: ...
    def new_game(self, rules: Rules, side: int, deadline: float) -> None: ...
    def move(
        self,
        pos: Position,
        side: int,
        ms: int,
        deadline: float,
        on_slow: Callable[[], None] | None = None,
        soon: float | None = None,
    ) -> Move: ...
    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None: ...
    def end(self, result: str, mine: int, theirs: int, reason: str) -> None: ...
    def quit(self, grace: float) -> None: ...


class V1:
    """Protocol v1 spoken over one bot process."""

    name = "v1"
    one_game = False
    from_position = True  # every MOVE carries the whole board

    python = ""  # bots.python_kind: the timeout hint speaks of Python's buffers, or of none, not of C's

    def __init__(self, proc: BotProcess, anytime: bool = False) -> None:
        self.proc = proc
        self.anytime = anytime  # bot.toml `anytime`: several answers per MOVE, the last legal one counts
        self._rules: Rules | None = None  # this game's, for an anytime answer's legality
        self.answers: list[int] = []  # an anytime bot's answers per MOVE, for `arena check`
        self.late = 0  # an anytime bot's lines that came after their MOVE's deadline, dropped

    def _expect_silence(self) -> None:
        """A non-comment line written when nobody asked is a fault: it would be taken for the next move.
        An anytime bot's move lines waiting here came after their MOVE's deadline: they are dropped."""
        while self.proc.has_output() and (line := self.proc.read_line(0.0)) is not None:
            if self.anytime and not is_comment(line) and _is_move(line):
                self.late += 1
                continue
            if not is_comment(line):
                raise Fault(
                    Reason.GARBLED,
                    "wrote a line when no move was asked for; print exactly one line per MOVE "
                    "(logs go to stderr, or start the line with #)",
                    f"the line: {quoted(line)}",
                )

    @staticmethod
    def rules_problem(rules: Rules) -> str | None:
        """None: NEWGAME tells a v1 bot the rules, so it can play any."""
        return None

    def new_game(self, rules: Rules, side: int, deadline: float) -> None:
        self._expect_silence()
        self._rules = rules
        self.proc.send(newgame_line(rules, side), deadline)

    def move(
        self,
        pos: Position,
        side: int,
        ms: int,
        deadline: float,
        on_slow: Callable[[], None] | None = None,
        soon: float | None = None,
    ) -> Move:
        """Ask for a move; returns the parsed answer (legality is checked by the referee). `on_slow` is
        called once the bot has thought for a few milliseconds. `soon`: when the MOVE's own time is up,
        before `deadline` if that adds a startup allowance (an anytime bot's answer is taken then)."""
        self._expect_silence()
        sent = time.monotonic()
        self.proc.send(move_line(pos, side, ms), deadline)
        if self.anytime and self._rules is not None:
            return self._last_legal(
                self._rules.legal_moves(pos), ms, sent, deadline, soon or deadline, on_slow
            )
        while True:
            line = self.proc.read_line(deadline, on_slow)
            on_slow = None
            if line is None:
                raise Fault(Reason.TIMEOUT, *self._why_late(ms, sent))
            if not is_comment(line):
                return parse_move(line)
            if time.monotonic() > deadline:  # a stream of comments must not hold the clock
                raise Fault(Reason.TIMEOUT, f"no reply within {ms} ms (only # comment lines)")

    def _last_legal(
        self,
        legal: tuple[Move, ...],
        ms: int,
        sent: float,
        deadline: float,
        soon: float,
        on_slow: Callable[[], None] | None,
    ) -> Move:
        """An anytime bot's answer: the last legal move it wrote by `soon`; with none by then, the first
        that comes by `deadline` (a new process's startup allowance); with none at all, the last illegal one
        (for the referee to find illegal), else Fault('timeout'). A garbled line is a fault at once."""
        best: Move | None = None
        illegal: Move | None = None
        answers = 0
        until = soon

        def take(line: str) -> None:
            nonlocal best, illegal, answers
            if is_comment(line):
                return
            if self.proc.unread_input():
                self.late += 1  # written before it read this MOVE: a late answer to the last one
                return
            move = parse_move(line)
            answers += 1
            if move in legal:
                best = move
            else:
                illegal = move

        while True:
            line = self.proc.read_line(until, on_slow)
            on_slow = None
            if line is not None:
                take(line)
            if line is None or time.monotonic() > until:  # the window closed (a stream of lines too)
                # What the bot had written by the time the referee looked is taken, as a waiting line is from
                # any bot: a referee that a loaded machine let look late does not charge the bot for it.
                waiting = self.proc.waiting_output()
                while waiting > 0 and (line := self.proc.read_line(0.0)) is not None:
                    waiting -= len(line) + 1
                    take(line)
                if until < deadline and best is None:
                    until = deadline
                    continue
                chosen = best if best is not None else illegal
                if chosen is None:
                    raise Fault(Reason.TIMEOUT, *self._why_late(ms, sent))
                self.answers.append(answers)
                return chosen
            if best is not None and until > soon:  # the startup allowance's first legal answer
                self.answers.append(answers)
                return best

    def _why_late(self, ms: int, sent: float) -> tuple[str, str]:
        """A timeout's detail and what the bot said, with what its author can act on: watching a little past
        the deadline, how late the answer came, or the part of a line it wrote without an end, or that
        nothing came at all."""
        detail = f"no reply within {ms} ms"
        grace = min(1.0, max(0.1, ms / 1000))
        try:
            line = self.proc.read_line(time.monotonic() + grace)
        except Fault:
            line = None
        if line is not None and not is_comment(line):
            late = (time.monotonic() - sent) * 1000
            return f"{detail}: it answered only after {late:.0f} ms", f"its answer: {quoted(line.strip())}"
        partial = self.proc.unread_output().strip()
        if partial:
            return (
                f"{detail}: it wrote part of a line but no end of line (end each answer with a newline)",
                f"what it wrote: {quoted(partial)}",
            )
        if self.python == "launcher":  # arena's launcher flushes stdout at each end of line: none was printed
            return (
                f"{detail}, nor in {grace * 1000:.0f} ms more: it printed no answer line (was it still "
                "thinking, or waiting for input it had already read?)"
            ), ""
        if self.python:
            return (
                f"{detail}, nor in {grace * 1000:.0f} ms more (if it printed an answer, Python kept it in "
                "its buffer: print(move, flush=True))"
            ), ""
        return (
            f"{detail}, nor in {grace * 1000:.0f} ms more (if it printed an answer, it must end the line and "
            "flush stdout: C, C++ and Java buffer their output)"
        ), ""

    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None:
        """Nothing: a v1 bot sees the board in its next MOVE, after the opponent's moves and its own."""

    def end(self, result: str, mine: int, theirs: int, reason: str) -> None:
        self.proc.send(end_line(result, mine, theirs, reason), time.monotonic() + 1.0)

    def quit(self, grace: float) -> None:
        self.proc.quit("QUIT", grace)


def lines_sent(
    rules: Rules, record: GameRecord, name: str, clock: TimeControl | None = None
) -> tuple[str, ...]:
    """The protocol v1 lines the referee sent bot `name` in the game of `record`, rebuilt from its plies
    (a student feeds them to the bot to see its fault again): NEWGAME on its starting side, a MOVE for every
    position after the opening where it was to move (after a forfeit on its turn, the last is the one it did
    not answer), and END unless it was at fault. `clock` is the game's (the default's if not known); under a
    time bank each MOVE offers what was left of it then, give or take the startup allowance."""
    side = SOUTH if name == record.south else NORTH
    lines = [newgame_line(rules, side)]
    ticking = Clock(Limits(clock or TimeControl()))
    times = iter(record.move_ms)
    pos = rules.initial()
    for k in range(len(record.plies) + 1):
        move = record.plies[k] if k < len(record.plies) else None
        if k >= len(record.opening) and not pos.ended:
            took = next(times, 0.0) if move is not None else 0.0
            if pos.to_move == side:
                lines.append(move_line(pos, side, max(1, ticking.offer())))
                ticking.charge(took)
        if move is None:
            break
        if move == SWAP:
            side = 1 - side
        pos = rules.play(pos, move)
    if record.faulty != name:
        other = record.north if name == record.south else record.south
        result = "draw" if record.winner is None else ("win" if record.winner == name else "loss")
        lines.append(end_line(result, record.store_of(name), record.store_of(other), record.reason))
    return tuple(lines)
