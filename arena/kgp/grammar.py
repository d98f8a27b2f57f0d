"""The Kalah Game Protocol's grammar (KGP 1.0, KWARC's kalah-game `spec/`): one line in, one value out.

A KGP line is `[id][@ref] name args...`: an optional command id, an optional reference to an earlier id, a
command name, and arguments that are integers, reals, words, quoted strings or boards `<n,s,n,pits...>`.
`parse` and `Command.line` are the only reading and writing of it in arena, so the wire, the relay and the
tests agree on one grammar; where the spec leaves a choice, protocol.md ("KGP") says which arena takes.
No I/O here: a line that breaks the grammar is a `KgpError` whose message can be sent back in `error`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from arena.game.rules import Position

VERSION = (1, 0, 1)  # what arena's side announces in `kgp`: the course server's version
PORT = 2671  # the port KGP agents connect to, as on the course server
LINE_LIMIT = 16384  # characters of one command, trailing white space included (spec 012)

_ID = re.compile(r"[ \t]*(?:([0-9]*)(?:@([0-9]+))?[ \t]+)?([A-Za-z0-9]+)(?:[ \t]+(.*?))?[ \t\r\n]*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?[0-9]*\.[0-9]+")
_WORD = re.compile(r"[A-Za-z0-9:-]+")
_BOARD = re.compile(r"<[0-9]+(?:,[0-9]+)*>")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}  # a backslash before any other character stands for it
_ESCAPED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


class KgpError(ValueError):
    """A line that breaks the grammar; the message is one line, fit to send back in `error "..."`."""


_DIGITS = 18  # a number of more digits is no id, pit or count (and Python will not read one of 4300 and more)


def _int(text: str) -> int:
    if len(text.lstrip("+-")) > _DIGITS:
        raise KgpError(f"a number of more than {_DIGITS} digits: {_shown(text)}")
    return int(text)


@dataclass(frozen=True, slots=True)
class Board:
    """A KGP board literal: `<n,south store,north store,south pits...,north pits...>`, each row numbered
    from its owner's left (the sowing order). An agent is always sent the board as South (spec 021)."""

    south: tuple[int, ...]
    north: tuple[int, ...]
    south_store: int = 0
    north_store: int = 0

    def __post_init__(self) -> None:
        if not self.south or len(self.south) != len(self.north):
            rows = f"{len(self.south)} and {len(self.north)}"
            raise KgpError(f"a board needs two rows of equal length, not {rows}")

    @property
    def size(self) -> int:
        return len(self.south)

    def __str__(self) -> str:
        numbers = (self.size, self.south_store, self.north_store, *self.south, *self.north)
        return "<" + ",".join(map(str, numbers)) + ">"

    @classmethod
    def parse(cls, text: str) -> Board:
        if not _BOARD.fullmatch(text):
            raise KgpError(f"not a board literal: {_shown(text)}")
        size, south, north, *pits = (_int(word) for word in text[1:-1].split(","))
        if size < 1 or len(pits) != 2 * size:
            raise KgpError(f"a board of size {size} has {2 * size + 3} numbers, this one {len(pits) + 3}")
        return cls(tuple(pits[:size]), tuple(pits[size:]), south, north)

    @classmethod
    def seen_by(cls, pos: Position, side: int) -> Board:
        """The position as the agent playing `side` is sent it: its own row as South's (the board mirrored
        for North, as the course server does)."""
        view = pos.view(side)
        n = pos.pits
        return cls(view[:n], view[n + 1 : 2 * n + 1], view[n], view[2 * n + 1])


Arg = int | float | str | Board  # a word and a quoted string are both str: `Command.line` quotes as needed


@dataclass(frozen=True, slots=True)
class Command:
    """One KGP command. `id` and `ref` are None when absent (an id of 0 is an id, as the grammar has it)."""

    name: str
    args: tuple[Arg, ...] = ()
    id: int | None = None
    ref: int | None = None

    def line(self) -> str:
        """The command as one line, without its line end (the sender adds "\\r\\n")."""
        if not re.fullmatch(r"[A-Za-z0-9]+", self.name):
            raise ValueError(f"not a KGP command name: {self.name!r}")
        head = ("" if self.id is None else str(self.id)) + ("" if self.ref is None else f"@{self.ref}")
        words = [head] if head else []
        words.append(self.name)
        words += [_format(arg) for arg in self.args]
        text = " ".join(words)
        if len(text) + 2 > LINE_LIMIT:
            raise ValueError(f"a KGP line of {len(text) + 2} characters is over the limit of {LINE_LIMIT}")
        return text

    def arg(self, k: int) -> Arg | None:
        return self.args[k] if k < len(self.args) else None


def parse(line: str) -> Command:
    """The command on `line` (its line end may be there or not), or KgpError saying what is wrong."""
    if len(line) > LINE_LIMIT:
        raise KgpError(f"line longer than {LINE_LIMIT} characters")
    match = _ID.fullmatch(line)
    if match is None:
        raise KgpError(f"not a KGP command: {_shown(line)}")
    ident, ref, name, rest = match.groups()
    args = tuple(_arguments(rest or ""))
    return Command(name, args, _int(ident) if ident else None, _int(ref) if ref else None)


def _arguments(text: str) -> list[Arg]:
    args: list[Arg] = []
    k = 0
    while k < len(text):
        if text[k] in " \t":
            k += 1
            continue
        if text[k] == '"':
            value, k = _string(text, k)
            args.append(value)
        else:
            end = k
            while end < len(text) and text[end] not in " \t":
                end += 1
            args.append(_token(text[k:end]))
            k = end
    return args


def _string(text: str, k: int) -> tuple[str, int]:
    """The quoted string that opens at text[k], unescaped, and the index after its closing quote."""
    out: list[str] = []
    j = k + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            if j + 1 == len(text):
                break
            nxt = text[j + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            j += 2
        elif c == '"':
            if j + 1 < len(text) and text[j + 1] not in " \t":
                raise KgpError(f"no space after a quoted string: {_shown(text[k:])}")
            return "".join(out), j + 1
        else:
            out.append(c)
            j += 1
    raise KgpError(f"a quoted string without its closing quote: {_shown(text[k:])}")


def _token(word: str) -> Arg:
    if _INTEGER.fullmatch(word):
        return _int(word)
    if _REAL.fullmatch(word):
        return float(word)
    if _WORD.fullmatch(word):
        return word
    if word.startswith("<"):
        return Board.parse(word)
    raise KgpError(f"not an integer, real, word, string or board: {_shown(word)}")


def _format(arg: Arg) -> str:
    if isinstance(arg, bool):  # a bool is an int to Python, and no KGP type
        raise ValueError("KGP has no booleans")
    if isinstance(arg, int | Board):
        return str(arg)
    if isinstance(arg, float):
        if not math.isfinite(arg):
            raise ValueError(f"KGP has no real {arg}")
        return repr(arg) if "e" not in repr(arg) else f"{arg:f}"
    if _WORD.fullmatch(arg) and not _INTEGER.fullmatch(arg):
        return arg
    bad = next((c for c in arg if ord(c) < 32 and c not in _ESCAPED or ord(c) >= 127), None)
    if bad is not None:
        raise ValueError(f"arena writes KGP strings in printable ASCII, not {bad!r}")
    return '"' + "".join(_ESCAPED.get(c, c) for c in arg) + '"'


def _shown(text: str, limit: int = 40) -> str:
    """A piece of a bad line for an error message, in ASCII: the message may be sent back in `error`."""
    return ascii(text if len(text) <= limit else text[:limit] + "...")
