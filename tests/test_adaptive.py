"""The adaptive schedule: a pure function of the seed and the results, that stops when the ranking is
settled, places a new bot against a spread of opponents, reopens only what a joining or withdrawn bot
touches, and settles a small virtual class correctly in far fewer games than a round robin."""

from __future__ import annotations

import numpy as np

from arena.stats.posterior import SCORES, Pairs, posterior
from arena.stats.settle import Rule, verdict
from arena.tournament.adaptive import PLACEMENT, batch_size, plan


def names(n: int) -> list[str]:
    return [f"bot{i}" for i in range(n)]


def play(elo: np.ndarray, batch: tuple[tuple[int, int], ...], rng: np.random.Generator) -> tuple:
    """Pairs of games drawn from the Elo curve (6% draws): bot a's half points in each pair."""
    a, b = np.array(batch).T
    p = 1.0 / (1.0 + 10.0 ** ((elo[b] - elo[a]) / 400.0))
    d = np.minimum(0.06, 2 * np.minimum(p, 1 - p))
    cuts = np.stack([1 - p - d / 2, 1 - p + d / 2])
    return a, b, sum((rng.random(len(a)) > cuts).sum(axis=0) for _ in range(2))


def settle(elo: np.ndarray, seed: int, rule: Rule | None = None) -> tuple[Pairs, list]:
    """Batches as arena run plays them (the next decided while one plays, from the complete ones), until
    the complete results are settled: the results and every batch played."""
    n = len(elo)
    rng = np.random.default_rng(seed)
    rule = rule or Rule()
    done = Pairs.empty(n)
    size = batch_size(n)
    in_hand = [plan(done, rule, names(n), seed, i, size) for i in (0, 1)]
    index, played = 2, []
    while in_hand:
        batch = in_hand.pop(0)
        if batch:
            done = done.add(*play(elo, batch, rng))
            played.append(batch)
        nxt = plan(done, rule, names(n), seed, index, size)
        index += 1
        if nxt:
            in_hand.append(nxt)
    return done, played


def chain(elo: list[float], pairings: int, links: list[tuple[int, int]]) -> Pairs:
    """Results where each linked two met `pairings` times and scored as the Elo curve expects (rounded)."""
    pairs = Pairs.empty(len(elo))
    for a, b in links:
        p = 1.0 / (1.0 + 10.0 ** ((elo[b] - elo[a]) / 400.0))
        wins = int(round(pairings * p * p))
        losses = int(round(pairings * (1 - p) * (1 - p)))
        k = [4] * wins + [0] * losses + [2] * (pairings - wins - losses)
        pairs = pairs.add(np.full(pairings, a), np.full(pairings, b), np.array(k))
    return pairs


def test_a_batch_is_a_pure_function_of_seed_index_and_results() -> None:
    pairs = chain([0, 50, 100, 120, 300], 6, [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)])
    first = plan(pairs, Rule(), names(5), seed=1, index=7, size=12)
    assert len(first) == 12 and all(a < b for a, b in first)
    assert plan(pairs, Rule(), names(5), seed=1, index=7, size=12) == first
    assert plan(pairs, Rule(), names(5), seed=2, index=7, size=12) != first


def test_a_settled_ranking_asks_for_no_more_games() -> None:
    pairs = chain([0, 300, 600, 900], 40, [(0, 1), (1, 2), (2, 3)])
    assert verdict(posterior(pairs), Rule(), names(4)).settled
    assert plan(pairs, Rule(), names(4), seed=1, index=0, size=8) == ()


def test_a_new_bot_is_placed_against_opponents_spread_over_the_ranking() -> None:
    elo = [0, 300, 600, 900, 1200, 1500, 1800, 2100]
    old = chain(elo, 40, [(k, k + 1) for k in range(7)])
    grown = Pairs(np.zeros((9, 9, SCORES), dtype=np.int64), np.zeros((9, 9, 3), dtype=np.int64))
    grown.counts[:8, :8] = old.counts
    batch = plan(grown, Rule(), names(9), seed=3, index=0, size=8)
    placement = [a if b == 8 else b for a, b in batch[:PLACEMENT]]
    assert all(8 in pair for pair in batch[:PLACEMENT])
    strengths = sorted(elo[i] for i in placement)
    assert len(set(placement)) == PLACEMENT and strengths[0] <= 600 and strengths[-1] >= 1500


def test_a_withdrawn_bot_reopens_only_the_pair_it_stood_between() -> None:
    elo = [0, 100, 200, 215, 230, 330, 430]
    everyone = chain(elo, 4, [(a, b) for a in range(7) for b in range(a + 1, 7)])
    neighbours = chain(elo, 400, [(k, k + 1) for k in range(6)])
    field = Pairs(everyone.counts + neighbours.counts, everyone.single)
    assert plan(field, Rule(), names(7), seed=1, index=0, size=8) == ()
    keep = [0, 1, 2, 4, 5, 6]  # bot 3 withdrawn: 2 and 4, 30 Elo apart, met only 4 times
    left = Pairs(field.counts[np.ix_(keep, keep)], field.single[np.ix_(keep, keep)])
    open_pairs = verdict(posterior(left), Rule(), names(6)).open
    # bots 2 and 4 (now 3), in either order: the field's prior pulls the two blocks that only the 4-pairing
    # round robin links together, and that may swap two bots 30 Elo apart
    assert [{c.upper, c.lower} for c in open_pairs] == [{2, 3}]
    batch = plan(left, Rule(), names(6), seed=1, index=0, size=8)
    assert batch and all(2 in pair or 3 in pair for pair in batch)


def test_a_small_class_settles_right_in_a_fraction_of_a_round_robins_games() -> None:
    elo = np.array([-300.0, -100.0, 0.0, 15.0, 150.0, 200.0, 420.0])
    done, played = settle(elo, seed=4)
    post = posterior(done)
    judged = verdict(post, Rule(), names(7))
    assert judged.settled
    games = 2 * sum(len(b) for b in played)
    assert games < 7 * 6 * 100 / 4  # a quarter of a 100-round round robin
    truth = elo[list(judged.order)]
    i, j = np.triu_indices(7, 1)
    assert not np.any((truth[j] - truth[i]) > 30)  # nothing more than 30 Elo apart the wrong way round
    assert judged.place_of()[2] == judged.place_of()[3]  # 15 Elo apart: one shared place


def test_the_same_seed_plays_the_same_games_and_a_restart_continues_them() -> None:
    elo = np.array([-200.0, 0.0, 40.0, 250.0, 260.0])
    done, played = settle(elo, seed=9)
    again, replayed = settle(elo, seed=9)
    assert played == replayed and np.array_equal(done.counts, again.counts)
    assert settle(elo, seed=10)[1] != played
    # A resumed run knows only the stored results: from those after batch 3, batch 5 is the same.
    rng = np.random.default_rng(9)
    partial = Pairs.empty(5)
    for batch in played[:4]:
        partial = partial.add(*play(elo, batch, rng))
    assert plan(partial, Rule(), names(5), 9, 5, batch_size(5)) == played[5]


def test_a_pair_that_can_only_repeat_its_games_is_not_asked_again() -> None:
    """Every game from the start position (no book) and a pair whose second pairing replayed its first
    exactly: the two are deterministic against each other, so every further game of theirs would repeat.
    The planner asked them again (two such bots played 26 games with 2 distinct); now the pair is done, the
    other pairs are still played, and once every pair that could help is done the run stops saying why."""
    from pathlib import Path

    from arena.match.bots import Bot
    from arena.tournament.adaptive import Adaptive
    from arena.tournament.schedule import Result

    bots = tuple(Bot(n, ("true",), Path("/nowhere"), Path(f"/nowhere/{n}.py"), f"{n}-1") for n in names(4))
    v = [(b.name, b.digest) for b in bots]
    schedule = Adaptive(bots, Rule(), seed=7)
    # bot0 and bot1 played two pairings, the second a replay of the first; every other pair one pairing
    results = [Result(1, v[0], v[1], "bot0"), Result(1, v[1], v[0], "bot0")]
    results += [Result(2, v[0], v[1], "bot0", repeat=True), Result(2, v[1], v[0], "bot0", repeat=True)]
    for a in range(4):
        for b in range(4):
            if a != b and {a, b} != {0, 1}:
                results.append(Result(1, v[a], v[b], f"bot{min(a, b)}"))
    assert schedule.exhausted(results) == {(0, 1)}
    asked = {frozenset((s.south.name, s.north.name)) for s in schedule.next(results)}
    assert asked and frozenset(("bot0", "bot1")) not in asked
    # every pair replayed: nothing is asked, and the reason says so (not a cap, not "no more games")
    for a in range(4):
        for b in range(4):
            if a != b and {a, b} != {0, 1}:
                results.append(Result(2, v[a], v[b], f"bot{min(a, b)}", repeat=True))
    assert len(schedule.exhausted(results)) == 6
    assert schedule.next(results) == []
    assert "can only repeat earlier ones: 6 pairs" in schedule.stopped(results)
