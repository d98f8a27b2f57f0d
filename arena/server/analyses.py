"""Game analyses asked for on a game's page: where a game of the ladder or the final was lost, every move
marked by what it cost (arena/game/analysis.py), as `arena analyse` marks it. Only the game's two authors
and the teacher may ask (access.may_analyse); a student at most the class's daily number (the teacher sets
it beside the scrimmages'; 0 turns it off for students). The scrimmages worker does them, after the
scrimmages queued before them, oldest first, under `arena analyse`'s default budget; the analysis is kept
in the tournament's analyses.sqlite beside its store, where the game's page (ladder.analysed) and
`arena analyse` find it: a game is analysed once.
"""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from arena.game.analysis import Budget
from arena.game.rules import IllegalMove
from arena.match.record import GameRecord
from arena.server import queue
from arena.server.classdir import ClassDir
from arena.server.models import Analysing, AnalysisAsked, Classroom, Member
from arena.server.people.access import may_analyse
from arena.server.standings import final, ladder
from arena.store import queries
from arena.store.analyses import AnalysesError, kept_or_analysed
from arena.store.writer import STORE_FILE, Store, StoreError

WHICH = ("ladder", "final")
BUDGET = Budget()  # `arena analyse`'s default: a second a position at most, ten seconds a game


class Refused(ValueError):
    """Why a game's analysis cannot be asked for, in one line for the member."""


def folder(where: ClassDir, which: str) -> Path:
    """The tournament whose games `which` names: the ladder's, or the final's ranking."""
    return final.final_folder(where) if which == "final" else where.ladder


def record(where: ClassDir, which: str, game: int) -> GameRecord | None:
    """Game `game` of the ladder or the final, as stored (None: no such game)."""
    path = folder(where, which) / STORE_FILE
    if which not in WHICH or not path.is_file():
        return None
    try:
        with Store(path, create=False) as store:
            row = queries.game_record(store, game)
    except StoreError:
        return None
    return None if row is None else GameRecord.from_dict(row)


def pending(which: str, game: int) -> AnalysisAsked | None:
    """The request for the game's analysis still waiting or running, if any."""
    waiting = AnalysisAsked.objects.filter(which=which, game=game)
    return waiting.filter(status__in=(Analysing.QUEUED, Analysing.RUNNING)).order_by("id").first()


def last(which: str, game: int) -> AnalysisAsked | None:
    """The latest request for the game's analysis (how it went, for its page)."""
    return AnalysisAsked.objects.filter(which=which, game=game).order_by("-id").first()


def ask(where: ClassDir, classroom: Classroom, member: Member, which: str, game: int) -> AnalysisAsked:
    """Queue the game's analysis; Refused with the reason when it may not be asked for."""
    found = record(where, which, game)
    if found is None:
        raise Refused(f"there is no game {game} in the {which}")
    if not may_analyse(member, found.south, found.north):
        raise Refused(
            f"only the authors of {found.south} and {found.north} and the teacher may ask for its analysis"
        )
    if ladder.analysed(folder(where, which), found) is not None:
        raise Refused(f"game {game} is analysed already: its marks are on its page")
    if not member.teacher and classroom.analyses_per_day == 0:
        raise Refused("the teacher has turned game analyses off for this class")
    with transaction.atomic():
        if pending(which, game) is not None:
            raise Refused(
                f"game {game} is queued for analysis already: its marks appear on its page when done"
            )
        limit = classroom.analyses_per_day
        why = queue.over_the_day(AnalysisAsked, member, limit, "analysis", "analyses")
        if why is not None and not member.teacher:
            raise Refused(why)
        return AnalysisAsked.objects.create(member=member, which=which, game=game)


def claim_next() -> AnalysisAsked | None:
    """The oldest queued request, marked running; None if there is none."""
    return queue.claim_oldest(AnalysisAsked, Analysing.QUEUED, Analysing.RUNNING)


def requeue_interrupted() -> None:
    """Analyses a killed worker was running are run again from the start."""
    queue.requeue(AnalysisAsked, Analysing.RUNNING, Analysing.QUEUED)


def run(where: ClassDir, asked: AnalysisAsked, budget: Budget = BUDGET) -> AnalysisAsked:
    """Analyse the asked-for game and keep the analysis beside its store; the status and a note say how it
    went."""
    found = record(where, asked.which, asked.game)
    if found is None:
        asked.status, asked.note = Analysing.FAILED, "the game is no longer stored"
    else:
        try:
            kept_or_analysed(folder(where, asked.which), found, asked.game, budget)
            asked.status, asked.note = Analysing.DONE, ""
        except (IllegalMove, AnalysesError, OSError) as e:
            text = str(e).replace(str(where.root), "the class")
            asked.status, asked.note = Analysing.FAILED, f"could not be analysed: {text}"
    asked.save(update_fields=["status", "note"])
    return asked
