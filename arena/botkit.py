"""Protocol v1 from the bot's side, for Python bots that use arena's rules engine.

A bot is then one function, `choose(turn) -> move`, and `run(choose)` does the rest: it reads the
referee's lines, remembers the game between them (its rules; whether this MOVE is still the game's first
turn, which the pie rule and no-first-extra treat specially; whether SWAP is offered), hands `choose` the
position as a search on the rules engine must see it, with the clock, and writes the answer.

A game may begin at an opening, a few plies from the start (a tournament's book). South's first MOVE then
does not show the start position, and the game's first turn is over: botkit counts it as the first turn only
when that MOVE shows exactly the rules' start position. Under the pie rule an opening is exactly South's
first turn, so North's first MOVE is still the one that may answer with SWAP.

This is the one place where that bookkeeping is done, so every bot built on it gets the first turn and
SWAP right. Bots that should run without arena installed (the templates bots/random.py and bots/greedy.py)
speak the protocol themselves, as protocol.md shows.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from arena.game.rules import SOUTH, IllegalMove, Move, Position, Rules, RulesError, parse_rules


@dataclass(frozen=True, slots=True)
class Turn:
    """One MOVE, as a bot's search wants it.

    `position` is the board from the bot's side, the bot as South to move, with the turn counter and
    `can_swap` right for this game: turn 0 while the game's first turn lasts (the bot is South, its first
    MOVE showed the start position, and every move since was its own), SWAP among the legal moves on the
    second player's first MOVE under the pie rule.
    `ms` is the time the referee gave for this move; `received` is time.perf_counter() when the MOVE line
    was read, so that the time spent before `choose` runs counts against the move too.
    """

    rules: Rules
    position: Position
    ms: int
    received: float

    @property
    def deadline(self) -> float:
        """time.perf_counter() when the referee's time for this move runs out (its small margin aside)."""
        return self.received + self.ms / 1000

    def budget(self, fraction: float, cap: float = math.inf) -> float:
        """Seconds left from now for a move that may take `fraction` of the MOVE time, and `cap` seconds at
        most in all; negative once that is spent. protocol.md advises a fraction well below 1."""
        return min(self.ms / 1000 * fraction, cap) - (time.perf_counter() - self.received)


@dataclass(slots=True)
class _Game:
    """What `run` remembers between the lines of one game; a NEWGAME or an END replaces it."""

    rules: Rules | None = None  # None: no usable NEWGAME, so the first MOVE picks plain Kalah of its size
    first_turn: bool = False  # we are South, the game began at the start, and its first turn is not over yet
    can_swap: bool = False  # we are North and have not answered a MOVE yet (SWAP needs the pie rule too)
    south_to_open: bool = False  # we are South and have not been asked for a move yet

    @classmethod
    def start(cls, words: Sequence[str], log: TextIO) -> _Game:
        """The game announced by `NEWGAME <pits> <seeds> <south|north> <rules-spec>`."""
        rules = None
        if len(words) < 5:
            print("NEWGAME without rules, playing plain Kalah", file=log)
        else:
            try:
                rules = parse_rules(words[4])
            except RulesError as e:
                print(f"unknown rules, playing plain Kalah: {e}", file=log)
        side = words[3] if len(words) >= 4 else None
        return cls(rules, can_swap=side == "north", south_to_open=side == "south")

    def turn(self, words: Sequence[str], received: float) -> Turn:
        """The Turn for `MOVE <ms> <our pits> <our store> <their pits> <their store>`."""
        view = [int(word) for word in words[2:]]
        if self.rules is None or len(view) != 2 * self.rules.pits + 2:
            self.rules = parse_rules(f"kalah,pits={len(view) // 2 - 1}")
        # South's first MOVE: the game's first turn if it shows the start, else the game began at an opening
        # (plies already played: its first turn is past; an opening inside it happens only without the pie
        # rule and no-first-extra, where nothing treats the first turn specially).
        if self.south_to_open:
            self.south_to_open = False
            self.first_turn = tuple(view) == self.rules.initial().view(SOUTH)
        position = self.rules.from_view(view, self.can_swap, first_turn=self.first_turn)
        return Turn(self.rules, position, int(words[1]), received)

    def answered(self, turn: Turn, move: Move) -> None:
        """SWAP is offered on one MOVE only; the first turn lasts as long as its moves earn extra turns."""
        self.can_swap = False
        if self.first_turn:
            try:
                self.first_turn = turn.rules.play(turn.position, move).to_move == SOUTH
            except IllegalMove:  # the referee forfeits the game; nothing more to keep track of
                self.first_turn = False


def run(
    choose: Callable[[Turn], Move],
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    log: TextIO | None = None,
) -> None:
    """Play protocol v1 until QUIT or the end of the input: `choose(turn)` answers every MOVE.

    NEWGAME starts a game afresh (rules it cannot parse are logged and plain Kalah is played instead), END
    forgets it, and a MOVE without a usable NEWGAME is played as plain Kalah of its board's size. Each
    answer is written and flushed at once. The streams default to sys.stdin, sys.stdout and sys.stderr
    (logs), as they are when `run` is called.
    """
    lines = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if log is None else log
    game = _Game()
    for line in lines:
        received = time.perf_counter()
        words = line.split()
        if not words:
            continue
        if words[0] == "NEWGAME":
            game = _Game.start(words, err)
        elif words[0] == "MOVE":
            turn = game.turn(words, received)
            move = choose(turn)
            print(move, file=out, flush=True)
            game.answered(turn, move)
        elif words[0] == "END":
            game = _Game()
        elif words[0] == "QUIT":
            return
