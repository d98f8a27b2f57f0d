"""The HTML report (placeholder)."""

from __future__ import annotations

from pathlib import Path

from arena.ratings import leaderboard
from arena.store import Store


def write_report(store: Store, folder: Path) -> Path:
    page = Path(folder) / "index.html"
    page.write_text(leaderboard(store).to_html())
    return page.absolute()
