"""The ladder's TrueSkill kept between its snapshots (ratings.Rated, FOLDER/rated.json), so that a snapshot
rates only the games since the last, and a restarted worker goes on from where the last one stopped.

Only the worker writes it, replaced whole; but a file is read back as a claim, not a fact: one that does not
parse, or does not hold one rating and one history per bot of its field with finite numbers, is ignored, and
the ratings are rated again from the store (`ratings.advance` checks what it holds against the store's games
in any case). The history's points are kept to 1e-4, a tenth of what a chart's pixel shows; the ratings
themselves exactly (JSON's floats read back as written).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from arena.stats.ratings import History, Rated, Skill

RATED = "rated.json"
FORMAT = 1


def read(folder: Path) -> Rated | None:
    """The state the last snapshot kept in `folder`, or None where there is none to trust."""
    try:
        data = json.loads((folder / RATED).read_text(encoding="utf-8"))
        return _parsed(data)
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _parsed(data: dict[str, Any]) -> Rated | None:
    if data["format"] != FORMAT:
        return None
    field = tuple(int(i) for i in data["field"])
    rnd, ordinal, last = data["key"]
    key = (int(rnd), str(ordinal), int(last))
    count, ids, winners = (int(x) for x in data["check"])
    every, target = int(data["every"]), int(data["target"])
    xs = tuple(int(x) for x in data["games"])
    skills = {i: Skill(_number(data["mu"][str(i)]), _number(data["sigma"][str(i)])) for i in field}
    mu = {i: tuple(_number(x) for x in data["points_mu"][str(i)]) for i in field}
    sigma = {i: tuple(_number(x) for x in data["points_sigma"][str(i)]) for i in field}
    if (
        len(set(field)) != len(field)
        or every < 1
        or target < 1
        or not xs
        or xs[0] != 0
        or xs[-1] > count
        or any(x % every for x in xs)
        or any(b <= a for a, b in zip(xs, xs[1:], strict=False))
        or any(len(v) != len(xs) for v in (*mu.values(), *sigma.values()))
        or any(s.sigma <= 0 for s in skills.values())
    ):
        return None
    return Rated(
        tuple(sorted(field)), key, (count, ids, winners), skills, every, History(xs, mu, sigma), target
    )


def _number(value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return float(value)


def text(rated: Rated) -> str:
    """`rated` as the file holds it."""
    h = rated.sampled
    return json.dumps(
        {
            "format": FORMAT,
            "field": list(rated.field),
            "key": list(rated.key),
            "check": list(rated.check),
            "every": rated.every,
            "target": rated.target,
            "mu": {str(i): s.mu for i, s in rated.skills.items()},
            "sigma": {str(i): s.sigma for i, s in rated.skills.items()},
            "games": list(h.games),
            "points_mu": {str(i): [round(x, 4) for x in v] for i, v in h.mu.items()},
            "points_sigma": {str(i): [round(x, 4) for x in v] for i, v in h.sigma.items()},
        }
    )
