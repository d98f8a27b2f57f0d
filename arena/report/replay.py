"""A stored game replayed through the one rules engine, ply by ply, with what each ply did.

The page and the terminal both draw these plies; neither plays a move itself. Every board, and what a ply
did step by step (the seeds lifted and sown one by one, a capture, the end sweep, an extra turn, relay
sowing), comes from the engine's `Rules.trace`: the page's animation only moves seeds where it says.

A forfeit also gets the lines to reproduce it: the NEWGAME and MOVE lines the referee sent the faulty bot
in that game (`protocol.lines_sent`, which `arena check` uses too).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from arena.game.rules import SWAP, IllegalMove, Move, Position, Rules, Step, parse_rules
from arena.match.bots import Where, reproduce_command
from arena.match.clock import TimeControl
from arena.match.protocol import lines_sent
from arena.match.record import GameRecord


@dataclass(slots=True)  # not frozen: made three times faster, once per ply of every game on a page
class Ply:
    """One ply and the position after it. `captured` is how many seeds a capture banked (0: none);
    `capture_pits` the holes it emptied; `steps` the engine's steps (`Rules.trace`). Read it, never change
    it."""

    move: Move
    mover: int  # the side that moved
    board: tuple[int, ...]  # after the ply, in the engine's absolute layout
    to_move: int  # the side to move after it
    opening: bool  # part of the game's opening, not played by the bots
    extra: bool = False
    captured: int = 0
    capture_pits: tuple[int, ...] = ()
    swap: bool = False
    relay: bool = False
    ended: bool = False
    steps: tuple[Step, ...] = ()
    swept: bool = False


@dataclass(frozen=True, slots=True)
class ReplayFault:
    """Where and why a bot forfeited, and the referee's lines that bring it back."""

    bot: str
    reason: str
    detail: str
    stderr: str
    plies: int  # plies played when it happened: the position after them is where it was
    lines: tuple[str, ...]  # the referee's lines to the faulty bot in this game, the last one unanswered
    command: str  # the lines piped into the bot, as one command (bots.reproduce_command)
    bank_note: str  # '' or why the MOVE times in the lines are approximate


@dataclass(frozen=True, slots=True)
class Replay:
    """A whole game: its start, every ply, who owned which side when, and its fault if it had one."""

    rules: str
    start: Position
    plies: tuple[Ply, ...]
    opening: int  # the first `opening` plies are the opening
    south: str  # the bot that began as South
    north: str
    swap_at: int  # index of the SWAP ply, -1 if none: from then on `north` owns South and `south` North
    fault: ReplayFault | None
    error: str  # '' or why the stored moves stopped replaying (a damaged record)

    def owners(self, plies_done: int) -> tuple[str, str]:
        """(South's owner, North's owner) after `plies_done` plies."""
        swapped = 0 <= self.swap_at < plies_done
        return (self.north, self.south) if swapped else (self.south, self.north)

    def position(self, plies_done: int) -> Position | None:
        """The board after `plies_done` plies (0: the start), with its side to move, for drawing."""
        if plies_done == 0:
            return self.start
        ply = self.plies[plies_done - 1]
        return Position(ply.board, ply.to_move, ended="normal" if ply.ended else None)


def marks(rules: Rules, before: Position, move: Move, after: Position | None = None) -> Ply:
    """The ply `move` from `before`, with what it did marked, as the engine traced it (`after`, when given,
    is the position the caller already has: it must be the engine's)."""
    ply, traced = _traced(rules, before, move)
    if after is not None and after != traced:
        raise ValueError(f"{after} is not where {move} leads from {before}")
    return ply


def _traced(rules: Rules, before: Position, move: Move, opening: bool = False) -> tuple[Ply, Position]:
    trace = rules.trace(before, move)
    a = trace.after
    ply = Ply(
        move, before.to_move, a.board, a.to_move, opening, trace.extra, trace.banked, trace.captured,
        move == SWAP, trace.relay, a.ended is not None, trace.steps, trace.swept,
    )  # fmt: skip
    return ply, a


def replay(
    record: GameRecord,
    clock: TimeControl | None = None,
    rules: Rules | None = None,
    places: dict[str, Where] | None = None,
    named: dict[str, str] | None = None,
) -> Replay:
    """Replay a stored game. `clock` is the tournament's, for the reproduce lines;
    `places` where the bots are and their commands, by name, for the reproduce command, and `named` a
    bot's folder as its author has it, where that is not where it lies here (bots.run_command)."""
    rules = rules or parse_rules(record.rules)
    pos = rules.initial()
    start = pos
    plies: list[Ply] = []
    error = ""
    opening = len(record.opening)
    for k, move in enumerate(record.plies):
        try:
            ply, pos = _traced(rules, pos, move, k < opening)
        except IllegalMove as e:
            error = f"ply {k + 1} ({move}) does not replay: {e}"
            break
        plies.append(ply)
    swap_at = next((k for k, p in enumerate(plies) if p.swap), -1)
    fault = None
    if record.faulty and not error:
        bot = str(record.faulty)
        where = (places or {}).get(bot)
        fault = _fault(record, rules, len(plies), clock, where, (named or {}).get(bot))
    return Replay(
        rules.spec,
        start,
        tuple(plies),
        len(record.opening),
        record.south,
        record.north,
        swap_at,
        fault,
        error,
    )


def unpiped(shown: Replay) -> Replay:
    """`shown` without its fault's lines and command: a remote agent's fault (KGP), which was sent its game
    over a connection and has no pipe to bring it back."""
    if shown.fault is None:
        return shown
    return replace(shown, fault=replace(shown.fault, lines=(), command="", bank_note=""))


def _fault(
    record: GameRecord,
    rules: Rules,
    plies_done: int,
    clock: TimeControl | None,
    where: Where | None,
    named: str | None = None,
) -> ReplayFault:
    """The faulty bot's lines in this game (the referee's `lines_sent`), the last being where it forfeited
    (after `plies_done` plies) if it was its turn."""
    bot = str(record.faulty)
    lines = lines_sent(rules, record, bot, clock)
    note = "time bank: each MOVE's time is what was left then, give or take the startup allowance"
    note = note if clock and clock.bank_ms else ""
    where = where or Where(Path(f"bots/{bot}.py"))
    return ReplayFault(
        bot,
        record.reason,
        record.told(),
        record.stderr.get(bot, ""),
        plies_done,
        tuple(lines),
        reproduce_command(lines, where.path, where.argv, named=named),
        note,
    )
