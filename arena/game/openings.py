"""Opening positions: why deterministic bots play more than one game against each other.

Two deterministic bots play the same game every time they meet from the start position. A tournament
therefore starts its games from a book of openings, each a short sequence of legal plies from the start, and
every pair of bots plays each opening once from each side (as fastchess and cutechess-cli do), so an opening
that favours one side favours both bots equally.

A generated book is drawn from the tournament's seed: random legal plies from the start, kept only when the
position is roughly balanced, that is, when a search of fixed depth (`BALANCE_DEPTH` moves, arena's solver;
exact where the game ends within it) scores it within `tolerance(rules)` seeds of the start position's score,
from the first player's side. Fixed depth, not a time limit, so the same seed makes the same book on any
machine. Under the pie rule an opening is exactly South's first turn: the swap decision stays with North's
bot, and the protocol's "SWAP only on North's first MOVE" stays true.

A book file gives a course fixed openings: one opening per line, its plies as pit numbers (each from the
mover's own left, as on the wire) separated by spaces or commas; `#` starts a comment; blank lines are
skipped. Every line must be legal from the start under the tournament's rules.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from arena.game.rules import SOUTH, SWAP, Move, Position, Rules
from arena.game.solver import Solver

PLIES = 4  # plies of a generated opening (extra turns count: a ply is one move)
BALANCE_DEPTH = 6  # moves of the search that judges an opening (~25 ms a position on Kalah(6,6))
ATTEMPTS_PER_OPENING = 40  # random draws per opening wanted before the generator settles for fewer
MORE_PLIES = 8  # how much longer than PLIES an opening past the book may grow before there are no more

Opening = tuple[Move, ...]
log = logging.getLogger("arena")


class BookError(ValueError):
    """A book of openings that cannot be used; the message names the file, the line and the fix."""


@dataclass(frozen=True, slots=True)
class Book:
    """The openings of a tournament, in the order rounds go through them, and where they came from; `more`
    makes new ones once they are used up (`sequel`), else they repeat."""

    lines: tuple[Opening, ...]
    source: str  # for the page: how they were made, or the file they came from
    more: Sequel | None = field(default=None, compare=False, repr=False)

    def for_round(self, rnd: int) -> Opening:
        """Round 1 plays the first opening, round 2 the second, ...; after the last, the sequel's (each
        distinct from all before it), and once there are no more, they repeat."""
        if rnd <= len(self.lines) or (self.more is None and self.lines):
            return self.lines[(rnd - 1) % len(self.lines)]
        if self.more is None:
            return ()
        return self.more.opening(rnd - len(self.lines))

    def expect(self, rnd: int) -> None:
        """Rounds up to `rnd` are likely to be asked for soon: `step` may make their openings ahead."""
        if self.more is not None and rnd > len(self.lines):
            self.more.expect(rnd - len(self.lines))

    def step(self) -> bool:
        """Make one expected opening not made yet (`Sequel.step`); False when there is none to make."""
        return self.more is not None and self.more.step()


class Sequel:
    """Openings after a book's last: an unbounded sequence (while the rules have new positions) drawn from the
    seed as the generated book's are, balanced as they are, each leading to a position no opening before it
    led to, the same for the same seed, rules and book on any machine and on resume. An adaptive run pairs
    two bots again and again; from one opening, deterministic bots would only replay a game already counted.

    Each opening depends on those before it, so they are made in order and kept (`made`); when the plies of
    a generated book yield no new balanced position, longer ones are drawn (up to `MORE_PLIES` more). A
    first use past the book is said once on the "arena" logger; so is the end, after which the openings
    repeat (the pie rule allows only South's first turns: a few), and a repeated game counts once.

    Each costs a few balance searches (~5 ms each on Kalah(4,3), five or more per opening past 4 plies):
    made when a batch asks for them, they held every worker of an adaptive run waiting between batches
    (2-5 s of a minute's run of 6 bots, issue 42). A schedule that knows what its next batch will ask for
    says so (`expect`), and the run makes them one at a time while the batch before it plays (`step`, after
    each game): the same openings in the same order, made earlier."""

    def __init__(self, rules: Rules, seed: int, book: tuple[Opening, ...], what: str | None) -> None:
        self.rules, self.seed, self.what = rules, seed, what  # what: the book's end in words, to say it
        self.book = book
        self.made: list[Opening] = []
        self.seen: set[Position] | None = None  # the positions of every opening so far, once one is made
        self.rng = random.Random(hashlib.blake2b(f"sequel:{seed}:{rules.spec}".encode()).digest())
        self.plies = PLIES
        self.ended = False
        self.start: float | None = None  # the start position's score, once an opening is judged
        self.wanted = 0  # how many are expected to be asked for soon (`expect`)
        self.told: str | None = None  # what has been said: None, "begun" (past the book) or "ended"

    def opening(self, k: int) -> Opening:
        """The k-th opening after the book (k >= 1); once there are no more, the book's and the sequel's
        again, in turn. The first use past a given book, and the first past the last, are said once."""
        if self.told is None and self.what:
            log.warning(f"{self.what}: further rounds start from new openings drawn from seed {self.seed}")
        self.told = self.told or "begun"
        self._make(k)
        if k <= len(self.made):
            return self.made[k - 1]
        if self.told != "ended":
            self.told = "ended"
            log.warning(
                f"the {len(self.book) + len(self.made)} openings are used up: the rules allow no other "
                "balanced one, so openings repeat from here; a game that repeats an earlier one exactly "
                "counts once"
            )
        every = self.book + tuple(self.made)
        return every[(len(self.book) + k - 1) % len(every)] if every else ()

    def expect(self, k: int) -> None:
        """The first `k` openings after the book are likely to be asked for soon."""
        self.wanted = max(self.wanted, k)

    def step(self) -> bool:
        """Make the next expected opening if it is not made yet; False when every expected one is made (or
        there are no more). Nothing is said: that is for when one is used."""
        if self.ended or len(self.made) >= self.wanted:
            return False
        self._make(len(self.made) + 1)
        return True

    def _make(self, k: int) -> None:
        """The first `k` openings made, as far as there are that many."""
        while len(self.made) < k and not self.ended:
            found = self._next()
            if found is None:
                self.ended = True
            else:
                self.made.append(found)

    def _next(self) -> Opening | None:
        allowed = tolerance(self.rules)
        if self.start is None or self.seen is None:
            self.start = score(self.rules, self.rules.initial())
            self.seen = {position_after(self.rules, line) for line in self.book}
        while self.plies <= PLIES + MORE_PLIES:
            for _ in range(ATTEMPTS_PER_OPENING):
                opening = _draw(self.rules, self.rng, self.plies)
                pos = position_after(self.rules, opening)
                if not opening or self.rules.is_over(pos) or pos in self.seen:
                    continue
                self.seen.add(pos)
                if abs(score(self.rules, pos) - self.start) <= allowed:
                    return opening
            if self.rules.pie:  # an opening is South's first turn, whatever its length
                return None
            self.plies += 1
        return None


def sequel(book: Book, rules: Rules, seed: int, given: bool) -> Book:
    """`book` with the openings after its last (`Sequel`); a book of no openings (every game from the start
    position, as asked) stays one. The end of a `given` book (a file's) is said when it comes."""
    if not book.lines:
        return book
    what = f"the book's {len(book.lines)} openings are used up" if given else None
    return Book(book.lines, book.source, Sequel(rules, seed, book.lines, what))


def tolerance(rules: Rules) -> float:
    """How far (in seeds of final margin) an opening may score from the start: 1 seed on small boards,
    3 on Kalah(6,6)."""
    return max(1.0, rules.total_seeds / 24)


def position_after(rules: Rules, opening: Opening) -> Position:
    """The position after `opening`; ValueError (with the rules' reason) if a ply is illegal."""
    pos = rules.initial()
    for ply in opening:
        pos = rules.play(pos, ply)
    return pos


def score(rules: Rules, pos: Position) -> float:
    """The fixed-depth search's final margin for South (the first player), for balance only."""
    found = Solver(rules).search(pos, depth=BALANCE_DEPTH)
    return found.value if pos.to_move == SOUTH else -found.value


def _draw(rules: Rules, rng: random.Random, count: int = PLIES) -> Opening:
    """Random legal plies from the start, SWAP never among them: under the pie rule South's first turn,
    else `count` plies."""
    plies, pos = list[Move](), rules.initial()
    while not rules.is_over(pos):
        if rules.pie and (pos.to_move != SOUTH or pos.turn > 0):
            break
        if not rules.pie and len(plies) == count:
            break
        moves = [m for m in rules.legal_moves(pos) if m != SWAP]
        ply = rng.choice(moves)
        plies.append(ply)
        pos = rules.play(pos, ply)
    return tuple(plies)


def generate(rules: Rules, count: int, seed: int) -> Book:
    """Up to `count` distinct balanced openings, the same for the same rules and seed anywhere. Fewer when
    the rules do not have that many (the pie rule allows only South's first turns)."""
    rng = random.Random(hashlib.blake2b(f"openings:{seed}:{rules.spec}".encode()).digest())
    start = score(rules, rules.initial())
    allowed = tolerance(rules)
    seen: set[Position] = set()
    lines: list[Opening] = []
    for _ in range(count * ATTEMPTS_PER_OPENING):
        if len(lines) == count:
            break
        opening = _draw(rules, rng)
        pos = position_after(rules, opening)
        if not opening or rules.is_over(pos) or pos in seen:
            continue
        seen.add(pos)
        if abs(score(rules, pos) - start) <= allowed:
            lines.append(opening)
    source = (
        f"{len(lines)} generated from seed {seed}: random plies from the start ("
        + ("South's first turn, the pie rule's swap left to North" if rules.pie else f"{PLIES} plies")
        + f"), kept within ±{allowed:.3g} seeds of the start's score by a {BALANCE_DEPTH}-move search"
    )
    return Book(tuple(lines), source)


_PLY = re.compile(r"[0-9]+")


def parse_book(text: str, rules: Rules, name: str = "book") -> tuple[Opening, ...]:
    """The openings of a book file's text, each checked against `rules`; BookError names the line."""
    lines: list[Opening] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        words = [w for w in re.split(r"[\s,]+", raw.split("#", 1)[0]) if w]
        if not words:
            continue
        where = f"{name}, line {number}"
        bad = next((w for w in words if not _PLY.fullmatch(w)), None)
        if bad is not None:
            raise BookError(f"{where}: {bad!r} is not a pit number; an opening is pit numbers, e.g. '3 1 4'")
        opening = tuple(int(w) for w in words)
        try:
            pos = position_after(rules, opening)
        except ValueError as e:
            raise BookError(f"{where}: {' '.join(words)} is not legal under {rules.spec}: {e}") from None
        if rules.is_over(pos):
            raise BookError(
                f"{where}: the game is over after {' '.join(words)}; an opening must leave a game"
            )
        if rules.pie and not pos.can_swap:  # the swap decision is North's next move only after that
            raise BookError(
                f"{where}: under the pie rule an opening is exactly South's first turn (the swap decision "
                f"stays with North's bot); {' '.join(words)} is not"
            )
        lines.append(opening)
    if not lines:
        raise BookError(f"{name}: no openings in it (one per line, pit numbers such as '3 1 4')")
    return tuple(lines)


def load_book(path: Path | str, rules: Rules) -> Book:
    """A book file's openings, in file order; BookError for a file that cannot be read or used."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BookError(f"{path}: cannot read the book of openings ({e})") from None
    lines = parse_book(text, rules, str(path))
    return Book(lines, f"{len(lines)} from the book {path}")


def order(book: Book, seed: int) -> Book:
    """The book with its openings in the seeded order rounds go through them."""

    def key(i: int) -> bytes:
        return hashlib.blake2b(f"{seed}:opening:{i}".encode(), digest_size=8).digest()

    return Book(tuple(book.lines[i] for i in sorted(range(len(book.lines)), key=key)), book.source)
