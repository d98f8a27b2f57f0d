"""The SPRT: its LLR against the exact generalized likelihood ratio it approximates, its bounds and
decisions, the line it prints, and bad designs refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.stats.sprt import MIN_COUNT, Decision, Design, llr, score, status


def exact_llr(counts: list[int], elo0: float, elo1: float) -> float:
    """The generalized LLR from its definition: the multinomial's maximum likelihood with the mean score
    held at s1, over the same at s0. With the mean held at s, the maximum is p_i = f_i / (1 + x (a_i - s))
    (a Lagrange multiplier x), found here by bisection."""
    f = np.asarray(counts, float) / sum(counts)
    a = np.linspace(0, 1, len(counts))

    def best(s: float) -> float:
        lo, hi = -1 / (a.max() - s) + 1e-12, -1 / (a.min() - s) - 1e-12
        for _ in range(200):
            x = (lo + hi) / 2
            if (f * (a - s) / (1 + x * (a - s))).sum() > 0:
                lo = x
            else:
                hi = x
        p = f / (1 + x * (a - s))
        return float((f * np.log(p)).sum())

    return sum(counts) * (best(float(score(elo1))) - best(float(score(elo0))))


@pytest.mark.parametrize(
    "counts", [[40, 300, 700, 320, 45], [300, 150, 340], [10, 90, 220, 60, 20], [30, 200, 500, 200, 30]]
)
def test_the_llr_is_within_5_percent_of_the_exact_generalized_likelihood_ratio(counts: list[int]) -> None:
    """Near the hypotheses (scores of 0.45 to 0.55), where a test spends its time."""
    assert float(llr(counts, 0, 10)) == pytest.approx(exact_llr(counts, 0, 10), rel=0.05)


def test_the_llr_is_vectorised_and_pairs_that_split_tell_more_than_the_same_games_apart() -> None:
    pairs = [[10, 20, 400, 60, 10]]  # mostly one game each: little variance per pair
    games = [[10 * 2 + 20 + 400, 20 + 60 + 800, 60 + 400 + 20]]  # the same games as L, D, W
    assert llr(np.array(pairs * 3), 0, 10).shape == (3,)
    assert float(llr(pairs, 0, 10)[0]) > 2 * float(llr(games, 0, 10)[0]) > 0


def test_bounds_are_walds() -> None:
    t = Design(0, 10, 0.05, 0.1)
    assert t.lower == pytest.approx(math.log(0.1 / 0.95)) and t.upper == pytest.approx(math.log(0.9 / 0.05))


def test_decisions_and_the_running_line() -> None:
    t = Design()
    win = status(t, [5, 20, 100, 60, 40])
    assert win.decision is Decision.H1 and win.llr > t.upper and win.games == 450
    assert win.elo_lo < win.elo < win.elo_hi and win.elo > 50
    lose = status(t, [40, 60, 100, 20, 5])
    assert lose.decision is Decision.H0 and lose.elo < -50
    going = status(t, [10, 20, 40, 20, 10])
    assert going.decision is None and t.lower < going.llr < t.upper
    line = going.line()
    assert "LLR -" in line and "[-2.94, 2.94]" in line and "pairs 0:10 ½:20 1:40 1½:20 2:10" in line
    assert "200 games" in line and "running" in line
    tri = status(t, [30, 10, 60])
    assert tri.games == 100 and "pairs L:30 D:10 W:60" in tri.line()


def test_a_handful_of_pairs_decides_nothing_however_lopsided() -> None:
    few = status(Design(), [0, 0, 0, 0, MIN_COUNT - 1])
    assert few.llr > Design().upper and few.decision is None
    assert status(Design(), [0, 0, 0, 0, MIN_COUNT]).decision is Decision.H1
    nothing = status(Design(), [0, 0, 0, 0, 0])
    assert nothing.decision is None and nothing.games == 0


@pytest.mark.parametrize(
    "counts, words",
    [
        ([0, 0, 0, 0, 24], "Elo: all 24 pairs won"),
        ([3, 0, 0, 0, 0], "Elo: all 3 pairs lost"),
        ([0, 0, 7, 0, 0], "Elo: all 7 pairs split (1-1 or two draws)"),
        ([0, 0, 0, 0, 0], "Elo: no pairs yet"),
        ([0, 0, 1], "Elo: all 1 game won"),
        ([0, 1, 1, 1, 0], "Elo +0.0 [-"),
        ([0, 0, 0, 1, 9], "[+"),
    ],
)
def test_the_elo_says_what_the_counts_allow_never_inf_nor_minus_zero(counts: list[int], words: str) -> None:
    line = status(Design(), counts).line()
    elo = status(Design(), counts).elo_words()
    assert words in elo and elo in line
    assert "inf" not in elo and "-0.0 " not in elo + " " and "-0.0]" not in elo


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"elo0": 10, "elo1": 0}, "elo0 must be below elo1 (H0: no better than elo0), not 10 and 0"),
        ({"elo0": 5, "elo1": 5}, "elo0 must be below elo1 (H0: no better than elo0), not 5 and 5"),
        ({"alpha": 0}, "alpha must be between 0 and 0.5 (for instance 0.05), not 0"),
        ({"beta": 0.7}, "beta must be between 0 and 0.5 (for instance 0.05), not 0.7"),
        ({"elo1": 5000}, "elo0 and elo1 must be within ±1000, not 0 and 5000"),
    ],
)
def test_bad_designs_are_refused_in_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Design(**kwargs)
    assert str(err.value) == message


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="five pair counts or three game counts"):
        status(Design(), [1, 2, 3, 4])
