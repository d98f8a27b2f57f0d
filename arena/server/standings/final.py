"""The final: at the deadline the active versions are frozen (copied once into CLASS_DIR/final/bots), play a
settled tournament of their own (final/ranking), and each meets every reference bot for the teacher's pass
rule (final/references: a gauntlet of the rule's number of games, once from each side per opening). Each is
an arena tournament in its folder, so a final cut off by a crash goes on where it stopped when the worker
starts again; the results the gradebook reads are written last (final/results.json). Where the teacher
ranks remote agents (kgp_ranked.py), the students' agents connected when the final begins play its ranking
too, marked (not the references' gauntlets: the pass rule is the uploaded versions'); an agent is not
frozen, so it must be connected when its games come, or each is lost saying it is not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.api import Tournament
from arena.kgp.server import ranked as kgp_ranked
from arena.match.bots import Bot, load_bot, survey
from arena.server.classdir import REFERENCES, ClassDir
from arena.server.models import Classroom, FinalState, Member
from arena.server.standings import field, ladder
from arena.stats.settle import Rule
from arena.tournament.settings import Settings

RESULTS = "results.json"
AGENTS = "agents.json"  # the remote agents of the final: those connected when it began
Progress = Callable[[int, int, object], None]


def freeze(where: ClassDir, classroom: Classroom) -> field.Wanted:
    """The frozen field, copied once: later calls (a restarted worker) keep the first copy."""
    frozen = where.final / "bots"
    if not field.versions(frozen):
        field.sync(frozen, field.wanted(where, classroom))
    return {name: (what, frozen / name) for name, what in field.versions(frozen).items()}


def play(
    where: ClassDir, classroom: Classroom, settings: Settings, progress: Progress | None = None, **run: Any
) -> dict[str, Any]:
    """Play (or finish) the final and write its results; they are returned too."""
    Classroom.objects.filter(pk=classroom.pk).update(final_state=FinalState.RUNNING)
    frozen = freeze(where, classroom)
    bots = where.final / "bots"
    agents = _agents(where, classroom, on_cluster=run.get("cluster") is not None)
    with Tournament(where.final / "ranking", settings) as cup:
        if len(frozen) + len(agents) >= 2:
            field_ = [*survey(bots).bots, *agents] if agents else bots
            cup.run(field_, None, settle=Rule(), progress=progress, **run)
        standing = ladder.write_snapshot(cup, "the final", True, pages="final")
    games = _against_references(where, classroom, settings, frozen, **run)
    results = {
        "board": standing["board"],
        "references": games,
        "frozen": {k: v[0] for k, v in frozen.items()} | {a.name: kgp_ranked.MARK for a in agents},
    }
    (where.final / RESULTS).write_text(json.dumps(results, indent=1))
    Classroom.objects.filter(pk=classroom.pk).update(final_state=FinalState.DONE)
    return results


def _agents(where: ClassDir, classroom: Classroom, on_cluster: bool) -> list[Bot]:
    """The remote agents that play the final where the teacher ranks them (kgp_ranked.py): those connected
    when it began, kept, so that a final cut off plays on with the same. An agent is not frozen: it must
    be connected when its games come, or each is lost as a crash saying it is not."""
    if not classroom.kgp_ranked or on_cluster or not kgp_ranked.port_on():
        return []
    kept = where.final / AGENTS
    if not kept.exists():
        kept.write_text(json.dumps(kgp_ranked.connected(where)))
    return kgp_ranked.bots(where, json.loads(kept.read_text()), classroom.kgp_no_move)


def _against_references(
    where: ClassDir, classroom: Classroom, settings: Settings, frozen: field.Wanted, **run: Any
) -> dict[str, dict[str, list[int]]]:
    """Each frozen student bot against each reference bot: bot -> reference -> [wins, draws, losses]."""
    refs = {name: load_bot(where.references / f"{name}.py") for name in REFERENCES}
    rule_ref = classroom.rule_reference
    rounds = max(1, math.ceil(classroom.rule_games / 2))
    out: dict[str, dict[str, list[int]]] = {}
    students = [name for name, (what, _) in frozen.items() if what != "reference"]
    with Tournament(where.final / "references", settings) as cup:
        for name in students:
            bot = load_bot(where.final / "bots" / name)
            field_ = [bot, *(r for n, r in refs.items() if n in (rule_ref, *REFERENCES))]
            cup.run(field_, rounds, gauntlet=name, **run)
        ladder.write_games(cup)  # each student's games against the references, for their page
        for record in cup.records():
            for me, other in ((record["south"], record["north"]), (record["north"], record["south"])):
                if me in students and other in refs:
                    tally = out.setdefault(me, {}).setdefault(other, [0, 0, 0])
                    winner = record["winner"]
                    tally[0 if winner == me else 1 if winner is None else 2] += 1
    return out


def results(where: ClassDir) -> dict[str, Any] | None:
    """The final's results, once it has finished (None before)."""
    try:
        data: dict[str, Any] = json.loads((where.final / RESULTS).read_text())
        return data
    except (OSError, ValueError):
        return None


def version_of(what: str) -> tuple[int | None, int | None]:
    """(version number, submission id) from a field entry's 'v3 #17'."""
    try:
        number, ident = what.split()
        return int(number.removeprefix("v")), int(ident.removeprefix("#"))
    except ValueError:
        return None, None


def members_by_slug() -> dict[str, Member]:
    return {m.slug: m for m in Member.objects.select_related("user")}


def final_folder(where: ClassDir) -> Path:
    return where.final / "ranking"
