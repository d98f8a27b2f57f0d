"""What a student does next, said in one line at the top of their page: the first of these that holds, in
the order a student meets them (no bot yet, a check running, a check failed, no version chosen, no games
yet, forfeits, then the bot they lose most to). After the deadline the deadline's own lines speak instead.
Read from what the page already shows (mine.py), never from anything a student cannot see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.urls import reverse

from arena.server.models import Status, Submission
from arena.server.views.mine import Deadline, Ladder

LOOKED_AT = 10  # of a bot's latest games, those whose forfeits a student is told of


@dataclass(frozen=True, slots=True)
class NextStep:
    """One thing to do, and where on the site it is done ("" where it is on this page)."""

    text: str
    href: str = ""
    link_text: str = ""


def next_step(
    versions: Sequence[Submission], active: Submission | None, ladder: Ladder | None, deadline: Deadline
) -> NextStep | None:
    """The student's next step, or None once the deadline has passed. `versions`: newest first; `ladder`:
    None where the student may not see the ladder (then nothing is said of it)."""
    if deadline.phase != "open":
        return None
    if not versions:
        return NextStep("Upload your bot below: its check runs at once and says what to fix.")
    newest = versions[0]
    if newest.status in (Status.QUEUED, Status.CHECKING):
        return NextStep(f"Version {newest.number} is being checked: its result shows here in a few seconds.")
    if newest.status == Status.FAILED and (active is None or active.number < newest.number):
        return NextStep(
            f"Version {newest.number} failed its check: its checklist says why.",
            reverse("version", args=[newest.pk]),
            f"Open version {newest.number}'s checklist",
        )
    if active is None:
        return NextStep(
            "Choose a version that passed its check to play on the ladder (Play this one, below)."
        )
    if ladder is None:
        return None
    if ladder.standing is None:
        return NextStep(
            f"Version {active.number} waits for its first ladder games: its place shows here then."
        )
    return _on_ladder(ladder)


def _on_ladder(ladder: Ladder) -> NextStep:
    assert ladder.standing is not None
    latest = ladder.games[:LOOKED_AT]
    forfeited = [g for g in latest if g["outcome"] == "lost" and g.get("reason", "normal") != "normal"]
    if forfeited:
        reasons = sorted({str(g["reason"]) for g in forfeited})
        game = forfeited[0]
        return NextStep(
            f"Your bot forfeited {len(forfeited)} of its latest {len(latest)} games ({', '.join(reasons)}): "
            "a forfeit loses the game whatever the board.",
            reverse("game", args=[game["id"]]),
            f"See why in game #{game['id']}",
        )
    worst = _worst(ladder.against)
    if worst is not None:
        opponent, wdl = worst
        lost = next((g for g in ladder.games if g["opponent"] == opponent and g["outcome"] == "lost"), None)
        text = (
            f"You lose most to {opponent} ({wdl}, W-D-L): watch how, then try a scrimmage against it below."
        )
        if lost is None:
            return NextStep(text)
        return NextStep(text, reverse("game", args=[lost["id"]]), f"Watch game #{lost['id']}")
    if ladder.standing.place == "1":
        return NextStep(
            "You lead the ladder and have lost to no bot: try each new version in a scrimmage first."
        )
    return NextStep("No bot beats yours more often than it loses: a stronger version is how you climb.")


def _worst(against: Sequence[tuple[str, str, bool]]) -> tuple[str, str] | None:
    """The opponent the bot fares worst against (losses less wins), if it lost more than it won there."""
    scored: list[tuple[int, str, str]] = []
    for opponent, wdl, _ in against:
        won, _drawn, lost = (int(n) for n in wdl.split("-"))
        scored.append((lost - won, opponent, wdl))
    best = max(scored, default=None, key=lambda s: s[0])
    return (best[1], best[2]) if best is not None and best[0] > 0 else None
