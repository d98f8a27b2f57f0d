"""Ratings from the store (placeholder: replaced by the full TrueSkill leaderboard)."""

from __future__ import annotations

import pandas as pd

from arena.store import Store


def leaderboard(store: Store) -> pd.DataFrame:
    wins: dict[str, float] = {}
    for r in store.records(current_only=True):
        for name in (r["south"], r["north"]):
            wins.setdefault(name, 0.0)
        if r["winner"]:
            wins[r["winner"]] += 1
    return pd.DataFrame({"name": list(wins), "wins": list(wins.values())}).sort_values("wins", ascending=False)


def format_table(board: pd.DataFrame) -> str:
    return board.to_string(index=False)
