"""The stopping rule on small cases: what is ordered, what shares a place, what is still open, top K and
reference bots, and bad settings refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from arena.stats.posterior import Pairs, Posterior, posterior
from arena.stats.settle import Rule, Status, verdict


def known(elo: list[float], sd: float) -> Posterior:
    """A posterior with these means and independent uncertainties of `sd` Elo each."""
    n = len(elo)
    return Posterior(np.array(elo, dtype=float), np.eye(n) * sd**2, 1.0, np.zeros(n))


NAMES = ["ann", "bob", "cat", "dan", "eve"]


def test_far_apart_bots_are_ordered_and_take_places_one_by_one() -> None:
    v = verdict(known([1700, 1500, 1300], 20), Rule(), NAMES[:3])
    assert v.order == (0, 1, 2)
    assert [c.status for c in v.claims] == [Status.ORDERED, Status.ORDERED]
    assert v.places == ("1", "2", "3") and v.settled and v.describe_open() == ""


def test_close_bots_that_cannot_be_wrong_by_the_resolution_share_a_place() -> None:
    # 10 Elo apart, each ± 5: the order is not sure, but neither is 30 Elo better than the other. Each
    # place is the range the games allow: bob is surely above dan (20 Elo apart), so bob is 2-3 and dan 3-4
    v = verdict(known([1600, 1510, 1500, 1490, 1300], 5), Rule(), NAMES)
    assert v.places == ("1", "2-3", "2-4", "3-4", "5")
    assert v.settled


def test_a_pair_that_could_be_the_wrong_way_round_by_more_than_the_resolution_is_open_and_named() -> None:
    v = verdict(known([1600, 1520, 1500, 1300], 25), Rule(), NAMES[:4])
    assert not v.settled
    (claim,) = v.open
    assert (claim.upper, claim.lower) == (1, 2) and 0.5 < claim.p < 0.95
    assert claim.risk == pytest.approx(0.0786, abs=1e-3)  # P(cat > bob + 30) = Φ(-50 / 35.4)
    assert v.describe_open() == "still open, 1 pair: bob vs cat (71% sure of the order)"
    assert v.places == ("1", "2-3", "2-3", "4")


def test_the_risks_add_up_over_the_ranking_not_pair_by_pair() -> None:
    sd = 30 / 2.3263 / 2**0.5  # each pair of equal bots: P(the lower more than 30 better) = 1%
    v = verdict(known([1500, 1500, 1500, 1500], sd), Rule(), NAMES[:4])
    assert [round(c.risk, 4) for c in v.claims] == [0.01, 0.01, 0.01]
    # 3% in all, over the budget of (1 - 0.95) / LOOKS = 2.5%: the riskiest pair stays open
    assert not v.settled and len(v.open) == 1
    assert verdict(known([1500, 1500, 1500], sd), Rule(), NAMES[:3]).settled  # 2% will do


def test_a_finer_resolution_or_a_higher_confidence_keeps_a_pair_open() -> None:
    post = known([1600, 1510, 1500], 5)  # bob over cat: 10 ± 7.1 Elo
    assert verdict(post, Rule(resolution=30), NAMES[:3]).settled
    assert not verdict(post, Rule(resolution=0), NAMES[:3]).settled
    assert not verdict(post, Rule(confidence=0.999, resolution=5), NAMES[:3]).settled


def test_settle_top_k_needs_only_the_first_places_and_the_boundary() -> None:
    post = known([1900, 1700, 1500, 1495, 1490], 20)  # the bottom three are not told apart
    assert not verdict(post, Rule(), NAMES).settled
    top2 = verdict(post, Rule(top=2), NAMES)
    assert top2.settled
    assert {(c.upper, c.lower) for c in top2.claims} == {(0, 1), (1, 2), (1, 3), (1, 4)}
    assert top2.places == ("1", "2", "3-5", "3-5", "3-5")
    assert not verdict(known([1900, 1700, 1690, 1495, 1490], 20), Rule(top=2), NAMES).settled


def test_reference_bots_settle_every_bot_against_them() -> None:
    post = known([1900, 1700, 1500, 1480, 1300], 30)
    v = verdict(post, Rule(top=1, references=("cat",)), NAMES)
    refs = {(c.upper, c.lower): c.status for c in v.claims if c.reference}
    assert set(refs) == {(1, 2), (2, 3), (2, 4)}  # ann vs cat is already claimed: ann's top place
    assert refs[(2, 3)] is Status.OPEN and refs[(1, 2)] is Status.ORDERED
    assert not v.settled
    assert verdict(post, Rule(top=1), NAMES).settled


def test_the_rule_reads_as_a_sentence() -> None:
    assert Rule().describe() == (
        "Settled when, with 95% confidence, no bot stands below a neighbour that is more than 30 Elo weaker; "
        "neighbours whose order is not 95% sure share a place."
    )
    text = Rule(0.9, 50, top=3, references=("greedy",)).describe()
    assert "among the first 3 places" in text and "50 Elo weaker" in text and "90% confidence" in text
    assert text.endswith("every bot is placed likewise against greedy.")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"confidence": 1.5}, "confidence must be between 0.5 and 1 (for instance 0.95), not 1.5"),
        ({"confidence": 0.5}, "confidence must be between 0.5 and 1 (for instance 0.95), not 0.5"),
        ({"resolution": -3}, "resolution must be 0 Elo or more (for instance 30), not -3"),
        ({"resolution": float("nan")}, "resolution must be 0 Elo or more (for instance 30), not nan"),
        ({"top": 0}, "settle top K needs K of 1 or more, not 0"),
    ],
)
def test_bad_settings_are_refused_in_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Rule(**kwargs)
    assert str(err.value) == message


def test_a_settled_ranking_from_real_fits_of_clearly_different_bots() -> None:
    pairs = Pairs.empty(3).add(np.repeat([0, 1, 0], 40), np.repeat([1, 2, 2], 40), np.repeat([3, 3, 4], 40))
    v = verdict(posterior(pairs), Rule(), NAMES[:3])
    assert v.settled and v.order == (0, 1, 2) and v.places == ("1", "2", "3")


def test_reference_bots_alone_settle_only_each_bot_against_them_with_a_verdict_each() -> None:
    """`--reference cat` without `--settle top K`: no neighbour order is claimed, only every bot against cat,
    and each bot's verdict reads better, worse, within the resolution, or open."""
    post = known([1760, 1700, 1510, 1500, 1460, 1300], 8)  # cat - dan: 10 ± 11.3, P(|d| <= 30) = 96%
    post.cov[0, 0] = post.cov[1, 1] = 60.0**2  # ann and bob: far above dan, not yet told apart
    names = [*NAMES, "fay"]
    v = verdict(post, Rule(references=("dan",)), names)
    assert all(c.reference for c in v.claims) and len(v.claims) == 5
    words = {bot: a.word for bot, a in ((b, x["dan"]) for b, x in v.against().items())}
    assert words == {"ann": "better", "bob": "better", "cat": "within", "eve": "worse", "fay": "worse"}
    assert v.settled
    assert not verdict(post, Rule(), names).settled  # the whole order is not: ann and bob
    (line,) = v.describe_against()
    assert line == "against dan (95% sure): better: ann, bob; within 30 Elo: cat; worse: eve, fay"
    assert "every bot is placed against dan: better, worse, or within 30 Elo" in v.rule.describe()
    unsure = verdict(known([1700, 1500, 1460], 30), Rule(references=("bob",)), names[:3])
    assert unsure.against()["cat"]["bob"].word == "open" and not unsure.settled
    assert "still open (how sure each is better): cat (17%)" in unsure.describe_against()[0]


def test_within_the_resolution_of_a_reference_holds_on_both_sides_or_the_verdict_is_open() -> None:
    """A bot 54 ± 70 Elo (95%) over the reference: a reversal by 30 is unlikely (1%) and it is not 95% sure
    to be the better, but it is as likely as not to be more than 30 above, so it is not "within 30 Elo":
    the verdict is open and the run not settled until it is better or within on both sides."""
    sd = 70 / 1.959964 / 2**0.5  # each bot's; their difference's is 70 / 1.96
    post = known([1554, 1500, 1200], sd)
    v = verdict(post, Rule(references=("bob",)), NAMES[:3])
    ann = v.against()["ann"]["bob"]
    assert ann.word == "open" and 0.9 < ann.p < 0.95
    assert not v.settled and v.games_left() > 0
    assert "still open (how sure each is better): ann (93%)" in v.describe_against()[0]
    # the same bot 10 ± 20 over the reference is within on both sides: P(|d| <= 30) = 97%
    close = verdict(known([1510, 1500, 1200], 20 / 1.959964 / 2**0.5), Rule(references=("bob",)), NAMES[:3])
    assert close.against()["ann"]["bob"].word == "within" and close.settled
    # and 40 ± 20 over it is better, not within
    far = verdict(known([1540, 1500, 1200], 20 / 1.959964 / 2**0.5), Rule(references=("bob",)), NAMES[:3])
    assert far.against()["ann"]["bob"].word == "better" and far.settled


def test_within_a_reference_is_judged_over_many_posteriors_at_its_confidence() -> None:
    """Over seeded posteriors of a bot at every margin from the reference, a "within 30 Elo" verdict is
    one whose posterior puts at least 95% on |difference| <= 30, never one that is 30 away on one side."""
    rng = np.random.default_rng(42)
    for _ in range(200):
        margin, sd = float(rng.uniform(-80, 80)), float(rng.uniform(5, 60))
        v = verdict(known([1500 + margin, 1500, 1000], sd / 2**0.5), Rule(references=("bob",)), NAMES[:3])
        a = v.against()["ann"]["bob"]
        if a.word == "within":
            from statistics import NormalDist

            inside = NormalDist(margin, sd).cdf(30) - NormalDist(margin, sd).cdf(-30)
            assert inside >= 0.95, (margin, sd)


def test_a_settled_runs_rough_cost_follows_the_measured_shares_by_field_size() -> None:
    from arena.stats.settle import settled_games

    assert settled_games(30) == round(0.135 * 100 * 30 * 29)
    assert settled_games(100) == round(0.086 * 100 * 100 * 99)
    assert settled_games(16) == round(0.135 * 100 * 16 * 15)  # held below the smallest field measured
    assert 0.086 < settled_games(50) / (100 * 50 * 49) < 0.135


def test_the_games_left_shrink_as_the_evidence_grows() -> None:
    """The estimate of the games still needed falls as the pairs' uncertainty does, to none when settled,
    and a pair further apart needs fewer."""
    left = [
        verdict(known([1600, 1520, 1500, 1300], sd), Rule(), NAMES[:4]).games_left() for sd in (40, 30, 20)
    ]
    assert left[0] > left[1] > left[2] > 0
    assert verdict(known([1600, 1520, 1500, 1300], 12), Rule(), NAMES[:4]).games_left() == 0
    assert verdict(known([1600, 1560, 1500, 1300], 30), Rule(), NAMES[:4]).games_left() < left[1]
    assert verdict(known([1600, 1520, 1500, 1300], 12), Rule(), NAMES[:4]).describe_left() == "settled"


@pytest.mark.slow
def test_the_games_left_are_right_in_order_of_magnitude_on_a_simulated_field() -> None:
    """Virtual bots of known Elo played batch by batch through the real plan, posterior and verdict, as
    `arena run` plays them: the estimate a tenth, a quarter and half of the way through is within a factor
    of three of the games the run then played (half way, of four: a run may linger on bots that stand
    within the resolution, whose every batch looks nearly enough), and it shrinks as the run goes (from a
    tenth of the way to three quarters: between a tenth and a half one batch's estimate may stand above
    another's)."""
    from arena.tournament.adaptive import batch_size, plan

    rule = Rule()
    for seed in range(3):
        rng = np.random.default_rng(seed)
        elo = rng.normal(0.0, 250.0, 10)
        names = [f"bot{k}" for k in range(10)]
        pairs, post, games, trace = Pairs.empty(10), posterior(Pairs.empty(10)), 0, []
        index = 0
        while batch := plan(pairs, rule, names, seed, index, batch_size(10), post):
            a, b = (np.array(x) for x in zip(*batch, strict=True))
            win = 1.0 / (1.0 + 10.0 ** ((elo[b] - elo[a]) / 400.0))
            pairs = pairs.add(a, b, 2 * rng.binomial(2, win))  # two games, no draws: 0, 2 or 4 half points
            games += 2 * len(batch)
            post = posterior(pairs, start=post.theta)
            trace.append((games, verdict(post, rule, names).games_left()))
            index += 1
        estimates = []
        for share in (0.1, 0.25, 0.5, 0.75):
            at, estimate = min(trace, key=lambda t: abs(t[0] - share * games))
            factor = 3 if share < 0.5 else 4
            if share <= 0.5:
                assert estimate / factor <= games - at <= factor * estimate, (
                    seed,
                    share,
                    at,
                    estimate,
                    games,
                )
            estimates.append(estimate)
        assert estimates[0] > estimates[3], estimates


def test_an_open_ended_run_says_on_the_terminal_what_is_still_open() -> None:
    """An adaptive run's progress line says the open pairs and how sure each is, not a batch's count."""
    import io

    from arena.report.terminal import Progress

    out = io.StringIO()
    progress = Progress(False, out, open_ended=True)
    progress(0, 16, None)
    v = verdict(known([1600, 1520, 1500, 1300], 25), Rule(), NAMES[:4])
    progress.settling(v)
    progress.said -= Progress.EVERY
    progress(16, 16, None)
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("arena: 16 games, ")
    assert last.endswith(
        "; still open, 1 pair: bob vs cat (71% sure of the order); about 89 more games to settle it (a rough "
        "estimate)"
    )


def test_an_open_ended_runs_leaders_are_the_elos_not_a_score_against_other_opponents() -> None:
    """In an adaptive run bots meet the opponents the run chooses: 'leading: greedy 100.0% (4)' ranked by a
    score that does not compare. The line and the table lead with the Elo's order and its places."""
    import io

    from arena.match.record import GameRecord
    from arena.report.terminal import Progress

    out = io.StringIO()
    progress = Progress(False, out, open_ended=True)
    progress(0, 2, None)

    def game(south: str, north: str, winner: str) -> GameRecord:
        return GameRecord("kalah", south, north, (1,), 0, 0, winner, "normal", None, "", (1.0,))

    progress(1, 2, game("dan", "eve", "dan"))  # dan beat the weakest: 100%, but the Elo puts ann first
    progress.settling(verdict(known([1600, 1520, 1500, 1300], 25), Rule(), NAMES[:4]))
    progress.said -= Progress.EVERY
    progress(2, 2, game("ann", "bob", "ann"))
    last = out.getvalue().splitlines()[-1]
    assert last.endswith("; leading: by Elo: 1 ann (1 game), 2-3 bob (1 game), 2-3 cat (0 games), ..."), last
    table = progress.scores.table(ranked=progress.ranked)
    assert table[0].split()[:2] == ["place", "bot"] and table[1].split()[:2] == ["1", "ann"]
    assert [row.split()[1] for row in table[1:5]] == ["ann", "bob", "cat", "dan"]  # dan's 100% below
    assert table[5].split()[0] == "eve"  # a bot the order has not placed yet: after, without a place


def test_a_long_run_of_rounds_says_how_long_it_takes_and_what_a_settled_run_costs() -> None:
    """`arena run --rounds 100` on a class of 30: 87,000 games. Once its first games show the pace, it says
    how long all of them take, and about how many games and hours a run without --rounds, which stops when
    settled, would take instead."""
    import io

    from arena.report.terminal import Progress

    out = io.StringIO()
    progress = Progress(False, out, bots=30)
    progress(0, 87_000, None)
    progress.started -= 20.0  # the first 8 games took 20 s
    progress(8, 87_000, None)
    said = [line for line in out.getvalue().splitlines() if "pace" in line]
    assert said == [
        "arena: at the pace of the first 8 games, the 87,000 games take about 60.4 h; without --rounds, "
        "arena run stops once the ranking is settled: about 11,745 games, 8.2 h at this pace (rough: settled "
        "runs in simulation played a share of a 100-round round robin's games of 13.5% at 30 bots and 8.6% "
        "at 100 bots)"
    ]
    progress(9, 87_000, None)
    assert sum("pace" in line for line in out.getvalue().splitlines()) == 1  # said once
