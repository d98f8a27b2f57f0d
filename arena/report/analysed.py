"""A game's analysis (arena/game/analysis.py) as `arena analyse` prints it: a line a ply, then the turning
point, each move credited to the bot that made it (after a SWAP a side has changed hands)."""

from __future__ import annotations

from arena.game.analysis import Analysis, MoveCost
from arena.game.rules import SIDE_NAMES, SWAP
from arena.match.record import GameRecord


def mover(record: GameRecord, ply: int, side: int) -> str:
    """The bot that made ply `ply` (1-based) from `side`: the side's first owner until a SWAP was played
    before it, the other bot after."""
    plies = record.plies
    swapped = SWAP in plies[: ply - 1]
    first = (record.south, record.north)[side]
    other = record.north if first == record.south else record.south
    return other if swapped else first


def analysis_text(record: GameRecord, analysis: Analysis, title: str, kept: bool) -> str:
    """Every ply with the value before it, the best move and the played move's mark; the turning point."""
    exact = analysis.exact_positions()
    b = analysis.budget
    how = f"analysed in {analysis.seconds:.1f} s"
    if kept:
        how = f"analysed before, {b.position:g} s a position and {b.game:g} s a game (--again: anew)"
    total = len(analysis.values)
    rest = "" if exact == total else ", the rest estimated by a search cut off at the depth shown"
    lines = [
        title,
        f"{how}: {exact} of {total} positions exact{rest} (a value is the final margin in seeds for the "
        "player to move, under best play by both)",
    ]
    width = max([len(record.south), len(record.north), 3])
    for m in analysis.moves:
        bot = mover(record, m.ply, m.side)
        value = analysis.values[m.ply - 1].words()
        best = "-" if m.best_move is None else str(m.best_move)
        lines.append(
            f"{m.label():>10}  {SIDE_NAMES[m.side]:5} {bot:{width}} played {str(m.move):>4}  best {best:>4}  "
            f"value {value:28} {m.words()}"
        )

    lines.append(turning_words(record, analysis))
    return "\n".join(lines)


def turning_words(record: GameRecord, analysis: Analysis) -> str:
    """The turning point in a sentence, naming the bot that made the move."""

    def who(m: MoveCost) -> str:
        return mover(record, m.ply, m.side)

    return analysis.turning_words(who)
