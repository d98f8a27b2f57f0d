"""A person in a bot's seat: `arena play mybot human` lets a student play their bot at the terminal.

A bot cannot stand in for a person (it has no terminal: reading /dev/tty in the sandbox fails), so the person
takes a seat in the referee's game loop instead (`Seat`, arena/match/referee.py), beside a bot's `Player`.
The person has no clock; the bot keeps its own, and is paused while the person thinks (unless pondering).
Before each of their moves the person sees what happened since their last one (their own extra turn, the
bot's moves, captures, a swap), the board from their side (their row at the bottom, numbered from their
left, as protocol v1 numbers it) and a prompt. A wrong entry is explained in one line and asked again,
never a forfeit. `q` or the end of the input raises `Quit`: the game in progress stops and is not counted,
like Ctrl-C.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from arena.game.rules import NORTH, SIDE_NAMES, SOUTH, SWAP, IllegalMove, Kalah, Move, Position, Rules
from arena.match.clock import Limits
from arena.match.printable import printable
from arena.match.process import Fault
from arena.match.record import Reason
from arena.match.referee import Seat
from arena.report.replay import Ply, marks
from arena.report.terminal import board, notes

QUIT_WORDS = ("q", "quit", "exit")
HELP_WORDS = ("?", "h", "help")


class Quit(Exception):
    """The person left the game: `q`, or the end of the input. The message says which."""


class Human:
    """A person reading the board on `output` and typing moves on `input` (default: the terminal's)."""

    bot = None  # no program behind this seat: no wire protocol to check

    def __init__(
        self, against: str, name: str = "human", input: TextIO | None = None, output: TextIO | None = None
    ) -> None:
        self.name = name
        self.against = against  # the bot's name, for what the person reads
        self.input = input or sys.stdin
        self.output = output or sys.stdout
        self.rules: Rules | None = None
        self.side = SOUTH  # the side the person owns now (a SWAP changes it)
        self.pos: Position | None = None  # the last position the person was shown or told of
        self.ply: Ply | None = None  # the ply that led to it, for the board's marks

    # --- what the referee asks of a seat ------------------------------------------------------------------

    def new_game(self, rules: Rules, side: int, limits: Limits) -> None:
        self.rules, self.side, self.pos, self.ply = rules, side, rules.initial(), None
        first = "you move" if side == SOUTH else f"{self.against} moves"
        self._say(
            f"\nnew game, {rules.spec}: you play {SIDE_NAMES[side]} against {self.against}; {first} first.\n"
            "Your row is the bottom one, your store the one on the right; ? for help."
        )
        if rules.pie:
            self._say(
                f"Pie rule: you may answer {self.against}'s first turn with SWAP (taking over its side)."
                if side == NORTH
                else f"Pie rule: {self.against} may answer your first turn with SWAP (taking over your side)."
            )

    def move(
        self, pos: Position, side: int, limits: Limits, opponent: Seat | None = None
    ) -> tuple[Move, float]:
        """Ask until the person types a legal move; raises Quit if they leave."""
        if opponent is not None and not limits.ponder:
            opponent.pause()  # a person may think for minutes: the bot must not think on their time
        start = time.monotonic()
        self.side, self.pos = side, pos
        self._say(self._board() + "\n")
        while True:
            move, problem = self._parse(self._ask(pos), pos)
            if move is not None:
                return move, (time.monotonic() - start) * 1000
            self._say(problem)

    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None:
        """Say what the move did, at once (the bot's extra turns one line each)."""
        assert self.rules is not None and self.pos is not None
        try:  # the position known before is the one the move was played from (not so after an opening)
            ply = marks(self.rules, self.pos, move, pos)
        except (IllegalMove, ValueError):
            ply = None
        self.pos, self.ply, self.side = pos, ply, side
        who = "you" if mine else self.against
        if move == SWAP:
            self._say(
                f"you swapped: south and its store are yours now; {self.against} plays north and moves next"
                if mine
                else f"{self.against} swapped: it takes over south and its store; you play north now, "
                "drawn at the bottom, and move next"
            )
            return
        said = notes(ply) if ply else []
        self._say(f"{who} played {move}" + (": " + ", ".join(said) if said else ""))

    def end_game(self, result: str, mine: int, theirs: int, reason: Reason) -> None:
        """The final board and the result."""
        outcome = {
            "win": f"you win {mine}-{theirs}",
            "loss": f"{self.against} wins {theirs}-{mine}",
            "draw": f"draw {mine}-{theirs}",
        }[result]
        if reason == Reason.EARLY:
            outcome += " (early finish: a store holds more than half the seeds)"
        elif reason.forfeit:
            outcome += f" ({self.against} forfeits: {reason})"
        # a bot seen to crash as its game began ended it before the person's seat was told of the game:
        # no board to show then, only the outcome
        self._say(outcome if self.pos is None else self._board() + "\n" + outcome)

    def check_limits(self) -> None:
        """A person has no memory limit to break."""

    def diagnose(self, fault: Fault) -> Fault:
        return fault

    def stderr_tail(self) -> str:
        return ""

    def settle(self) -> None:
        """A person has nothing to finish writing."""

    def pause(self) -> None:
        """Nothing to pause: the person has no clock."""

    def kill(self) -> None:
        """Nothing to end."""

    def finish(self, limits: Limits) -> None:
        """Nothing to end."""

    # --- the person's side -----------------------------------------------------------------------------

    def _say(self, text: str) -> None:
        self.output.write(printable(text, lines=True) + "\n")  # it may quote the bot (its forfeit's detail)
        self.output.flush()

    def _board(self) -> str:
        assert self.pos is not None
        south, north = ("you", self.against) if self.side == SOUTH else (self.against, "you")
        return board(self.pos, south, north, self.ply, bottom=self.side)

    def _ask(self, pos: Position) -> str:
        """One line from the person, stripped; Quit at the end of the input or on q."""
        swap = ", or SWAP" if pos.can_swap else ""
        try:  # the prompt too: a Ctrl-C that lands before the read must still end its line
            self.output.write(f"your move (1-{pos.pits}{swap}, ? for help): ")
            self.output.flush()
            line = self.input.readline()
        except KeyboardInterrupt:  # Ctrl-C: end the prompt's line before the score so far is printed
            self.output.write("\n")
            raise
        if not self.input.isatty():  # a piped script of moves: show them, so the transcript reads
            self.output.write(line if line.endswith("\n") else line + "\n")
        if not line:
            raise Quit("the input ended")
        text = line.strip()
        if text.lower() in QUIT_WORDS:
            raise Quit("you quit")
        return text

    def _parse(self, text: str, pos: Position) -> tuple[Move | None, str]:
        """The move the person typed, or None and one line saying what is wrong with it."""
        assert self.rules is not None
        n = pos.pits
        legal = ", ".join(str(m) for m in self.rules.legal_moves(pos))
        if text.lower() in HELP_WORDS:
            return None, self._help(pos)
        if not text:
            return None, f"an empty line is not a move: type a pit number 1-{n} (you can play {legal})"
        move: Move
        if text.upper() == SWAP:
            move = SWAP
        elif text.isdecimal() and len(text) <= 9:
            move = int(text)
        else:
            shown = repr(text if len(text) <= 20 else text[:20] + "...")
            return (
                None,
                f"{shown} is not a move: type a pit number 1-{n} (you can play {legal}), or q to quit",
            )
        try:
            self.rules.play(pos, move)
        except IllegalMove as e:
            return None, f"{e} (you can play {legal})"
        return move, ""

    def _help(self, pos: Position) -> str:
        n = pos.pits
        lines = [
            f"Your pits are the bottom row, numbered 1-{n} from your left; your store is on the right.",
            "Type a pit number to sow its seeds, one into each next hole counter-clockwise: left to right",
            "along your row, into your store, then right to left along the top row (never into the store",
            f"on the left, {self.against}'s).",
        ]
        if isinstance(self.rules, Kalah):
            lines.append(
                "Last seed in your store: you move again. Last seed in an empty pit of yours, facing seeds:"
                " you capture both."
            )
        if pos.can_swap:
            lines.append(f"SWAP: take over {self.against}'s side and its first turn instead of moving.")
        lines.append(
            "The rules in full: protocol.md, 'The rules in brief'. q quits (this game is not counted)."
        )
        return "\n".join(lines)
