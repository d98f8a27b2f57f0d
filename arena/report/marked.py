"""The analysed games (`arena analyse`, kept in analyses.sqlite beside the store) as the replay viewer's data
file, FOLDER/games/analyses.js: for each analysed game, the value of every position for the bot that
began south (the evaluation graph), each ply's mark and best move, and the turning point in words.

A kept analysis is shown only while it analyses the stored game of that id (the same rules and plies): a
store rebuilt under the same name never shows another game's marks. Written by the report, and by `arena
analyse` after a stored game's analysis, so the page shows it on its next load.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arena.game.analysis import Analysis, positions
from arena.game.rules import SWAP, parse_rules
from arena.match.record import GameRecord
from arena.report.analysed import turning_words
from arena.store import queries
from arena.store.analyses import game_key, read_only
from arena.store.writer import Store

FILE = "analyses.js"


def encode(record: GameRecord, analysis: Analysis) -> dict[str, Any]:
    """One game's analysis for the page. `g`: each position's value for the bot that began south (its
    final margin under best play from there), `x`: 1 where exact, `d`: the depth of an estimate, `b`: the
    best move there; `m`: each ply's [mark, seeds lost, words]; `t`: the turning point's ply index (-1:
    none) and sentence."""
    rules = parse_rules(record.rules)
    game = positions(rules, record.plies)
    first: list[float] = []
    for k, (pos, value) in enumerate(zip(game, analysis.values, strict=True)):
        swapped = SWAP in record.plies[:k]
        mine = (pos.to_move == 0) != swapped  # the bot that began south is to move
        first.append(round(value.seeds if mine else -value.seeds, 2))
    turn = analysis.turning_point()

    return {
        "g": first,
        "x": [int(v.exact) for v in analysis.values],
        "d": [v.depth for v in analysis.values],
        "b": ["" if v.best is None else str(v.best) for v in analysis.values],
        "m": [[m.mark.name, round(m.cost, 1), m.words()] for m in analysis.moves],
        "t": [-1 if turn is None else turn.ply - 1, turning_words(record, analysis)],
    }


def kept_analyses(store: Store) -> list[tuple[int, GameRecord, Analysis]] | None:
    """The store's games (id, record) with the analysis kept beside it, of that very game (its rules and
    plies); None when no analyses are kept beside the store."""
    kept = read_only(store.path.parent)
    if kept is None:
        return None
    out = []
    with kept:
        for game in kept.games():
            row = queries.game_record(store, game)
            if row is None:
                continue
            record = GameRecord.from_dict(row)
            analysis = kept.get(game_key(parse_rules(record.rules).spec, record.plies))
            if analysis is not None:
                out.append((game, record, analysis))
    return out


def write_analyses(store: Store, folder: Path) -> int:
    """Write FOLDER/games/analyses.js from the analyses kept beside the store; returns how many games it
    holds (none kept: no file is written, and the page says a game is not analysed)."""
    found = kept_analyses(store)
    if found is None:
        return 0
    data: dict[str, Any] = {str(game): encode(record, analysis) for game, record, analysis in found}
    out = Path(folder) / "games"
    out.mkdir(parents=True, exist_ok=True)
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    part = out / f".{FILE}.{os.getpid()}.part"
    part.write_text(f"arenaAnalyses({body});\n", encoding="utf-8")
    part.replace(out / FILE)
    return len(data)
