"""When a ranking is settled, in words a teacher can check.

The ranking is the posterior's order (`posterior.Posterior.order`). What a teacher needs of it: no bot
stands below a neighbour that is more than `resolution` Elo weaker. Each pair of neighbours has a risk,
the posterior probability that the lower is more than `resolution` better (the pair the wrong way round
beyond the resolution), and the ranking is settled when those risks sum to at most (1 - `confidence`) / 2:
then, by the union bound, the whole ranking is right to within the resolution at `confidence`, not just
each pair, with a margin for stopping at the first batch that passes (see LOOKS). A settled pair is
- ordered: the upper one is the better at `confidence` (P(upper > lower) >= 0.95 by default), or
- shared: its order is not sure, but it cannot be wrong by more than the resolution: the two share a place,
  shown as "3-5";
and while the risks sum to more, the riskiest pairs are open: more games are needed there.

Why a sum and not a test per pair: a class of 30 has 29 neighbour pairs, and in simulation
(benchmarks/schedule_efficiency.py, 40 seeds) rules that settle each pair on its own (ordered at 95%, or
its difference measured to ±30 Elo at 95%, or at 90%) left a neighbour pair more than 30 Elo the wrong way
round in 7.5% and 30% of the runs they called settled, where the rule promises at most 5%.

`top` settles only the first `top` places: the neighbours among them and the last of them against every bot
below; `references` (bot names) settle every bot against each reference bot, so a big class gets pass/fail
against `greedy` without ordering everyone: given alone (no `top`), they are all the rule settles, and each
bot's verdict against each reference (`Verdict.against`) is better, worse, or within the resolution: within on
both sides at the confidence (P(|difference| <= resolution) >= confidence), not merely not reversed, and
open until one of the three holds.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from arena.stats.posterior import ELO_PER_NAT, Posterior, normal_cdf
from arena.tournament.settings import CONFIDENCE, RESOLUTION

# The risks must sum to half of 1 - confidence. The rule is judged after every batch and a run stops at the
# first that passes (optional stopping): that is harmless when the risks are the posterior's own
# probabilities under a prior that fits the field (averaged over the runs that stop, the chance of a reversed
# pair is then what the rule stated), and the field's prior (posterior.posterior) brought it close, but not
# close enough to take no margin. Measured (schedule_efficiency.py, Elo SD 250, 6% draws), the share of the
# runs called settled at 95% with a neighbour pair the wrong way round by more than 30 Elo, and what the rule
# stated at the stop:
#   30 bots, flat fit:    LOOKS 1: 14/200 = 7.0% (stated 4.8%); 2: 3/200 = 1.5%; 3: 0/40
#   30 bots, field prior: LOOKS 1: 8/200 = 4.0% (stated 4.8%); 2: 2/140 = 1.4% (stated 2.4%); 3: 0/40
#   100 bots, field prior: LOOKS 1: 4/40 = 10.0% (stated 4.9%); 2: 2/40 = 5.0% (stated 2.5%); 3: 0/40
# Games until settled, as a share of a 100-round round robin's, at LOOKS 1, 2, 3: 30 bots 11.9%, 13.5%,
# 14.7%; 100 bots 7.7%, 8.6%, 9.2% (top 3 exact 65%, 80%, 78%; the round robin's 85%).
LOOKS = 2.0
# The shares above at LOOKS 2 (the rule's) by field size: a settled run's cost, told to a long run of rounds
SETTLED_SHARE = ((30, 0.135), (100, 0.086))


def settled_games(bots: int) -> int:
    """A rough count of the games an adaptive run of `bots` plays until settled: the share of a 100-round
    round robin's games measured in simulation (SETTLED_SHARE), between its field sizes by the log of the
    count, held beyond them. Rough: a real class is not the simulation's normal field."""
    (n0, s0), (n1, s1) = SETTLED_SHARE
    t = min(max((math.log(max(bots, 2)) - math.log(n0)) / (math.log(n1) - math.log(n0)), 0.0), 1.0)
    return round((s0 + t * (s1 - s0)) * 100 * bots * (bots - 1))


class Status(enum.Enum):
    ORDERED = "ordered"
    SHARED = "shared"
    OPEN = "open"


@dataclass(frozen=True, slots=True)
class Against:
    """One bot's verdict against one reference bot: "better", "worse", "within" (the resolution: the
    order not sure, but the difference within the resolution on both sides at the rule's confidence) or
    "open" (more games needed), and P(the bot is the better)."""

    word: str
    p: float

    def describe(self, resolution: float) -> str:
        if self.word == "within":
            return f"within {resolution:g} Elo"
        if self.word == "open":
            return f"open ({self.p:.0%} sure it is better)"
        return self.word


@dataclass(frozen=True, slots=True)
class Rule:
    """What 'settled' means for a run: stated on the terminal and the page as `describe()` says it."""

    confidence: float = CONFIDENCE
    resolution: float = RESOLUTION
    top: int | None = None  # settle only the first `top` places
    references: tuple[str, ...] = ()  # and every bot against these bots

    def __post_init__(self) -> None:
        if not (isinstance(self.confidence, float | int) and 0.5 < self.confidence < 1.0):
            raise ValueError(
                f"confidence must be between 0.5 and 1 (for instance 0.95), not {self.confidence}"
            )
        if not (isinstance(self.resolution, float | int) and 0.0 <= self.resolution < math.inf):
            raise ValueError(f"resolution must be 0 Elo or more (for instance 30), not {self.resolution}")
        if self.top is not None and self.top < 1:
            raise ValueError(f"settle top K needs K of 1 or more, not {self.top}")

    def to_dict(self) -> dict[str, Any]:
        """As stored with a tournament (`Store.set_stopping`)."""
        return {**dataclasses.asdict(self), "references": list(self.references)}

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> Rule:
        """The rule stored with a tournament; the default one when none is."""
        if not stored:
            return cls()
        return cls(
            float(stored["confidence"]),
            float(stored["resolution"]),
            None if stored.get("top") is None else int(stored["top"]),
            tuple(str(r) for r in stored.get("references", ())),
        )

    @property
    def orders(self) -> bool:
        """Whether the rule settles an order (all of it, or the first `top` places), not only references."""
        return self.top is not None or not self.references

    def describe(self) -> str:
        """The rule in one sentence."""
        c, r = f"{self.confidence * 100:g}%", f"{self.resolution:g}"
        if not self.orders:
            refs = ", ".join(self.references)
            return (
                f"Settled when, with {c} confidence, every bot is placed against {refs}: better, worse, or "
                f"within {r} Elo; the order among the other bots is not settled."
            )
        where = "" if self.top is None else f"among the first {self.top} places (and against any bot below), "
        sentence = (
            f"Settled when, with {c} confidence, {where}no bot stands below a neighbour that is more than "
            f"{r} Elo weaker; neighbours whose order is not {c} sure share a place"
        )
        if self.references:
            sentence += f"; every bot is placed likewise against {', '.join(self.references)}"
        return sentence + "."


@dataclass(frozen=True, slots=True)
class Claim:
    """One pair the rule needs settled: `upper` stands above `lower` in the ranking (bot indices)."""

    upper: int
    lower: int
    status: Status
    p: float  # P(upper is the better)
    risk: float  # P(lower is more than the resolution better): the pair the wrong way round
    reference: bool  # against a reference bot rather than between neighbours
    margin: float = 0.0  # the posterior's mean of upper - lower, Elo
    sd: float = math.inf  # and its standard deviation
    per_game: float = 0.0  # what one more game between the two adds to 1 / sd², in 1 / Elo²
    within: float = 0.0  # P(|upper - lower| <= the resolution): what "within" a reference must reach
    two_sided: bool = False  # read as better, worse or within (a reference bot's pair), not a shared place

    def games_needed(self, risk: float, resolution: float, confidence: float | None = None) -> float:
        """Rough games between the two until this pair's risk is at most `risk`, its margin taken as it is:
        the risk is Φ(-(margin + resolution) / sd), so sd must fall to (margin + resolution) / z, and each
        game adds `per_game` to 1 / sd² (the Bradley-Terry fit's information, as the posterior counts it)."""
        z = -NormalDist().inv_cdf(min(max(risk, 1e-12), 0.5))
        gap = max(self.margin + resolution, 1.0)  # two bots taken as equal, with no resolution: 1 Elo
        wanted = (gap / z) ** 2
        if confidence is not None:  # open for "within": the sd at which it is within, or else ordered
            z = NormalDist().inv_cdf(confidence)
            either = max(resolution - abs(self.margin), abs(self.margin), 1.0) / z
            wanted = min(wanted, either**2)
        if self.sd**2 <= wanted or self.per_game <= 0.0:
            return 0.0
        return (1.0 / wanted - 1.0 / self.sd**2) / self.per_game


@dataclass(frozen=True, slots=True)
class Verdict:
    """The rule applied to a posterior: the ranking, its places and what is still open."""

    rule: Rule
    names: tuple[str, ...]  # the bots, by index
    order: tuple[int, ...]  # bot indices, best first
    places: tuple[str, ...]  # the place shown at each position: "1", "3-5"
    claims: tuple[Claim, ...]

    @property
    def settled(self) -> bool:
        return all(c.status is not Status.OPEN for c in self.claims)

    @property
    def open(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.status is Status.OPEN)

    def against(self) -> dict[str, dict[str, Against]]:
        """Each bot's verdict against each reference bot of the rule, bot name -> reference -> verdict."""
        by_pair = {frozenset((c.upper, c.lower)): c for c in self.claims}
        index = {name: i for i, name in enumerate(self.names)}
        out: dict[str, dict[str, Against]] = {}
        for ref in self.rule.references:
            r = index.get(ref)
            for b, name in enumerate(self.names):
                claim = None if r is None or b == r else by_pair.get(frozenset((b, r)))
                if claim is None:
                    continue
                p = claim.p if claim.upper == b else 1.0 - claim.p
                if claim.status is Status.OPEN:
                    word = "open"
                elif claim.status is Status.SHARED:
                    word = "within"
                else:
                    word = "better" if claim.upper == b else "worse"
                out.setdefault(name, {})[ref] = Against(word, p)
        return out

    def describe_against(self) -> list[str]:
        """One line per reference bot: who is better, within the resolution, worse, still open."""
        lines = []
        verdicts = self.against()
        c, r = f"{self.rule.confidence * 100:g}%", self.rule.resolution
        for ref in self.rule.references:
            groups: dict[str, list[str]] = {}
            for bot in (self.names[b] for b in self.order):
                if ref in verdicts.get(bot, {}):
                    v = verdicts[bot][ref]
                    groups.setdefault(v.word, []).append(bot if v.word != "open" else f"{bot} ({v.p:.0%})")
            parts = [
                f"{label}: {', '.join(groups[word])}"
                for word, label in (
                    ("better", "better"),
                    ("within", f"within {r:g} Elo"),
                    ("worse", "worse"),
                    ("open", "still open (how sure each is better)"),
                )
                if word in groups
            ]
            lines.append(f"against {ref} ({c} sure): " + "; ".join(parts))
        return lines

    def place_of(self) -> dict[int, str]:
        """Each bot's shown place."""
        return {b: p for b, p in zip(self.order, self.places, strict=True)}

    def describe_open(self, most: int = 8) -> str:
        """What is still open, most uncertain first, in one line: '' when settled."""
        claims = sorted(self.open, key=lambda c: abs(c.p - 0.5))
        if not claims:
            return ""
        names = self.names
        words = [f"{names[c.upper]} vs {names[c.lower]} ({c.p:.0%} sure of the order)" for c in claims[:most]]
        more = f" and {len(claims) - most} more" if len(claims) > most else ""
        pairs = "pair" if len(claims) == 1 else "pairs"
        return f"still open, {len(claims)} {pairs}: " + ", ".join(words) + more

    def games_left(self) -> int:
        """A rough estimate of the games still needed to settle: for each open pair, the games between the
        two until its risk is its share of the budget (the budget split evenly over the open pairs), with
        its margin as it stands, summed. Rough: the margins move as games come in, the plan plays some
        games elsewhere (placement, exploration), and games for one pair inform its neighbours too.
        benchmarks/games_left.py measures it against the games runs then played (median within 0.8-1.1 of
        them up to half way through; late in a run, when the last pairs are the close ones, too few)."""
        claims = self.open
        if not claims:
            return 0
        share = (1.0 - self.rule.confidence) / LOOKS / len(claims)
        r, conf = self.rule.resolution, self.rule.confidence
        return round(
            sum(c.games_needed(share, r, conf if c.two_sided and c.p < conf else None) for c in claims)
        )

    def describe_left(self, most: int = 3) -> str:
        """What is open and about how many games would settle it, in one line: 'settled' when settled."""
        if self.settled:
            return "settled"
        left = self.games_left()
        games = f"{left:,} more game{'s' * (left != 1)}" if left else "a few more games"
        return f"{self.describe_open(most)}; about {games} to settle it (a rough estimate)"


def risks(post: Posterior, pairs: Sequence[tuple[int, int]], resolution: float) -> list[tuple[float, float]]:
    """(P(upper better), P(lower more than `resolution` better)) of each (upper, lower) pair."""
    if not pairs:
        return []
    mean, sd = _differences(post, pairs)
    return [
        (normal_cdf(m / s), normal_cdf(-(m + resolution) / s))
        for m, s in zip(mean.tolist(), sd.tolist(), strict=True)
    ]


def _differences(post: Posterior, pairs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The posterior's mean and standard deviation of upper - lower of each (upper, lower) pair, Elo."""
    upper, lower = (np.array(x, dtype=np.int64) for x in zip(*pairs, strict=True))
    mean = post.elo[upper] - post.elo[lower]
    var = post.cov[upper, upper] + post.cov[lower, lower] - 2.0 * post.cov[upper, lower]
    return mean, np.sqrt(np.maximum(var, 1e-12))


def _per_game(margin: float, dispersion: float) -> float:
    """What one game between two bots `margin` Elo apart adds to 1 / sd² of their difference: the logistic
    fit's information q (1 - q) per game in natural units, over the dispersion the posterior found."""
    q = 1.0 / (1.0 + 10.0 ** (-margin / 400.0))
    disp = dispersion if math.isfinite(dispersion) and dispersion > 0 else 1.0
    return q * (1.0 - q) / (disp * ELO_PER_NAT**2)


def verdict(post: Posterior, rule: Rule, names: Sequence[str]) -> Verdict:
    """Apply `rule` to `post` (bots named `names`, in index order)."""
    order = [int(i) for i in post.order()]
    n = len(order)
    pairs: list[tuple[int, int, bool]] = []
    top = (n if rule.top is None else min(rule.top, n)) if rule.orders else 0
    for k in range(min(top, n - 1)):
        pairs.append((order[k], order[k + 1], False))
    if 0 < top < n:  # the last of the first `top` places against everyone below
        pairs += [(order[top - 1], order[j], False) for j in range(top + 1, n)]
    index = {name: i for i, name in enumerate(names)}
    position = {b: k for k, b in enumerate(order)}
    refs = [index[r] for r in rule.references if r in index]
    seen = {(a, b) for a, b, _ in pairs}
    for r in refs:
        for b in range(n):
            a, c = (r, b) if position[r] < position[b] else (b, r)
            if b != r and (a, c) not in seen:
                seen.add((a, c))
                pairs.append((a, c, True))
    odds = risks(post, [(a, b) for a, b, _ in pairs], rule.resolution)
    # A pair with a reference bot is read as better, worse or within the resolution (`Verdict.against`),
    # a neighbour pair that includes one too: "within" must hold on both sides, so those are judged so.
    two_sided = [ref or a in refs or b in refs for a, b, ref in pairs]
    # The riskiest claims are open until the others' risks sum to at most 1 - confidence: then, by the
    # union bound, no claim is the wrong way round by more than the resolution at `confidence`.
    budget = (1.0 - rule.confidence) / LOOKS
    by_risk = sorted(range(len(pairs)), key=lambda k: (-odds[k][1], k))
    tail = [0.0] * (len(pairs) + 1)
    for rank in range(len(pairs) - 1, -1, -1):
        tail[rank] = tail[rank + 1] + odds[by_risk[rank]][1]
    cut = next(rank for rank in range(len(pairs) + 1) if tail[rank] <= budget)
    is_open = {by_risk[rank] for rank in range(cut)}
    mean, sd = _differences(post, [(a, b) for a, b, _ in pairs]) if pairs else (np.zeros(0), np.zeros(0))
    inside = [
        normal_cdf((rule.resolution - m) / s) - normal_cdf((-rule.resolution - m) / s)
        for m, s in zip(mean.tolist(), sd.tolist(), strict=True)
    ]
    claims = tuple(
        Claim(
            a,
            b,
            _status(odds[k][0], k in is_open, rule, inside[k] if two_sided[k] else None),
            odds[k][0],
            odds[k][1],
            ref,
            float(mean[k]),
            float(sd[k]),
            _per_game(float(mean[k]), post.dispersion),
            inside[k],
            two_sided[k],
        )
        for k, (a, b, ref) in enumerate(pairs)
    )
    return Verdict(rule, tuple(names), tuple(order), _places(post, order, rule.confidence), claims)


def _status(p: float, is_open: bool, rule: Rule, within: float | None = None) -> Status:
    """Ordered when the upper is the better at the rule's confidence; else shared, except that a pair read
    as "within the resolution" (`within`: P(|difference| <= resolution), given for a pair with a reference
    bot) is within only when that is at the rule's confidence, and open until then: one side is not enough
    (54 ± 70 Elo over the reference is not "within 30 Elo", however unlikely it is to be 30 below)."""
    if is_open:
        return Status.OPEN
    if p >= rule.confidence:
        return Status.ORDERED
    return Status.SHARED if within is None or within >= rule.confidence else Status.OPEN


def _places(post: Posterior, order: Sequence[int], confidence: float) -> tuple[str, ...]:
    """The place shown at each position: the range the games allow the bot, from one plus the bots surely
    (at `confidence`) above it to the count less those surely below it: "1", "3-5". Every pair is judged,
    not only neighbours, so a bot plainly apart from the field early in a run is not one block with it."""
    n = len(order)
    if n == 0:
        return ()
    mean = post.elo[:, None] - post.elo[None, :]
    var = np.diag(post.cov)[:, None] + np.diag(post.cov)[None, :] - 2.0 * post.cov
    z = mean / np.sqrt(np.maximum(var, 1e-12))
    above = np.vectorize(normal_cdf)(z) >= confidence  # above[i, j]: i surely better than j
    np.fill_diagonal(above, False)
    places = []
    for b in order:
        first, last = 1 + int(above[:, b].sum()), n - int(above[b, :].sum())
        last = max(first, last)
        places.append(str(first) if first == last else f"{first}-{last}")
    return tuple(places)
