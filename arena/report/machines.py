"""Per-machine accounting of a cluster tournament: what each machine played, and whether its results agree.

A machine that plays a bot's moves for it, runs bots slower, or starves them of memory gives results that a
replay cannot catch but the other machines contradict. As fishtest does for its workers, each machine gets
a residual: how far its games' scores are from what the same pairings scored on the other machines (a
chi-square over its pairings, as a z). Honest machines scatter around 0; one beyond +3 stands out. A negative
z is closer agreement than chance gives (deterministic bots play a pairing the same way on every machine),
never a fault: only the side of disagreement is flagged.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from arena.match.record import Reason

OUTLIER = 3.0  # z above which a machine's results disagree with the others'
PRIOR = 4.0  # games' worth of the pooled spread in each pairing's own


@dataclass(frozen=True, slots=True)
class MachineTally:
    machine: str  # its name ("" : the machine that ran the tournament)
    games: int
    forfeits: int
    timeouts: int
    residual: float | None  # how far its results are from the others', as a z; None: nothing to compare

    def summary(self) -> str:
        """One line for the page."""
        name = self.machine or "this machine"
        z = (
            "no residual (no pairing played elsewhere)"
            if self.residual is None
            else f"residual {self.residual:+.1f} σ"
        )
        flag = " — its results disagree with the other machines'" if self.disagrees else ""
        return f"{name}: {self.games} games, {self.forfeits} forfeits ({self.timeouts} on time); {z}{flag}"

    @property
    def disagrees(self) -> bool:
        """Only z > OUTLIER: a negative z is agreement closer than chance (identical deterministic copies)."""
        return self.residual is not None and self.residual > OUTLIER


def _score(record: Mapping[str, Any], bot: str) -> float:
    winner = record.get("winner")
    return 0.5 if winner is None else float(winner == bot)


def tally(records: Iterable[Mapping[str, Any]]) -> list[MachineTally]:
    """Each machine's games, forfeits, time losses and residual, from stored records (benched forfeits,
    never played, are left out). A pairing is its south and north bots; a machine's games of a pairing are
    compared with that pairing's games on the other machines (each game's score and its spread there)."""
    played = [r for r in records if r.get("reason") != Reason.BENCHED]
    # (n, sum, sum of squares) of South's scores, per pairing and per (pairing, machine)
    pair: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    mine: dict[tuple[str, tuple[str, str]], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    machines: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in played:
        machine, key, score = str(r.get("worker") or ""), (r["south"], r["north"]), _score(r, r["south"])
        machines[machine].append(r)
        for acc in (pair[key], mine[(machine, key)]):
            acc[0] += 1
            acc[1] += score
            acc[2] += score * score
    # The spread of a pairing's scores, pooled over pairings, and each pairing's own shrunk towards it
    # (a pairing has a few games a round: its own spread alone is too noisy to divide by).
    within = sum(q - t * t / n for n, t, q in pair.values() if n > 1)
    pooled = within / max(1.0, sum(n - 1 for n, _, _ in pair.values() if n > 1))
    out = []
    for machine, games in sorted(machines.items()):
        chi = 0.0  # the machine's pairings' squared deviations from the others', in their variances
        pairings = 0
        for (m, key), (n, total, _) in mine.items():
            if m != machine:
                continue
            count, everywhere, squares = pair[key]
            others = count - n
            if others < 1:
                continue  # nothing elsewhere to compare with
            mean = (everywhere - total) / others
            spread = (squares - everywhere * everywhere / count + PRIOR * pooled) / (count - 1 + PRIOR)
            var = n * spread + n * n * spread / others  # its games' noise, and that of the others' mean
            chi += (total - n * mean) ** 2 / max(var, 1e-6)
            pairings += 1
        # Chi-square with one degree of freedom per pairing, as a z: a machine that moves results either
        # way (the weaker bot winning, or the stronger) stands out, not only one biased to South.
        residual = (chi - pairings) / math.sqrt(2 * pairings) if pairings else None
        forfeits = sum(1 for r in games if r.get("faulty"))
        timeouts = sum(1 for r in games if r.get("faulty") and r.get("reason") == Reason.TIMEOUT)
        out.append(MachineTally(machine, len(games), forfeits, timeouts, residual))
    return out
