"""The referee: one game between two bot processes under the one rules engine.

It owns the clock and the truth. Every misbehaviour of a bot (timeout, crash, garbled or illegal answer)
ends the game at once as a forfeit loss of that bot, with a detail its author can act on; the game record
says which bot was at fault. Players keep their process between games (protocol NEWGAME) and lose it after
a fault, so a confused or hung process never plays on. Which wire protocol a bot speaks (v1, or the
Manchester agents' in arena/match/mankalah.py) is the Player's business; the game loop only tells every
wire of every move (`observe`), which v1 ignores. The game loop asks a `Seat` for moves, so a person at the
terminal (arena/student/human.py) can take a bot's place.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar, cast

from arena.game.rules import NORTH, SOUTH, SWAP, Move, Position, Rules, RulesError
from arena.kgp.wire import CONNECTED, Kgp, NoMove, relay_argv
from arena.match.bots import Bot, python_kind
from arena.match.clock import Clock, Limits
from arena.match.mankalah import Mankalah
from arena.match.process import BotProcess, Fault
from arena.match.protocol import V1, Wire
from arena.match.record import GameRecord, Reason
from arena.sandbox import Warden

_PITS = " (pits are numbered 1..n from the bot's own left: the MOVE line lists its own row first)"
_KGP_PITS = " (pits are numbered 1..n from the agent's own left: `state` shows its own row, South's, first)"
END_SETTLE = (
    0.5  # seconds a reused bot that logs may take to read END and write about it before the next game
)
WIRES: dict[str, type[V1] | type[Mankalah] | type[Kgp]] = {"v1": V1, "mankalah": Mankalah, "kgp": Kgp}


def starts_anywhere(bot: Bot) -> bool:
    """Whether the bot's wire protocol can begin a game at an opening position (v1 can, Manchester's not)."""
    return WIRES[bot.protocol].from_position


def check_rules(bots: Iterable[Bot], rules: Rules) -> None:
    """RulesError, before any game, if a bot's wire protocol cannot play `rules` (a Manchester agent knows
    only its engine's game): better than a forfeit in every game it plays."""
    for bot in bots:
        if problem := WIRES[bot.protocol].rules_problem(rules):
            raise RulesError(f"bot {bot.name!r} {problem}")


REMOTE_QUIT_S = 1.0  # for a remote agent's bridge to forward the game's last lines after a forfeit
REMOTE_WAIT_S = 120.0  # how long a game waits, before its clock starts, for a remote agent busy in another


def _bridged(bot: Bot) -> BotProcess:
    """The bridge to a remote agent (`Bot.remote`), once it has the agent: a game of the agent's waits here,
    before its clock starts, while the agent plays another; the bridge ends, saying why, if it never comes."""
    proc = BotProcess.start(bot.argv, cwd=bot.cwd)
    until = time.monotonic() + REMOTE_WAIT_S
    try:
        while CONNECTED not in proc.stderr_tail() and proc.returncode() is None and time.monotonic() < until:
            time.sleep(0.02)
    except BaseException:  # a stop while waiting: the bridge ends with its game worker
        proc.kill()
        raise
    return proc


class Seat(Protocol):
    """One side's player as `play_game` sees it: a bot's `Player`, or a person at the terminal. `bot` is the
    program behind the seat (None for a person), for the checks that need its wire protocol."""

    @property
    def name(self) -> str: ...
    @property
    def bot(self) -> Bot | None: ...
    def new_game(self, rules: Rules, side: int, limits: Limits) -> None: ...
    def move(
        self, pos: Position, side: int, limits: Limits, opponent: Seat | None = None
    ) -> tuple[Move, float]: ...
    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None: ...
    def end_game(self, result: str, mine: int, theirs: int, reason: Reason) -> None: ...
    def check_limits(self) -> None: ...
    def diagnose(self, fault: Fault) -> Fault: ...
    def stderr_tail(self) -> str: ...
    def pause(self) -> None: ...
    def settle(self) -> None: ...
    def kill(self) -> None: ...
    def finish(self, limits: Limits) -> None: ...


S = TypeVar("S", bound=Seat)  # play_game's seats: two Players, or a Player and a person (then Seat)


class Player:
    """A bot and, while it runs, its process. The process starts on demand and is restarted after a fault;
    a bot whose protocol plays one game per process (`Wire.one_game`) gets a new one for every game."""

    def __init__(self, bot: Bot, name: str | None = None, warden: Warden | None = None) -> None:
        self.bot = bot
        self.name = name or bot.name
        self.warden = warden
        self._wire: Wire | None = None
        self._fresh = False  # True until the first MOVE after a start has been answered
        self._clock = Clock(Limits())  # this game's, set by new_game
        self._mark = 0  # where this game's stderr starts in the process's stream
        self._stderr = ""  # tail kept from a process that has been ended

    @property
    def running(self) -> bool:
        return self._wire is not None

    def start(self) -> Wire:
        """Start the bot's process, confined by the warden, unless it runs already."""
        if self._wire is None:
            self._wire = WIRES[self.bot.protocol](self.spawn())
            if isinstance(self._wire, V1):
                self._wire.python = python_kind(self.bot.argv)  # its timeout hint speaks of Python
                self._wire.anytime = self.bot.anytime
            self._fresh = not self.bot.remote  # a remote agent ran before its game: no startup allowance
            self._mark = 0
        return self._wire

    def spawn(self) -> BotProcess:
        """A new process of the bot, confined by the warden (a test puts a scripted one in its place)."""
        bot = self.bot
        if bot.remote:
            return _bridged(bot)
        kgp = bot.protocol == "kgp"  # a KGP agent connects to arena's relay by TCP on its private loopback
        jail = self.warden.jail(bot.path, bot.memory_mb, loopback=kgp) if self.warden else None
        argv = relay_argv(bot) if kgp else bot.argv
        return BotProcess.start(argv, cwd=bot.cwd, jail=jail)

    def wire(self) -> Wire:
        """The running process's wire protocol; starting it is `start`'s job, not a side effect of this."""
        if self._wire is None:
            raise RuntimeError(f"{self.name}: the bot's process is not running")
        return self._wire

    def stderr_tail(self) -> str:
        """What the bot wrote to stderr during the current (or last) game, capped."""
        return self._wire.proc.stderr_tail(self._mark) if self._wire else self._stderr

    def kill(self) -> None:
        if self._wire:
            self._stderr = self.stderr_tail()
            if self.bot.remote:  # the bridge forwards what the game wrote last (its `stop`) before it ends
                self._wire.quit(REMOTE_QUIT_S)
            self._wire.proc.kill()
            self._wire = None

    def close(self, grace_ms: int = 500) -> None:
        """End the process politely (QUIT), then for certain."""
        if self._wire:
            self._wire.quit(grace_ms / 1000)
            self._stderr = self.stderr_tail()
            self._wire = None

    def new_game(self, rules: Rules, side: int, limits: Limits) -> None:
        self._stderr = ""
        self._clock = Clock(limits)
        wire = self.start()
        if not self._fresh:  # a new process's start-up logs belong to its first game
            self._mark = wire.proc.stderr_mark(settle=END_SETTLE)  # what it writes on END is the last game's
        wire.new_game(rules, side, time.monotonic() + 5.0)

    def settle(self) -> None:
        """Give a bot that logs a moment to read what it was sent (END) and write about it."""
        if self._wire:
            self._wire.proc.stderr_mark(settle=END_SETTLE)

    def pause(self) -> None:
        """Stop the bot's processes while the opponent thinks, a process still starting up too: its startup
        allowance is for its own first move."""
        if self._wire:
            self._wire.proc.pause()

    def move(
        self, pos: Position, side: int, limits: Limits, opponent: Seat | None = None
    ) -> tuple[Move, float]:
        """Ask for a move; returns it with the milliseconds it took. Raises Fault.

        Fair CPU: unless `limits.ponder`, the opponent is paused once this bot has thought for a few
        milliseconds (pausing on every move would cost more than a quick bot's whole move), and a bot
        is resumed when its own turn comes."""
        wire = self.wire()
        startup = limits.clock.startup_ms if self._fresh else 0
        clock = self._clock
        ms, banked = clock.offer(), clock.banked
        if ms < 1:
            raise Fault(Reason.TIMEOUT, f"its time bank of {limits.clock.bank_ms} ms for the game ran out")
        wire.proc.resume()
        on_slow = None if limits.ponder or opponent is None else opponent.pause
        start = time.monotonic()
        try:
            move = wire.move(pos, side, ms, clock.deadline(start, startup), on_slow, clock.deadline(start))
        except NoMove as none:  # its time was taken: charged, whether a random move stands in or it forfeits
            clock.charge((time.monotonic() - start) * 1000, startup)
            self._fresh = False
            none.took = (time.monotonic() - start) * 1000
            raise
        except Fault as fault:
            if fault.reason == Reason.TIMEOUT and banked:
                fault.detail += f": its time bank of {limits.clock.bank_ms} ms for the game ran out"
            if fault.reason == Reason.TIMEOUT and self._fresh:
                fault.detail += (
                    f" (its first move, with {limits.clock.startup_ms} ms startup allowance on top)"
                )
            raise
        took = (time.monotonic() - start) * 1000
        clock.charge(took, startup)
        self._fresh = False
        return move, took

    def diagnose(self, fault: Fault) -> Fault:
        """The fault as charged: one that was the bot's memory running out is a crash naming the limit,
        whatever it looked like (a JVM's memory report read as its move: garbled; a MemoryError in a search
        thread, then a hang: timeout). The kernel and the bot's last words are asked before the line or the
        clock is blamed (`BotProcess.memory_verdict`)."""
        if self._wire is None or fault.reason not in (Reason.TIMEOUT, Reason.CRASH, Reason.GARBLED):
            return fault
        if fault.detail.startswith("out of memory"):
            return fault
        settle = 0.5 if fault.reason == Reason.GARBLED else 0.0
        verdict = self._wire.proc.memory_verdict(fault.detail, settle, self._mark)
        if not verdict:
            return fault
        # The verdict quotes the bot's last words ("; it said '...'"): kept with what else the bot said.
        verdict, quoting, words = verdict.partition("; it said ")
        said = "; ".join(s for s in (f"it said {words}" if quoting else "", fault.said) if s)
        return Fault(Reason.CRASH, f"{verdict} (seen as {fault.reason}: {fault.detail})", said)

    def check_limits(self) -> None:
        """Fault('crash') if the running process has gone over its memory or process limit."""
        if self._wire:
            self._wire.proc.check_limits()

    def observe(self, pos: Position, move: Move, mine: bool, side: int) -> None:
        """Tell the bot's wire of a move (`mine`: it made it; `side`: the side it owns now)."""
        if self._wire:
            self._wire.observe(pos, move, mine, side)

    def end_game(self, result: str, mine: int, theirs: int, reason: Reason) -> None:
        """Tell the bot how the game ended; one that has left by then is ended (its result stands, and the
        next game starts it again)."""
        if self._wire is None:
            return
        self._wire.proc.resume()  # paused while its opponent thought: it reads END now, not in the next game
        try:
            self._wire.end(result, mine, theirs, reason)
        except Fault:
            self.kill()

    def finish(self, limits: Limits) -> None:
        """After a game: a one-game protocol's process ends now (it has had its END)."""
        if self._wire and self._wire.one_game:
            self.close(limits.quit_grace_ms)


def _kgp(seat: Seat) -> bool:
    """Whether the seat is a KGP agent, played as the course server plays one."""
    return seat.bot is not None and seat.bot.protocol == "kgp"


def _other(side: int) -> int:
    return NORTH if side == SOUTH else SOUTH


class _Forfeit(Exception):
    """A bot's Fault with the bot it is charged to."""

    def __init__(self, player: Seat, fault: Fault) -> None:
        super().__init__(str(fault))
        self.player = player
        self.fault = fault


class _charged_to:  # noqa: N801 (used like a function: `with _charged_to(player):`)
    """Whatever Fault happens inside is `player`'s: the one place blame is assigned. A class rather than a
    generator-based context manager: it runs three times a move, and this costs a third as much."""

    __slots__ = ("player",)

    def __init__(self, player: Seat) -> None:
        self.player = player

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, fault: BaseException | None, tb: object) -> None:
        if isinstance(fault, Fault):
            raise _Forfeit(self.player, self.player.diagnose(fault)) from None


def play_game(
    rules: Rules,
    south: S,
    north: S,
    limits: Limits = Limits(),
    on_move: Callable[[Position, Move, S], None] | None = None,
    opening: tuple[Move, ...] = (),
    seed: int = 0,
) -> GameRecord:
    """Play one game from the position after `opening` (legal plies from the start, no SWAP) and return
    its record. Never raises for anything a bot does; what a seat raises beyond a Fault (a person who
    quits, Ctrl-C) goes through, and the game has no record.

    A KGP agent is played as the course server plays it: a position with one legal move is played for it
    without asking, and one it gave no move for gets a random legal move (drawn from `seed`, the run's, and
    the plies so far: the same run plays the same), counted in `random_moves`, unless its bot.toml says
    `no_move = "forfeit"`."""
    if south.name == north.name:
        raise ValueError(f"both players are named {south.name!r}; give one another name")
    bots = [seat.bot for seat in (south, north) if seat.bot is not None]
    check_rules(bots, rules)
    if opening and not all(starts_anywhere(bot) for bot in bots):
        raise ValueError("a bot of this game speaks a protocol that cannot begin at an opening")
    if SWAP in opening:
        raise ValueError("an opening has no SWAP: the swap decision is the bots'")
    by_side = [south, north]  # who owns each side now (a SWAP exchanges them)
    pos = rules.initial()
    for ply in opening:
        pos = rules.play(pos, ply)
    moves: list[Move] = []
    move_ms: list[float] = []
    think_ms = {south.name: 0.0, north.name: 0.0}
    moves_made = {south.name: 0, north.name: 0}
    random_moves: dict[str, int] = {}
    forfeit: _Forfeit | None = None
    illegal = ""  # the answer the rules refused, if one was
    try:
        for side, player in enumerate((south, north)):
            with _charged_to(player):
                player.new_game(rules, side, limits)
        while not rules.is_over(pos):
            side = pos.to_move
            mover = by_side[side]
            with _charged_to(mover):
                legal = rules.legal_moves(pos) if _kgp(mover) else ()
                if len(legal) == 1:  # go-kgp's "[Auto-move]": an agent is not asked for its one move
                    move, took = legal[0], 0.0
                else:
                    try:
                        move, took = mover.move(pos, side, limits, by_side[1 - side])
                    except NoMove as none:
                        if cast(Bot, mover.bot).no_move == "forfeit":
                            raise
                        plies = (*opening, *moves)
                        move, took = random.Random(f"{seed} {rules.spec} {plies}").choice(legal), none.took
                        random_moves[mover.name] = random_moves.get(mover.name, 0) + 1
                try:
                    pos = rules.play(pos, move)
                except ValueError as e:
                    illegal = str(move)
                    pits = _KGP_PITS if _kgp(mover) else _PITS
                    if isinstance(move, int) and not 1 <= move <= rules.pits:  # a number it chose: its words
                        out = f"played a pit out of range 1..{rules.pits}{pits}"
                        raise Fault(Reason.ILLEGAL, out, f"its move: {move}") from None
                    raise Fault(
                        Reason.ILLEGAL, f"played {move}: {e}{pits if isinstance(move, int) else ''}"
                    ) from None
            moves.append(move)
            move_ms.append(round(took, 2))
            think_ms[mover.name] += took
            moves_made[mover.name] += 1
            if move == SWAP:
                by_side.reverse()
            for owner, player in enumerate(by_side):  # a fault while telling a bot is that bot's
                with _charged_to(player):
                    player.observe(pos, move, player is mover, owner)
            if on_move:
                on_move(pos, move, mover)
        # Limits are watched while a bot thinks; a quick bot's breach is caught here, before the result.
        for player in (south, north):
            with _charged_to(player):
                player.check_limits()
    except _Forfeit as f:
        forfeit = f

    if forfeit is None:
        outcome = rules.result(pos)
        winner = None if outcome.winner is None else by_side[outcome.winner].name
        reason, faulty, detail, said = Reason(outcome.reason), None, "", ""
        for side, player in enumerate(by_side):
            result = "draw" if outcome.winner is None else ("win" if outcome.winner == side else "loss")
            player.end_game(result, pos.store(side), pos.store(_other(side)), reason)
    else:
        loser = forfeit.player
        other = north if loser is south else south
        winner, reason, faulty, detail = other.name, forfeit.fault.reason, loser.name, forfeit.fault.detail
        said = forfeit.fault.said
        loser.kill()
        side = by_side.index(other)
        other.end_game("win", pos.store(side), pos.store(_other(side)), reason)
    for player in (south, north):
        player.finish(limits)
        if not limits.ponder:
            player.settle()  # what it writes on reading END is this game's
            player.pause()  # between its games a bot rests too: it must not take the CPU of other games
    return GameRecord(
        rules=rules.spec,
        south=south.name,
        north=north.name,
        moves=tuple(moves),
        south_store=pos.store(SOUTH),
        north_store=pos.store(NORTH),
        winner=winner,
        reason=reason,
        faulty=faulty,
        detail=detail,
        said=said,
        illegal=illegal if reason == Reason.ILLEGAL else "",
        move_ms=tuple(move_ms),
        think_ms={name: round(ms, 2) for name, ms in think_ms.items()},
        moves_made=moves_made,
        stderr={p.name: p.stderr_tail() for p in (south, north)},
        opening=tuple(opening),
        random_moves=random_moves,
    )
