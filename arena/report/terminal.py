"""The board in a terminal: `arena replay` and `arena play --show` draw with these, from replayed plies.

Drawn as protocol.md draws it: North's row on top numbered from North's own left (so n..1 as South looks),
South's row below numbered 1..n, North's store on the left, South's on the right. Each side is labelled
with the bot that owns it at that moment, so after a SWAP the names change sides and the rows do not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from arena.game.rules import SIDE_NAMES, SOUTH, SWAP, Move, Position, Rules
from arena.match.printable import printable
from arena.match.record import GameRecord, Reason
from arena.report.replay import Ply, Replay, marks, replay
from arena.store import queries
from arena.store.writer import Store

if TYPE_CHECKING:
    import pandas as pd

    from arena.stats.settle import Verdict


def game_line(number: int, r: GameRecord) -> str:
    """One human line per game, as `arena play` prints them."""
    head = f"game {number}: {r.south} (south) vs {r.north} (north)"
    head += f", opening {' '.join(map(str, r.opening))}: " if r.opening else ": "
    if r.faulty:
        return head + f"{r.winner} wins, {r.faulty} forfeits ({r.reason}: {printable(r.told())})"
    score = f"{r.south_store}-{r.north_store}"
    if r.swapped:
        score += f", {r.north} swapped to south"
    if r.winner is None:
        return head + f"draw {score}"
    return head + f"{r.winner} wins {score}" + (" (early finish)" if r.reason == Reason.EARLY else "")


def board(pos: Position, south: str, north: str, ply: Ply | None = None, bottom: int = SOUTH) -> str:
    """The position with its owners; `ply` (the one that led here) marks the pit it sowed with ( ) and the
    holes a capture emptied with x. `bottom` is the side drawn at the bottom, as its player sees the board
    (a person playing North): its row numbered 1..n from the left, its store on the right."""
    n = pos.pits
    top = 1 - bottom
    width = max(2, *(len(str(v)) for v in pos.board))
    sown = -1
    if ply is not None and isinstance(ply.move, int):
        sown = ply.mover * (n + 1) + ply.move - 1

    def hole(k: int) -> str:
        text = str(pos.board[k]).rjust(width)
        if k == sown:
            return f"({text})"
        if ply is not None and k in ply.capture_pits:
            return f"x{text} "
        return f" {text} "

    cell = width + 2
    rule = "+" + "+".join("-" * cell for _ in range(n + 2)) + "+"
    top_row = "|" + " " * cell + "|" + "|".join(hole(top * (n + 1) + k) for k in reversed(range(n)))
    bottom_row = "|" + " " * cell + "|" + "|".join(hole(bottom * (n + 1) + k) for k in range(n))
    stores = (
        "|" + str(pos.store(top)).center(cell) + "+" + "+".join("-" * cell for _ in range(n)) + "+"
        + str(pos.store(bottom)).center(cell) + "|"
    )  # fmt: skip
    mover = None if pos.ended else pos.to_move

    def label(side: int) -> str:
        to_move = "  <- to move" if side == mover else ""
        return " " * (cell + 1) + f"{SIDE_NAMES[side].title()}: {(south, north)[side]}{to_move}"

    return "\n".join(
        [
            label(top),
            " " * (cell + 1) + "".join(str(k).center(cell + 1) for k in range(n, 0, -1)),
            rule,
            top_row + "|" + " " * cell + "|",
            stores,
            bottom_row + "|" + " " * cell + "|",
            rule,
            " " * (cell + 1) + "".join(str(k).center(cell + 1) for k in range(1, n + 1)),
            label(bottom),
        ]
    )


def what(ply: Ply, mover_name: str) -> str:
    """One line saying what a ply did: 'south (greedy) plays 3: extra turn'."""
    side = SIDE_NAMES[ply.mover]
    if ply.move == SWAP:
        return f"{side} ({mover_name}) plays SWAP: {mover_name} takes over south, its opponent plays north"
    said = notes(ply)
    return f"{side} ({mover_name}) plays {ply.move}" + (": " + ", ".join(said) if said else "")


def notes(ply: Ply) -> list[str]:
    """What a sowing did beyond sowing: 'captures 4', 'extra turn', 'game over' (empty for a quiet one)."""
    notes = []
    if ply.opening:
        notes.append("opening")
    if ply.relay:
        notes.append("relay sowing")
    if ply.captured > 0:
        notes.append(f"captures {ply.captured}")
    elif ply.captured < 0 or (ply.capture_pits and not ply.captured):
        notes.append("captures")
    if ply.extra:
        notes.append("extra turn")
    if ply.ended:
        notes.append("game over")
    return notes


def number(k: int, opening: int) -> str:
    """Ply k's label (0-based), as the page numbers it: the bots' moves 1, 2, 3 ..., the opening's apart."""
    return f"opening {k + 1}" if k < opening else str(k + 1 - opening)


def replay_text(game: Replay, title: str, result: str) -> str:
    """A whole game, move by move with the board after each, then its result and any fault."""
    south, north = game.owners(0)
    out = [
        title,
        "",
        "start" + (f" (then {game.opening} opening ply{'s' * (game.opening != 1)})" if game.opening else ""),
        "",
    ]
    out += [board(game.start, south, north), ""]
    for k, ply in enumerate(game.plies):
        before = game.owners(k)
        after = game.owners(k + 1)
        pos = game.position(k + 1)
        assert pos is not None
        out.append(f"{number(k, game.opening)}. " + what(ply, before[ply.mover]))
        out += [board(pos, *after, ply=ply), ""]
    if game.error:
        out.append(f"(the record stops replaying here: {game.error})")
    out.append(result)
    if game.fault:
        f = game.fault
        at = f"move {f.plies - game.opening}" if f.plies > game.opening else f"opening ply {f.plies}"
        out += ["", f"{f.bot} forfeited ({f.reason}) after {at}: {f.detail}"]
        if f.stderr:
            out += ["its stderr (tail):", *("    " + line for line in f.stderr.rstrip("\n").splitlines())]
        out += ["reproduce it: feed the bot the referee's lines of this game", f"    {f.command}"]
        if f.bank_note:
            out.append(f"    ({f.bank_note})")
    return "\n".join(out)


class Watch:
    """Draws a game as it is played (`arena play --show`): the board after every move with what the move
    did, each side labelled by the bot that owns it now, so after a SWAP the labels change sides."""

    def __init__(self, rules: Rules, south: str, north: str, echo: Callable[[str], None]) -> None:
        self.rules = rules
        self.owners = [south, north]
        self.echo = echo
        self.pos = rules.initial()
        self.plies = 0

    def start(self, pos: Position | None = None) -> None:
        self.pos = pos or self.rules.initial()
        self.echo(board(self.pos, self.owners[0], self.owners[1]) + "\n")

    def __call__(self, pos: Position, move: Move, player: object = None) -> None:
        """The referee's on_move: `pos` is the position after `move`."""
        ply = marks(self.rules, self.pos, move, pos)
        self.plies += 1
        line = f"{self.plies}. " + what(ply, self.owners[ply.mover])
        if ply.swap:
            self.owners.reverse()
        self.pos = pos
        self.echo(line + "\n" + board(pos, self.owners[0], self.owners[1], ply=ply) + "\n")


def stored_game(store: Store, game: int) -> str | None:
    """`arena replay`: a stored game as text, or None if the store has no game `game`."""
    row = queries.game_record(store, game)
    if row is None:
        return None
    record = GameRecord.from_dict(row)
    settings = store.settings()
    places = queries.bot_places(store)
    where = {record.south: places[int(row["south_id"])], record.north: places[int(row["north_id"])]}
    played = replay(record, settings.clock if settings else None, None, where)
    title = (
        f"game {game}, round {row['round']}: {record.south} (south) vs {record.north} (north), "
        f"{record.rules}, finished {row['finished_at']}"
    )
    if record.faulty:
        result = f"{record.winner} wins: {record.faulty} forfeits ({record.reason})"
    elif record.winner is None:
        result = f"draw {record.south_store}-{record.north_store}"
    else:
        result = f"{record.winner} wins {record.south_store}-{record.north_store} (south-north stores)"
    return replay_text(played, title, result)


@dataclass(slots=True)
class _Tally:
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    forfeits: int = 0

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0


class Scores:
    """The score of every bot over the games of this run so far, as they finish (cutechess and fastchess
    print theirs so): a compact table for a terminal, or one line for a log. Plain counts: the ratings and
    shared places come with the leaderboard at the end."""

    def __init__(self) -> None:
        self.bots: dict[str, _Tally] = {}
        self.games = 0

    def add(self, record: GameRecord) -> None:
        self.games += 1
        for bot in (record.south, record.north):
            t = self.bots.setdefault(bot, _Tally())
            t.games += 1
            if record.winner is None:
                t.draws += 1
            elif record.winner == bot:
                t.wins += 1
            else:
                t.losses += 1
                t.forfeits += record.faulty == bot

    def _order(self, ranked: tuple[tuple[str, str], ...] = ()) -> list[tuple[str, _Tally]]:
        if ranked:  # the Elo's order (an adaptive run's): its bots met different opponents, so no score's
            names = [name for _, name in ranked]
            return [(name, self.bots.get(name, _Tally())) for name in names] + [
                kv for kv in sorted(self.bots.items()) if kv[0] not in names
            ]
        return sorted(self.bots.items(), key=lambda kv: (-kv[1].score, -kv[1].games, kv[0]))

    def table(self, rows: int = 10, ranked: tuple[tuple[str, str], ...] = ()) -> list[str]:
        """The best `rows` bots (and how many more), best first: score, W-D-L, games, forfeits; in
        `ranked`'s order (place, bot) with its places first when given."""
        order = self._order(ranked)
        shown = order[:rows]
        places = dict((name, place) for place, name in ranked)
        pw = max((len(p) for p in places.values()), default=0)
        lead = (lambda name: f"{places.get(name, ''):>{max(pw, 5)}}  ") if ranked else (lambda name: "")
        width = max((len(name) for name, _ in shown), default=3)
        head = f"{'place':>{max(pw, 5)}}  " if ranked else ""
        lines = [f"{head}{'bot':<{width}}  {'score':>6}  {'W-D-L':>11}  {'games':>5}  forfeits"]
        for name, t in shown:
            wdl = f"{t.wins}-{t.draws}-{t.losses}"
            score = f"{100 * t.score:5.1f}%"
            lines.append(
                f"{lead(name)}{name:<{width}}  {score}  {wdl:>11}  {t.games:>5}  {t.forfeits or ''}".rstrip()
            )
        if len(order) > rows:
            lines.append(f"... and {len(order) - rows} more")
        return lines

    def line(self, rows: int = 3, ranked: tuple[tuple[str, str], ...] = ()) -> str:
        """'greedy 75.0% (8), random 40.0% (8), ...': the leaders, for a log line; with `ranked` (place,
        bot) in the Elo's order: 'by Elo: 1 greedy (8 games), 2-3 random (8 games), ...'."""
        if ranked:
            games = {name: t.games for name, t in self.bots.items()}
            text = ", ".join(
                f"{place} {name} ({games.get(name, 0)} game{'' if games.get(name, 0) == 1 else 's'})"
                for place, name in ranked[:rows]
            )
            return "by Elo: " + text + (", ..." if len(ranked) > rows else "")
        order = self._order()
        text = ", ".join(f"{name} {100 * t.score:.1f}% ({t.games})" for name, t in order[:rows])
        return text + (", ..." if len(order) > rows else "")


# --- the leaderboard --------------------------------------------------------------------------------


def _num(x: float, fmt: str) -> str:
    return "-" if x != x else format(x, fmt)  # NaN: no games, no moves


def _forfeits(count: int, reasons: str) -> str:
    """'0', '3 crash' or '3 (2 crash, 1 timeout)'."""
    if not count:
        return "0"
    return reasons if "," not in reasons else f"{count} ({reasons})"


def format_table(board: pd.DataFrame) -> str:
    """The leaderboard for a terminal: compact columns, shared places as '3-5', the order's rule below."""
    # pandas: not for `arena play --show`, which draws boards
    from arena.stats.ratings import ORDER_RULE, elo_text

    if board.empty:
        return "no bots in the current field yet"
    # The Elo decides the order, so it leads; TrueSkill (mu - 3σ: a strength the bot almost surely has) beside
    heads = ["place", "bot", "BT Elo ±", "mu-3σ", "mu", "σ", "games", "W-D-L", "score", "margin", "forfeits"]
    heads += ["ms/move"]
    left = {1, 10}  # bot and forfeits read best left-aligned
    # Where some game repeated an earlier one exactly, the games column says how many were distinct: those
    # are what W-D-L, the score and the Elo count
    repeated = bool((board["distinct"] != board["games"]).any())
    rows = [heads]
    for r in board.itertuples(index=False):
        rows.append(
            [
                str(r.place),
                r.bot,
                elo_text(r.bt_elo, r.bt_pm, r.score_pct, none="-"),
                f"{r.conservative:.1f}",
                f"{r.mu:.1f}",
                f"{r.sigma:.2f}",
                f"{r.games} ({r.distinct} distinct)" if repeated else str(r.games),
                f"{r.wins}-{r.draws}-{r.losses}",
                _num(r.score_pct, ".1f") + ("%" if r.games else ""),
                _num(r.margin, "+.1f"),
                _forfeits(r.forfeits, r.forfeit_reasons),
                _num(r.ms_per_move, ".1f"),
            ]
        )
    widths = [max(len(row[k]) for row in rows) for k in range(len(heads))]
    lines = [
        "  ".join(
            c.ljust(w) if k in left else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines = [line.rstrip() for line in lines]
    lines.append(ORDER_RULE)
    if repeated:
        lines.append(
            "Some games repeated an earlier game exactly (same bots, sides, opening, moves and end): W-D-L, "
            "the score, the Elo and TrueSkill count each distinct game once."
        )
    for r in board[board["unranked"] != ""].itertuples(index=False):
        lines.append(f"not ranked: {r.bot}: {r.unranked}")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    """'40 s', '12 min', '3.5 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """Progress and the scores so far on `out` (stderr) while games finish, with the real games/s: on a
    terminal a compact table redrawn in place every few seconds, else (a log file, CI) a plain line every few
    seconds with the leaders; nothing when quiet. What bots wrote (their names) is shown escaped. An
    `open_ended` run (adaptive: it plays until the ranking is settled) has no last game to count down to:
    it says the games played and the batch in play instead."""

    EVERY = 5.0  # seconds between plain lines
    REDRAW = 2.0  # seconds between redraws of the table on a terminal
    PACE = (8, 10.0)  # games and seconds after which a run of rounds says how long it will take
    LONG = 600.0  # seconds: a run this long is told what a settled run would cost instead

    def __init__(self, quiet: bool, out: TextIO, open_ended: bool = False, bots: int = 0) -> None:
        self.quiet = quiet
        self.bots = bots  # a run of rounds of the whole field: its bots, to say what a settled run costs
        self.open_ended = open_ended
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self.said = self.started
        self.done = 0
        self.drawn = 0  # lines of the last table drawn, to draw over
        self.scores = Scores()
        self.left = ""  # an open-ended run: what is still open, told after each batch (the pairs, how sure)
        self.paced = open_ended  # a run of rounds says once, by its first games' pace, how long it will take
        self.ranked: tuple[tuple[str, str], ...] = ()  # an open-ended run: (place, bot) in the Elo's order

    def settling(self, verdict: Verdict) -> None:
        """An open-ended run's batch is complete: what is still open, and the order so far (the Elo's, as the
        leaderboard's: its bots met different opponents, so their scores do not rank them)."""
        self.left = verdict.describe_left(3)
        self.ranked = tuple((verdict.places[k], verdict.names[i]) for k, i in enumerate(verdict.order))

    def rate(self, _: object = None) -> str:
        return f"{self.done / max(time.monotonic() - self.started, 1e-9):.1f} games/s"

    def __call__(self, done: int, total: int, record: GameRecord | None) -> None:
        self.done = done
        if record is not None:
            self.scores.add(record)
        if self.quiet or total == 0:
            return
        now = time.monotonic()
        if self.open_ended:
            count = f"{done} games, {self.rate()}; {self.left or 'playing until the ranking is settled'}"
        else:
            left = f"about {(total - done) * (now - self.started) / done:.0f} s left" if done else ""
            count = f"{done} of {total} games, {self.rate()}, {left}"
        due = now - self.said >= (self.REDRAW if self.tty else self.EVERY)
        if not self.paced and done >= self.PACE[0] and now - self.started >= self.PACE[1] and done < total:
            self.paced = True
            self._pace(done, total, now - self.started)
        if done == 0:
            self._say(
                "arena: playing until the ranking is settled"
                if self.open_ended
                else f"arena: playing {total} games"
            )
        elif due or (done == total and not self.open_ended):  # an adaptive run's batches end often
            self.said = now
            if self.tty:
                self._draw([*self.scores.table(ranked=self.ranked), count])
            else:
                ranks = self.scores.games and (self.ranked or not self.open_ended)  # no score's order then
                leading = f"; leading: {self.scores.line(ranked=self.ranked)}" if ranks else ""
                self._say(f"arena: {count}{leading}")

    def _draw(self, lines: list[str]) -> None:
        """Over the last table: the cursor goes up to its first line and clears to the end of the screen
        (arena's own escapes; the table's text, bots' names, shown as echo shows it)."""
        up = f"\x1b[{self.drawn}F\x1b[J" if self.drawn else ""
        self.out.write(up + printable("\n".join(lines), lines=True) + "\n")
        self.out.flush()
        self.drawn = len(lines)

    def _pace(self, done: int, total: int, took: float) -> None:
        """How long the whole run takes at its first games' pace, and for a long one what settles sooner."""
        whole = took * total / done
        line = (
            f"arena: at the pace of the first {done} games, the {total:,} games take about {_duration(whole)}"
        )
        if whole >= self.LONG and self.bots >= 2:
            from arena.stats.settle import SETTLED_SHARE, settled_games  # numpy: not for `arena play`

            settled = settled_games(self.bots)
            measured = " and ".join(f"{share:.1%} at {n} bots" for n, share in SETTLED_SHARE)
            line += (
                f"; without --rounds, arena run stops once the ranking is settled: about {settled:,} games, "
                f"{_duration(took * settled / done)} at this pace (rough: settled runs in simulation played "
                f"a share of a 100-round round robin's games of {measured})"
            )
        self._say(line)
        self.drawn = 0  # a table drawn before stays above this line

    def _say(self, line: str) -> None:
        self.out.write(printable(line) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.drawn = 0
