"""Arena: Kalah bot tournaments. The library API (arena/api.py) under the `arena` command:

    from arena import Tournament

    with Tournament("reports/demo", move_ms=200) as cup:
        cup.run("bots", rounds=2)
        print(cup.leaderboard())
        print("page:", cup.report())

Names are imported on first use, so `import arena` (and `arena --help`) stays quick.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Tournament": "arena.api",
    "Match": "arena.api",
    "Settings": "arena.tournament.settings",
    "TimeControl": "arena.match.clock",
    "RunOptions": "arena.tournament.settings",
    "GameRecord": "arena.match.record",
    "Bot": "arena.match.bots",
    "BotError": "arena.match.bots",
    "discover": "arena.match.bots",
    "load_bot": "arena.match.bots",
    "find_bot": "arena.match.bots",
    "parse_rules": "arena.game.rules",
    "RulesError": "arena.game.rules",
    "StoreError": "arena.store.writer",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'arena' has no attribute {name!r}")
