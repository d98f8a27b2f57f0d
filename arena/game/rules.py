"""The one rules engine: immutable positions and rules objects, no processes, no I/O.

The referee, the bundled search bots and the tests all play through `Rules.play`, so there is exactly one
definition of a legal move. A variant is an option of a rules object (`Kalah(pie=True)`), named by a spec
string such as ``kalah,pits=7,seeds=7,pie`` that appears in game records and on the wire.

Board layout (absolute, used everywhere): South's pits 1..n, South's store, North's pits 1..n, North's store.
That is sowing order for South; pit i of one side faces pit n+1-i of the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol

SOUTH: Final = 0
NORTH: Final = 1
SIDE_NAMES: Final = ("south", "north")
SWAP: Final = "SWAP"

Move = int | str  # a pit number 1..n from the mover's own left, or SWAP

# Sanity bounds for a spec, so that a typo cannot ask for a board the size of the memory.
MAX_PITS: Final = 100
MAX_SEEDS: Final = 10_000


class RulesError(ValueError):
    """A rules spec that cannot be parsed; the message names the offending part."""


class IllegalMove(ValueError):
    """A move that the rules do not allow in this position; the message says why, for a student."""


@dataclass(frozen=True, slots=True)
class Position:
    """A game state. `turn` counts completed turns: it grows when the move passes to the other player
    (an extra turn keeps it), and by SWAP. `can_swap` is true only on the second player's first turn,
    before it has moved (under the pie rule)."""

    board: tuple[int, ...]
    to_move: int = SOUTH
    turn: int = 0
    ended: str | None = None  # None while in play; "normal" or "early" once over
    can_swap: bool = False

    @property
    def pits(self) -> int:
        return len(self.board) // 2 - 1

    def store(self, side: int) -> int:
        return self.board[side * (self.pits + 1) + self.pits]

    def row(self, side: int) -> tuple[int, ...]:
        """The pits of `side`, numbered 1..n from that side's own left."""
        start = side * (self.pits + 1)
        return self.board[start : start + self.pits]

    def view(self, side: int) -> tuple[int, ...]:
        """The board as `side` sees it: own pits, own store, opponent's pits, opponent's store."""
        if side == SOUTH:
            return self.board
        half = self.pits + 1
        return self.board[half:] + self.board[:half]


_SLOTS = tuple(Position.__dict__[name].__set__ for name in ("board", "to_move", "turn", "ended", "can_swap"))


def _position(
    board: tuple[int, ...], to_move: int, turn: int, ended: str | None = None, can_swap: bool = False
) -> Position:
    """`Position(board, to_move, turn, ended, can_swap)`, made the fast way for the engine's hot path: a
    frozen dataclass's own __init__ sets each field through object.__setattr__, which cost a third of a
    move (benchmarks/rules_openspiel.py); its slots are set here directly, to the same object."""
    made = object.__new__(Position)
    set_board, set_to_move, set_turn, set_ended, set_can_swap = _SLOTS
    set_board(made, board)
    set_to_move(made, to_move)
    set_turn(made, turn)
    set_ended(made, ended)
    set_can_swap(made, can_swap)
    return made


_Sowing = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]]


@lru_cache(maxsize=256)
def _board_of(n: int) -> tuple[_Sowing, _Sowing]:
    """For each side of a board of `n` pits: the holes in sowing order (the opponent's store left out) from
    the side's first pit, twice round; where each hole first comes in it; and the side's (pit number, hole)
    pairs. Seeds sown from a pit go to the holes after it in that order: one slice, no test per seed.
    Looked up once a move (a dict of the board sizes seen, `_BOARDS`), not computed."""
    size = 2 * n + 2
    out = []
    for side in (SOUTH, NORTH):
        skip = (1 - side) * (n + 1) + n
        start = side * (n + 1)
        lap = tuple(j % size for j in range(start, start + size) if j % size != skip)
        at = [0] * size
        for k, hole in enumerate(lap):
            at[hole] = k
        out.append((lap + lap, tuple(at), tuple((p + 1, start + p) for p in range(n))))
    return out[0], out[1]


class _Boards(dict[int, tuple[_Sowing, _Sowing]]):
    """`_board_of` by board size, as a plain dict's lookup (a cached function's call costs more)."""

    def __missing__(self, n: int) -> tuple[_Sowing, _Sowing]:
        self[n] = found = _board_of(n)
        return found


_BOARDS: Final = _Boards()


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished game stands: final stores per side and the winning side (None for a draw)."""

    south_store: int
    north_store: int
    winner: int | None
    reason: str  # "normal" or "early"


LIFT: Final = "lift"  # a pit's seeds taken into the hand (the move's pit, or a relay lift)
SOW: Final = "sow"  # one seed from the hand into a hole
CAPTURE: Final = "capture"  # a hole's seeds into the mover's store
SWEEP: Final = "sweep"  # the game is over: a hole's seeds into the store of the row it is in

Step = tuple[str, int, int]  # (LIFT, SOW, CAPTURE or SWEEP; the hole, absolute; how many seeds)


@dataclass(slots=True)  # not frozen: made three times faster than a frozen one; a page traces millions
class Trace:
    """What one move did, step by step in the order it happened, for a replay to show (not for search:
    `play` is the fast path and records nothing). `after` is what `play` returns. The rest is read off
    `steps` once, by `Rules.trace`. Read it, never change it."""

    after: Position
    steps: tuple[Step, ...]
    extra: bool  # the mover moves again
    relay: bool  # the move lifted a pit again and sowed on (relay sowing)
    captured: tuple[int, ...] = ()  # the holes a capture emptied, in order
    banked: int = 0  # seeds a capture put in the mover's store
    swept: bool = False  # the game ended and the rows were banked into their stores


@lru_cache(maxsize=4096)
def _sown(hole: int, seeds: int, size: int, skip: int) -> tuple[Step, ...]:
    """The steps of lifting `seeds` seeds from `hole` and sowing them one by one, as the engine does: whole
    laps first (every hole but `skip`, the emptied one included, from the next hole round), then the rest
    from the next hole on, never into `skip`. Written for a log after the engine's own loop, so that the
    loop itself checks for no log; kept, since a replayed game sows the same few (hole, seeds) again and
    again (writing a page's replays traces millions of moves)."""
    lap = [(SOW, (hole + k) % size, 1) for k in range(1, size + 1) if (hole + k) % size != skip]
    laps, rest = divmod(seeds, size - 1)
    steps: list[Step] = [(LIFT, hole, seeds), *lap * laps]
    i = hole
    while len(steps) < 1 + len(lap) * laps + rest:
        i = i + 1 if i + 1 < size else 0
        if i != skip:
            steps.append((SOW, i, 1))
    return tuple(steps)


class Rules(Protocol):
    """What every rule set offers; the referee and the bots use nothing else."""

    @property
    def spec(self) -> str: ...
    @property
    def pits(self) -> int: ...
    @property
    def seeds(self) -> int: ...
    @property
    def pie(self) -> bool: ...
    @property
    def total_seeds(self) -> int: ...
    def initial(self) -> Position: ...
    def legal_moves(self, pos: Position) -> tuple[Move, ...]: ...
    def play(
        self, pos: Position, move: Move, log: list[Step] | None = None, trusted: bool = False
    ) -> Position: ...
    def trace(self, pos: Position, move: Move) -> Trace: ...
    def is_over(self, pos: Position) -> bool: ...
    def result(self, pos: Position) -> Outcome: ...
    def from_view(
        self, view: tuple[int, ...] | list[int], can_swap: bool, *, first_turn: bool = False
    ) -> Position: ...


END_RULES: Final = ("any-empty", "mover-empty")


class _Board:
    """What every rule set here shares: the board, the pie rule's SWAP, legality, the end and the result.
    Subclasses are frozen dataclasses with `pits`, `seeds` and `pie`, and write their own `play`."""

    __slots__ = ()
    pits: int
    seeds: int
    pie: bool

    def _check_size(self) -> None:
        if not 1 <= self.pits <= MAX_PITS:
            raise RulesError(f"pits={self.pits} is out of range 1..{MAX_PITS}")
        if not 1 <= self.seeds <= MAX_SEEDS:
            raise RulesError(f"seeds={self.seeds} is out of range 1..{MAX_SEEDS}")

    @property
    def total_seeds(self) -> int:
        return 2 * self.pits * self.seeds

    def initial(self) -> Position:
        row = (self.seeds,) * self.pits
        return Position(row + (0,) + row + (0,))

    def from_view(
        self, view: tuple[int, ...] | list[int], can_swap: bool, *, first_turn: bool = False
    ) -> Position:
        """The position a bot sees in MOVE (own side first), as South to move; for a bot's own search.

        `can_swap`: this is the second player's first MOVE (SWAP is offered under the pie rule).
        `first_turn`: this MOVE is still the game's first turn (the bot is South and every move so far was
        its own), turn 0, which the pie rule (a SWAP may answer it) and no-first-extra treat specially."""
        if len(view) != 2 * self.pits + 2:
            raise ValueError(f"a board of {2 * self.pits + 2} numbers was expected, got {len(view)}")
        if first_turn:
            if can_swap:
                raise ValueError("the game's first turn is the first player's: it cannot offer SWAP")
            return Position(tuple(view), SOUTH, 0)
        return Position(tuple(view), SOUTH, 1 if can_swap else 2, None, can_swap and self.pie)

    def legal_moves(self, pos: Position) -> tuple[Move, ...]:
        if pos.ended:
            return ()
        board = pos.board
        moves: tuple[Move, ...] = tuple([p for p, hole in _BOARDS[self.pits][pos.to_move][2] if board[hole]])
        if pos.can_swap:
            moves += (SWAP,)
        return moves

    def check(self, pos: Position, move: Move) -> None:
        """Raise IllegalMove, with a reason a student can act on, unless `move` is legal."""
        if pos.ended:
            raise IllegalMove("the game is over")
        if move == SWAP:
            if not self.pie:
                raise IllegalMove("SWAP is not allowed: these rules have no pie rule")
            if not pos.can_swap:
                raise IllegalMove("SWAP is only allowed as the second player's first move")
            return
        if not isinstance(move, int) or isinstance(move, bool):
            raise IllegalMove(f"{move!r} is not a pit number")
        if not 1 <= move <= self.pits:
            raise IllegalMove(f"pit {move} is out of range 1..{self.pits}")
        if pos.board[pos.to_move * (self.pits + 1) + move - 1] == 0:
            raise IllegalMove(f"pit {move} is empty")

    def _spec(self, name: str, *options: tuple[bool, str]) -> str:
        """`name`, then the board's size and pie where not the default, then the rule set's own options."""
        parts = [name]
        if self.pits != 6:
            parts.append(f"pits={self.pits}")
        if self.seeds != 6:
            parts.append(f"seeds={self.seeds}")
        if self.pie:
            parts.append("pie")
        return ",".join(parts + [text for on, text in options if on])

    def _swap(self, pos: Position) -> Position:
        """Sides change hands, the board does not: the first player now owns North and moves next."""
        return Position(pos.board, pos.to_move, pos.turn + 1)

    @staticmethod
    def _bank_rows(board: list[int], n: int, log: list[Step] | None = None) -> None:
        """The game is over: each side banks the seeds left in its own row."""
        for side in (SOUTH, NORTH):
            start = side * (n + 1)
            if log is not None:
                log += [(SWEEP, j, board[j]) for j in range(start, start + n) if board[j]]
            board[start + n] += sum(board[start : start + n])
            board[start : start + n] = [0] * n

    def trace(self, pos: Position, move: Move) -> Trace:
        """`play`, with every step it took: raises IllegalMove as `play` does."""
        log: list[Step] = []
        after = self._move(pos, move, log)
        extra = after.ended is None and after.to_move == pos.to_move and move != SWAP
        kinds = [kind for kind, _, _ in log]
        captured: tuple[int, ...] = ()
        banked = 0
        if CAPTURE in kinds:
            captured = tuple([hole for kind, hole, _ in log if kind == CAPTURE])
            banked = sum([seeds for kind, _, seeds in log if kind == CAPTURE])
        return Trace(after, tuple(log), extra, kinds.count(LIFT) > 1, captured, banked, SWEEP in kinds)

    def play(
        self, pos: Position, move: Move, log: list[Step] | None = None, trusted: bool = False
    ) -> Position:
        """The position after `move`; raises IllegalMove if it is not legal. Each rule set's own is its
        `_move` itself, not a call to it: the search bots' hot path pays for no second call. `trusted`: the
        move is one `legal_moves` gave for `pos` (a search's), so it is not checked again."""
        return self._move(pos, move, log, trusted)

    def _move(
        self, pos: Position, move: Move, log: list[Step] | None = None, trusted: bool = False
    ) -> Position:
        raise NotImplementedError

    def is_over(self, pos: Position) -> bool:
        return pos.ended is not None

    def result(self, pos: Position) -> Outcome:
        if pos.ended is None:
            raise ValueError("the game is not over")
        south, north = pos.store(SOUTH), pos.store(NORTH)
        winner = None if south == north else (SOUTH if south > north else NORTH)
        return Outcome(south, north, winner, pos.ended)


@dataclass(frozen=True, slots=True)
class Kalah(_Board):
    """Standard Kalah(pits, seeds) with the options of the rules brief.

    pie: the second player may answer the first turn with SWAP (take over that side).
    empty_capture: a last seed in an own empty pit is banked even when the opposite pit is empty.
    end: "any-empty" ends the game as soon as either row is empty; "mover-empty" only when the player
    to move has no seeds. Either way, each side then banks the seeds left in its own row.
    early: stop as soon as one store holds more than half of all seeds (the result cannot change).
    no_first_extra: the game's first move never earns an extra turn (the Manchester engine's rule).
    """

    pits: int = 6
    seeds: int = 6
    pie: bool = False
    empty_capture: bool = False
    end: str = "any-empty"
    early: bool = False
    no_first_extra: bool = False

    def __post_init__(self) -> None:
        self._check_size()
        if self.end not in END_RULES:
            raise RulesError(f"end={self.end} is not one of {', '.join(END_RULES)}")

    @property
    def spec(self) -> str:
        """The canonical spec: a preset's name if it is one, else defaults left out, options in order."""
        if self == MANKALAH:
            return "mankalah"
        return self._spec(
            "kalah",
            (self.empty_capture, "empty-capture"),
            (self.end != "any-empty", f"end={self.end}"),
            (self.early, "early"),
            (self.no_first_extra, "no-first-extra"),
        )

    def _move(
        self, pos: Position, move: Move, log: list[Step] | None = None, trusted: bool = False
    ) -> Position:
        """The position after `move`, each step appended to `log` unless None; IllegalMove if not legal
        (unchecked when `trusted`: a move `legal_moves` gave)."""
        if not trusted:
            self.check(pos, move)
        if move == SWAP:
            return self._settle(list(self._swap(pos).board), pos.to_move, pos.turn + 1, False, log)
        n = self.pits
        side = pos.to_move
        store = side * (n + 1) + n
        board = list(pos.board)
        assert isinstance(move, int)  # `check` passed: a pit number
        lifted = side * (n + 1) + move - 1
        seeds = board[lifted]
        board[lifted] = 0
        # Whole laps first (every hole but the opponent's store, the emptied pit included), then the rest,
        # into the holes after the lifted pit in sowing order (_sowing): the last seed's hole is `i`.
        order, at, _ = _BOARDS[n][side]
        laps, seeds = divmod(seeds, 2 * n + 1)
        if laps:
            for j in order[: 2 * n + 1]:
                board[j] += laps
        k = at[lifted]
        for j in order[k + 1 : k + 1 + seeds]:
            board[j] += 1
        i = order[k + seeds]
        if log is not None:  # written after the sowing, which stays as fast as without a log
            log += _sown(lifted, pos.board[lifted], 2 * n + 2, (1 - side) * (n + 1) + n)
        if i == store and not (self.no_first_extra and pos.turn == 0):
            nxt = side
        else:
            nxt = 1 - side
            own_row = side * (n + 1) <= i < store
            if own_row and board[i] == 1:
                opposite = 2 * n - i
                if board[opposite] or self.empty_capture:
                    if log is not None:
                        log += [(CAPTURE, i, 1)] + (
                            [(CAPTURE, opposite, board[opposite])] if board[opposite] else []
                        )
                    board[store] += board[opposite] + 1
                    board[opposite] = 0
                    board[i] = 0
        turn = pos.turn + (nxt != side)
        can_swap = self.pie and turn == 1 and nxt != side
        if self.end == "any-empty" and not self.early and any(board[:n]) and any(board[n + 1 : 2 * n + 1]):
            # Most moves: both rows still hold seeds, the game goes on (what `_settle` would find, sooner)
            return _position(tuple(board), nxt, turn, None, can_swap)
        return self._settle(board, nxt, turn, can_swap, log)

    play = _move  # `_move` itself, no second call on the hot path

    def _settle(
        self, board: list[int], nxt: int, turn: int, can_swap: bool, log: list[Step] | None = None
    ) -> Position:
        """Apply the end rule (banking what is left) or the early finish, then freeze the position."""
        n = self.pits
        south_empty = not any(board[0:n])
        north_empty = not any(board[n + 1 : 2 * n + 1])
        if self.end == "any-empty":
            over = south_empty or north_empty
        else:
            over = north_empty if nxt == NORTH else south_empty
        if over:
            self._bank_rows(board, n, log)
            return _position(tuple(board), nxt, turn, "normal")
        # While a swap is pending, who owns the leading store is not settled: no early finish yet.
        if self.early and not can_swap and 2 * max(board[n], board[2 * n + 1]) > self.total_seeds:
            return _position(tuple(board), nxt, turn, "early")
        return _position(tuple(board), nxt, turn, None, can_swap)


MANKALAH: Final = Kalah(pits=7, seeds=7, pie=True, no_first_extra=True)


@dataclass(frozen=True, slots=True)
class Relay(_Board):
    """Relay Kalah, the first rule set of source 003.

    A move sows as in Kalah (own store included, the opponent's skipped). If the last seed lands in a pit of
    the mover's own row that was not empty, and this sowing put a seed into the opponent's row, the mover
    lifts that pit and sows on, as part of the same move. A last seed that makes an opponent's pit hold 2 or
    3 captures them, and the pit sown just before it too if it holds 2 or 3 (`chain`: and so on back along
    the opponent's row, as in Oware). No extra turns, no capture from the own row. The game ends when a
    store holds more than half the seeds, or when the player to move has no seeds (the other then banks
    the seeds left in their row).

    Every move terminates: a relay series that comes back to a board and pit it has already been at within
    the same move would repeat forever, so the move ends there instead.
    """

    pits: int = 6
    seeds: int = 6
    pie: bool = False
    chain: bool = False

    def __post_init__(self) -> None:
        self._check_size()

    @property
    def spec(self) -> str:
        return self._spec("relay", (self.chain, "chain"))

    def _move(
        self, pos: Position, move: Move, log: list[Step] | None = None, trusted: bool = False
    ) -> Position:
        """The position after `move`, each step appended to `log` unless None; IllegalMove if not legal
        (unchecked when `trusted`: a move `legal_moves` gave)."""
        if not trusted:
            self.check(pos, move)
        n = self.pits
        side = pos.to_move
        if move == SWAP:
            return self._swap(pos)
        own, store = side * (n + 1), side * (n + 1) + n
        opp = (1 - side) * (n + 1)
        skip, size = opp + n, 2 * n + 2
        board = list(pos.board)
        assert isinstance(move, int)  # `check` passed: a pit number
        i = own + move - 1
        seen: set[tuple[int, ...]] = set()
        while True:
            seeds, board[i] = board[i], 0
            reached_opponent = False
            lifted, rest = i, seeds
            while seeds:
                i = i + 1 if i + 1 < size else 0
                if i != skip:
                    board[i] += 1
                    seeds -= 1
                    reached_opponent = reached_opponent or opp <= i < opp + n
            if log is not None:  # written after the sowing, which stays as fast as without a log
                log += _sown(lifted, rest, size, skip)
            if not (own <= i < store and board[i] > 1 and reached_opponent):
                break
            state = (*board, i)
            if state in seen:
                break  # the relay would go round forever: the move ends here
            seen.add(state)
        if opp <= i < opp + n and board[i] in (2, 3):
            j = i
            while True:
                if log is not None:
                    log.append((CAPTURE, j, board[j]))
                board[store] += board[j]
                board[j] = 0
                j -= 1
                if j < opp or board[j] not in (2, 3) or (j < i - 1 and not self.chain):
                    break
        nxt = 1 - side
        turn = pos.turn + 1
        if 2 * max(board[n], board[2 * n + 1]) > self.total_seeds:
            return _position(tuple(board), nxt, turn, "normal")
        if not any(board[nxt * (n + 1) : nxt * (n + 1) + n]):
            self._bank_rows(board, n, log)
            return _position(tuple(board), nxt, turn, "normal")
        return _position(tuple(board), nxt, turn, None, self.pie and turn == 1)

    play = _move  # `_move` itself, no second call on the hot path


_OPTIONS: Final[dict[str, tuple[dict[str, str], dict[str, str]]]] = {
    # rules name: (flags, options with a value), each spec word mapped to the dataclass field
    "kalah": (
        {
            "pie": "pie",
            "empty-capture": "empty_capture",
            "early": "early",
            "no-first-extra": "no_first_extra",
        },
        {"pits": "pits", "seeds": "seeds", "end": "end"},
    ),
    "relay": ({"pie": "pie", "chain": "chain"}, {"pits": "pits", "seeds": "seeds"}),
}
_CLASSES: Final = {"kalah": Kalah, "relay": Relay}
_PRESETS: Final = {"mankalah": MANKALAH}


def rule_sets() -> str:
    """The rule sets and their options, in one line for a --help: what a spec may say."""
    sets = []
    for name, (flags, valued) in _OPTIONS.items():
        options = [*flags, *(f"{k}={'|'.join(END_RULES) if k == 'end' else 'N'}" for k in valued)]
        sets.append(f"{name} [{', '.join(options)}]")
    for name, p in _PRESETS.items():
        same = f"kalah,pits={p.pits},seeds={p.seeds}" + ",pie" * p.pie + ",no-first-extra" * p.no_first_extra
        sets.append(f"{name} (= {same})")
    return "; ".join(sets)


def parse_rules(spec: str) -> Kalah | Relay:
    """Parse a rules spec strictly: an unknown, repeated or malformed option is an error naming it."""
    if not spec:
        raise RulesError("empty rules spec; try 'kalah'")
    if any(c.isspace() for c in spec):
        raise RulesError(f"rules spec {spec!r} contains spaces; options are separated by commas only")
    name, *options = spec.split(",")
    if name in _PRESETS:
        if options:
            raise RulesError(f"{name!r} is a preset and takes no options; spell the rules out instead")
        return _PRESETS[name]
    if name not in _OPTIONS:
        raise RulesError(f"unknown rules {name!r}; known: {', '.join([*_OPTIONS, *_PRESETS])}")
    flags, valued = _OPTIONS[name]
    fields: dict[str, object] = {}
    parsed: object
    for option in options:
        key, eq, value = option.partition("=")
        if key in flags and not eq:
            field, parsed = flags[key], True
        elif key in valued and eq:
            field = valued[key]
            if key == "end":
                parsed = value
            elif value.isdigit() and value.isascii():
                parsed = int(value)
            else:
                raise RulesError(f"option {key}={value!r} needs a whole number")
        elif key in flags:
            raise RulesError(f"option {key!r} takes no value (got {option!r})")
        elif key in valued:
            example = "any-empty" if key == "end" else "6"
            raise RulesError(f"option {key!r} needs a value, e.g. {key}={example}")
        else:
            known = ", ".join([*flags, *(f"{k}=" for k in valued)])
            raise RulesError(f"unknown {name} option {option!r}; known: {known}")
        if field in fields:
            raise RulesError(f"option {key!r} given twice")
        fields[field] = parsed
    return _CLASSES[name](**fields)


def board_text(pos: Position, south: str = "South", north: str = "North") -> str:
    """The board as the rules sources draw it: North's row on top, numbered n..1; South's below, 1..n."""
    n = pos.pits
    width = max(2, *(len(str(x)) for x in pos.board)) + 1

    def cells(values: tuple[int, ...] | range) -> str:
        return "".join(str(v).rjust(width) for v in values)

    return "\n".join(
        [
            f"{north} store: {pos.store(NORTH)}",
            cells(range(n, 0, -1)),
            cells(tuple(reversed(pos.row(NORTH)))),
            cells(pos.row(SOUTH)),
            cells(range(1, n + 1)),
            f"{south} store: {pos.store(SOUTH)}",
        ]
    )
