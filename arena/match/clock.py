"""A game's time control: the clock's record (`TimeControl`), the referee's limits around it (`Limits`), and
one bot's clock in a game (`Clock`).

The clock is the one place that words the time a MOVE offers, sets the deadline of its answer and charges
the time bank: the referee asks it while a game is played, and `protocol.lines_sent` asks it again to
rebuild the lines a bot was sent.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TimeControl:
    """The clock a game is played under, in milliseconds: declared once, here. A tournament's `Settings`
    keep it (and store it), the CLI's time flags ask for it and the referee's `Limits` play under it, so a
    new clock field is one edit (and its flag). `startup_ms` is added to the first MOVE after a process
    starts; `bank_ms` is a chess clock: each bot's total for the game, each move then limited to
    min(move_ms, what is left)."""

    move_ms: int = 1000
    startup_ms: int = 10_000
    bank_ms: int | None = None  # None: no time bank, every move has move_ms


@dataclass(frozen=True, slots=True)
class Limits:
    """What the referee plays a game under: the game's `clock`, and the referee's own allowances around it
    (not the tournament's to choose): `margin_ms` is its transport slack on top of the time announced in
    MOVE, `quit_grace_ms` how long a bot has to exit after QUIT."""

    clock: TimeControl = TimeControl()
    margin_ms: int = 50
    quit_grace_ms: int = 500
    ponder: bool = False  # False: a bot's processes are stopped (SIGSTOP) while its opponent thinks


class Clock:
    """One bot's clock for one game under `limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        bank = limits.clock.bank_ms
        self.left = None if bank is None else float(bank)  # ms left in the bank

    @property
    def banked(self) -> bool:
        """Whether the bank, not the move time, sets the next offer."""
        return self.left is not None and self.left < self.limits.clock.move_ms

    def offer(self) -> int:
        """The milliseconds the next MOVE offers: the move time, or what is left of the bank if less (below
        1: the bank ran out, and no MOVE is sent)."""
        return int(self.left) if self.left is not None and self.banked else self.limits.clock.move_ms

    def deadline(self, start: float, startup_ms: int = 0) -> float:
        """When (time.monotonic) the answer to a MOVE sent at `start` must be in: the offer, the referee's
        margin, and the startup allowance of a process's first move."""
        return start + (self.offer() + self.limits.margin_ms + startup_ms) / 1000

    def charge(self, took_ms: float, startup_ms: int = 0) -> None:
        """Take a move's time out of the bank: at most the offer, and never the startup allowance (nor the
        margin, which the offer already leaves out)."""
        if self.left is not None:
            self.left -= min(self.offer(), max(0.0, took_ms - startup_ms))
