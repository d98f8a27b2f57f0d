"""A stored game replayed through the one rules engine, ply by ply, with what each ply did.

The page and the terminal both draw these plies; neither plays a move itself. Every board comes from
`Rules.play`. What a ply did (an extra turn, a capture, a swap, relay sowing, the end) is read off the
engine's boards before and after it; the only thing worked out here is where a plain sowing of the pit's
seeds would have put them (laps, then the rest counter-clockwise, skipping the opponent's store), which is
geometry, not rules: whatever the engine did beyond it is what gets marked.

A forfeit also gets the lines to reproduce it: the NEWGAME and MOVE lines the referee sent the faulty bot
in that game (`referee.lines_sent`, which `arena check` uses too).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from arena.game.rules import NORTH, SOUTH, SWAP, IllegalMove, Move, Position, Relay, Rules, parse_rules
from arena.match.record import GameRecord
from arena.match.referee import lines_sent


@dataclass(frozen=True, slots=True)
class Ply:
    """One ply and the position after it. `captured` is how many seeds a capture banked (0: none; -1: a
    capture whose size the boards do not tell, in relay sowing); `capture_pits` the holes it emptied."""

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


@dataclass(frozen=True, slots=True)
class Fault:
    """Where and why a bot forfeited, and the referee's lines that bring it back."""

    bot: str
    reason: str
    detail: str
    stderr: str
    plies: int  # plies played when it happened: the position after them is where it was
    lines: tuple[str, ...]  # the referee's lines to the faulty bot in this game, the last one unanswered
    command: str  # the lines as one printf command a student can pipe into the bot
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
    fault: Fault | None
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


def _plain_sowing(board: tuple[int, ...], hole: int, skip: int) -> tuple[list[int], int]:
    """The board after sowing `hole` and nothing else (whole laps first, as the engine does, then the rest
    one by one, never into `skip`), and the hole the last seed counts as landing in (the sown pit itself
    after whole laps only, as in the engine)."""
    size = len(board)
    after = list(board)
    seeds, after[hole] = after[hole], 0
    laps, rest = divmod(seeds, size - 1)
    if laps:
        after = [v + laps if j != skip else v for j, v in enumerate(after)]
    steps, j = (rest if rest else size - 1), hole
    while steps:
        j = (j + 1) % size
        if j != skip:
            steps -= 1
            if rest:
                after[j] += 1
    return after, j


def marks(rules: Rules, before: Position, move: Move, after: Position) -> Ply:
    """The ply `move` from `before` to `after` (both the engine's), with what it did marked."""
    side = before.to_move
    base = Ply(move, side, after.board, after.to_move, False, ended=after.ended is not None)
    if move == SWAP:
        return Ply(move, side, after.board, after.to_move, False, swap=True, ended=base.ended)
    assert isinstance(move, int)
    n = before.pits
    own, store = side * (n + 1), side * (n + 1) + n
    opp = (1 - side) * (n + 1)
    plain, last = _plain_sowing(before.board, own + move - 1, opp + n)
    gain = after.board[store] - before.board[store]
    into_store = plain[store] - before.board[store]
    banked = after.ended is not None and not any(after.row(SOUTH)) and not any(after.row(NORTH))
    extra = after.ended is None and after.to_move == side
    if isinstance(rules, Relay):
        relay = not banked and list(after.row(side)) != plain[own : own + n]
        pits = tuple(j for j in range(opp, opp + n) if after.board[j] == 0 and plain[j] > 0)
        if banked:
            pits = ()
        captured = (gain - into_store if not relay else -1) if pits else 0
        return Ply(move, side, after.board, after.to_move, False, extra, captured, pits, relay=relay,
                   ended=base.ended)  # fmt: skip
    if banked:  # the stores took the rows: a capture shows as more than the plain sowing left in the row
        row_left = sum(plain[own : own + n])
        opposite_seeds = gain - into_store - row_left
        captured = opposite_seeds + 1 if opposite_seeds > 0 else 0
    else:
        captured = gain - into_store
    pits = (last, 2 * n - last) if captured > 0 and own <= last < store else ()
    return Ply(move, side, after.board, after.to_move, False, extra, max(captured, 0), pits, ended=base.ended)


def replay(
    record: GameRecord, move_ms: int | None = None, bank_ms: int | None = None, rules: Rules | None = None
) -> Replay:
    """Replay a stored game. `move_ms`/`bank_ms` are the tournament's clock, for the reproduce lines."""
    rules = rules or parse_rules(record.rules)
    pos = rules.initial()
    start = pos
    plies: list[Ply] = []
    error = ""
    positions = [pos]
    for k, move in enumerate(record.plies):
        try:
            nxt = rules.play(pos, move)
        except IllegalMove as e:
            error = f"ply {k + 1} ({move}) does not replay: {e}"
            break
        ply = marks(rules, pos, move, nxt)
        if k < len(record.opening):
            ply = Ply(ply.move, ply.mover, ply.board, ply.to_move, True, ply.extra, ply.captured,
                      ply.capture_pits, ply.swap, ply.relay, ply.ended)  # fmt: skip
        plies.append(ply)
        positions.append(nxt)
        pos = nxt
    swap_at = next((k for k, p in enumerate(plies) if p.swap), -1)
    fault = None
    if record.faulty and not error:
        fault = _fault(record, rules, positions, move_ms, bank_ms)
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


def _fault(
    record: GameRecord, rules: Rules, positions: list[Position], move_ms: int | None, bank_ms: int | None
) -> Fault:
    """The faulty bot's lines in this game (the referee's `lines_sent`), the last being where it forfeited
    if it was its turn."""
    bot = str(record.faulty)
    lines = lines_sent(rules, record, bot, move_ms, bank_ms)
    text = "".join(line + "\\n" for line in lines)
    note = "time bank: each MOVE's time is what was left then, give or take the startup allowance"
    note = note if bank_ms else ""
    return Fault(
        bot,
        record.reason,
        record.detail,
        record.stderr.get(bot, ""),
        len(positions) - 1,
        tuple(lines),
        f"printf {shlex.quote(text)}",
        note,
    )
