"""The per-machine residual, shown by simulation over many seeds: a class of 8 bots of known strengths
plays 20 rounds on 4 machines, games dealt to machines at random; honest machines' residuals stay within
±3 σ almost always, and a machine that makes the weaker bot of each game win more often stands out."""

from __future__ import annotations

import random

import pytest

from arena.report.machines import OUTLIER, MachineTally, tally

BOTS = [f"b{i}" for i in range(8)]
ROUNDS = 20
STRENGTH = {b: i * 0.35 for i, b in enumerate(BOTS)}  # Bradley-Terry log-strengths


def season(seed: int, cheat: float = 0.0) -> list[dict]:
    """Records of a round robin of ROUNDS rounds; machine m3 turns `cheat` of the games its weaker bot lost
    into wins (it plays the weaker bot's moves, say)."""
    rng = random.Random(seed)
    records = []
    for _ in range(ROUNDS):
        for south in BOTS:
            for north in BOTS:
                if south == north:
                    continue
                machine = f"m{rng.randrange(4)}"
                p = 1 / (1 + 10 ** ((STRENGTH[north] - STRENGTH[south]) / 1.5))
                u = rng.random()
                winner = south if u < p * 0.9 else (None if u < p * 0.9 + 0.1 else north)
                weaker = south if STRENGTH[south] < STRENGTH[north] else north
                if machine == "m3" and winner != weaker and rng.random() < cheat:
                    winner = weaker
                records.append(
                    {"south": south, "north": north, "winner": winner, "worker": machine, "reason": "normal",
                     "faulty": None}
                )  # fmt: skip
    return records


def by_name(tallies: list[MachineTally]) -> dict[str, MachineTally]:
    return {t.machine: t for t in tallies}


def test_honest_machines_rarely_stand_out_and_a_cheating_one_does() -> None:
    honest_flags = honest_total = 0
    caught = 0
    seeds = range(100)
    for seed in seeds:
        fair = by_name(tally(season(seed)))
        honest_flags += sum(t.disagrees for t in fair.values())
        honest_total += len(fair)
        unfair = by_name(tally(season(seed, cheat=0.5)))
        caught += unfair["m3"].disagrees
        assert unfair["m3"].residual is not None
    assert honest_flags / honest_total < 0.02, honest_flags  # ±3 σ: a false alarm in under 2 % of machines
    assert caught / len(seeds) > 0.9, caught


def test_counts_and_summary() -> None:
    records = season(1)
    records[0] |= {"faulty": records[0]["south"], "reason": "timeout", "winner": records[0]["north"]}
    records[1] |= {"reason": "benched"}
    tallies = by_name(tally(records))
    assert sum(t.games for t in tallies.values()) == len(records) - 1  # a benched game was never played
    first = tallies[records[0]["worker"]]
    assert (first.forfeits, first.timeouts) == (1, 1)
    assert first.summary().startswith(
        f"{first.machine}: {first.games} games, 1 forfeits (1 on time); residual "
    )
    alone = tally([{"south": "a", "north": "b", "winner": "a", "worker": "", "reason": "normal"}])
    assert (
        alone[0].summary()
        == "this machine: 1 games, 0 forfeits (0 on time); no residual (no pairing played elsewhere)"
    )
    assert OUTLIER == 3.0


def deterministic_season(seed: int, openings: int, forger: bool = False) -> list[dict]:
    """A round robin of deterministic bots: a game's outcome is a fixed function of its pairing and its
    opening (one of `openings` per round, as `--openings` deals them), whichever machine plays it. With
    `forger`, machine m3 forfeits b7 (the strongest) in each of its games there, as a rogue worker that
    claims 'timed out before its first move' would."""
    rng = random.Random(seed)
    outcome = random.Random(seed + 10_000)
    fixed: dict[tuple[str, str, int], str | None] = {}
    records = []
    for _ in range(ROUNDS):
        opening = rng.randrange(openings)
        for south in BOTS:
            for north in BOTS:
                if south == north:
                    continue
                key = (south, north, opening)
                if key not in fixed:
                    p = 1 / (1 + 10 ** ((STRENGTH[north] - STRENGTH[south]) / 1.5))
                    u = outcome.random()
                    fixed[key] = south if u < p * 0.9 else (None if u < p * 0.9 + 0.1 else north)
                machine = f"m{rng.randrange(4)}"
                winner = fixed[key]
                if forger and machine == "m3" and "b7" in (south, north):
                    winner = north if south == "b7" else south
                records.append(
                    {"south": south, "north": north, "winner": winner, "worker": machine, "reason": "normal",
                     "faulty": None}
                )  # fmt: skip
    return records


@pytest.mark.parametrize("openings", [1, 4])
def test_identical_deterministic_copies_agree_and_are_never_flagged(openings: int) -> None:
    """Deterministic bots give every machine the same result of a pairing: a residual far below 0 (closer
    agreement than chance, -3.1 to -3.6 σ in two honest lab runs), which is agreement, not a fault."""
    honest_flags = honest_total = caught = 0
    negative = 0
    seeds = range(100)
    for seed in seeds:
        fair = by_name(tally(deterministic_season(seed, openings)))
        honest_flags += sum(t.disagrees for t in fair.values())
        honest_total += len(fair)
        negative += sum(t.residual is not None and t.residual < -OUTLIER for t in fair.values())
        caught += by_name(tally(deterministic_season(seed, openings, forger=True)))["m3"].disagrees
    assert honest_flags / honest_total < 0.02, honest_flags
    if openings == 1:
        assert negative == honest_total  # every honest machine below -3 σ: flagged by |z|, never by z
    assert caught / len(seeds) > 0.9, caught
