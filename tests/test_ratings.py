"""Ratings: the closed-form TrueSkill update against the package, and leaderboards of hand-made stores."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import trueskill

from arena import api
from arena.game.rules import SWAP
from arena.match.bots import Bot
from arena.match.record import GameRecord
from arena.report import page, terminal
from arena.stats import posterior, ratings, settle
from arena.stats.ratings import Model, Skill
from arena.store import queries
from arena.store.writer import Store
from arena.tournament.schedule import Slot


def make_bot(name: str, version: str = "1") -> Bot:
    return Bot(name, ("true",), Path("/nowhere"), Path(f"/nowhere/{name}.py"), f"{name}-v{version}")


class Tournament:
    """A store filled by hand: each game gets its own round, so schedule order is the order of `play`."""

    def __init__(self, path: Path) -> None:
        self.store = Store(path / "arena.sqlite")
        self.round = 0

    def play(
        self,
        south: Bot,
        north: Bot,
        winner: Bot | None,
        stores: tuple[int, int] = (30, 18),
        reason: str = "normal",
        faulty: Bot | None = None,
        swapped: bool = False,
        think: tuple[float, float] = (10.0, 20.0),
        moves: tuple[int, int] = (5, 4),
        stderr: dict[str, str] | None = None,
        round: int | None = None,
        ordinal: str = "0",
    ) -> None:
        self.round += 1
        record = GameRecord(
            rules="kalah",
            south=south.name,
            north=north.name,
            # a last ply of the game's number: every game distinct, as games between real bots that play
            # from distinct openings are (an exact repeat counts once: store.REPEAT)
            moves=((1, SWAP, 3) if swapped else (1, 3)) + (self.round,),
            south_store=stores[0],
            north_store=stores[1],
            winner=winner.name if winner else None,
            reason=reason,
            faulty=faulty.name if faulty else None,
            detail=f"{reason} detail" if faulty else "",
            move_ms=(1.0, 2.0),
            think_ms={south.name: think[0], north.name: think[1]},
            moves_made={south.name: moves[0], north.name: moves[1]},
            stderr=stderr or {south.name: "", north.name: ""},
        )
        self.store.add_game(Slot(round or self.round, ordinal, south, north), record)


@pytest.fixture
def tour(tmp_path: Path):
    t = Tournament(tmp_path)
    yield t
    t.store.close()


A, B, C = make_bot("alice"), make_bot("bob"), make_bot("carol")


def by_name(board):
    return board.set_index("bot")


# --- the closed-form update ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [trueskill.TrueSkill(), trueskill.TrueSkill(mu=0.0, sigma=1.0, beta=0.5, tau=0.01, draw_probability=0.3)],
    ids=["default", "other"],
)
def test_closed_form_equals_rate_1vs1(env):
    model = Model.of(env)
    rng = random.Random(7)
    checked = {False: 0, True: 0}
    for _ in range(800):
        scale = env.sigma
        first = Skill(env.mu + rng.uniform(-4, 4) * scale, rng.uniform(0.02, 1.5) * scale)
        second = Skill(env.mu + rng.uniform(-4, 4) * scale, rng.uniform(0.02, 1.5) * scale)
        drawn = rng.random() < 0.5
        try:
            want = trueskill.rate_1vs1(
                trueskill.Rating(first.mu, first.sigma),
                trueskill.Rating(second.mu, second.sigma),
                drawn=drawn,
                env=env,
            )
        except FloatingPointError:
            continue
        got = model.rate_1vs1(first, second, drawn)
        for w, g in zip(want, got, strict=True):
            assert g.mu == pytest.approx(w.mu, abs=1e-9)
            assert g.sigma == pytest.approx(w.sigma, abs=1e-9)
        checked[drawn] += 1
    assert checked[False] > 300 and checked[True] > 300


def test_an_impossible_upset_does_not_stop_the_ratings():
    model = Model.of()
    strong, weak = Skill(300.0, 0.5), Skill(-100.0, 0.5)
    for drawn in (False, True):
        a, b = model.rate_1vs1(weak, strong, drawn)
        assert all(math.isfinite(x) for x in (a.mu, a.sigma, b.mu, b.sigma))
        assert 0 < a.sigma and 0 < b.sigma
        assert a.mu > weak.mu and b.mu < strong.mu


def test_draw_margin_is_the_packages():
    env = trueskill.TrueSkill(draw_probability=0.25)
    assert Model.of(env).margin == trueskill.calc_draw_margin(0.25, 2, env=env)


# --- leaderboards of hand-made stores -------------------------------------------------------------------


def test_a_beats_b_beats_c_in_order(tour):
    for _ in range(5):  # 10-0 records: ordered at 95% (after 6-0 the odds are just under)
        tour.play(A, B, A)
        tour.play(B, A, A)
        tour.play(B, C, B)
        tour.play(C, B, B)
        tour.play(A, C, A)
        tour.play(C, A, A)
    board = ratings.leaderboard(tour.store)
    assert list(board["bot"]) == ["alice", "bob", "carol"]
    assert list(board["rank"]) == [1, 2, 3]
    assert board["conservative"].is_monotonic_decreasing
    assert board["bt_elo"].is_monotonic_decreasing
    assert (board["bt_pm"] > 0).all()
    text = terminal.format_table(board)
    assert "mu-3σ" in text.splitlines()[0] and "BT Elo ±" in text.splitlines()[0]
    positions = [text.index(name) for name in ("alice", "bob", "carol")]
    assert positions == sorted(positions)


def test_draws_are_draws(tour):
    for _ in range(4):
        tour.play(A, B, None, stores=(24, 24))
        tour.play(B, A, None, stores=(24, 24))
    board = by_name(ratings.leaderboard(tour.store))
    for name in ("alice", "bob"):
        row = board.loc[name]
        assert (row["wins"], row["draws"], row["losses"]) == (0, 8, 0)
        assert row["score_pct"] == 50.0 and row["margin"] == 0.0
    assert board.loc["alice", "mu"] == pytest.approx(board.loc["bob", "mu"], abs=1e-9)
    assert board.loc["alice", "mu"] == pytest.approx(25.0, abs=1e-9)
    assert board.loc["alice", "sigma"] < 25 / 3
    assert board.loc["alice", "bt_elo"] == pytest.approx(1500.0)


def test_a_forfeit_is_a_loss_of_the_faulty_bot(tour):
    # alice was ahead on stores but timed out: bob wins by forfeit.
    tour.play(A, B, A)
    tour.play(A, B, B, stores=(20, 2), reason="timeout", faulty=A)
    tour.play(B, A, B, stores=(0, 0), reason="crash", faulty=A)
    board = by_name(ratings.leaderboard(tour.store))
    assert (board.loc["alice", "wins"], board.loc["alice", "losses"]) == (1, 2)
    assert board.loc["alice", "forfeits"] == 2
    assert board.loc["alice", "forfeit_reasons"] == "1 crash, 1 timeout"
    assert board.loc["bob", "forfeits"] == 0 and board.loc["bob", "forfeit_reasons"] == ""
    assert list(ratings.leaderboard(tour.store)["bot"]) == ["bob", "alice"]
    assert "2 (1 crash, 1 timeout)" in terminal.format_table(ratings.leaderboard(tour.store))


def test_counts_and_margin_against_hand_counts(tour):
    # stores are per side; after a SWAP the bot that started south owns the north store.
    tour.play(A, B, A, stores=(30, 18), think=(10.0, 20.0), moves=(5, 4))  # alice +12
    tour.play(B, A, B, stores=(26, 22), think=(30.0, 3.0), moves=(6, 2))  # alice -4
    tour.play(A, B, A, stores=(20, 28), swapped=True, think=(7.0, 1.0), moves=(3, 1))  # alice owns 28: +8
    tour.play(B, A, None, stores=(24, 24), think=(2.0, 2.0), moves=(1, 1))  # draw
    tour.play(A, C, C, stores=(25, 10), reason="illegal", faulty=A, think=(1.0, 0.0), moves=(1, 0))  # +15
    board = by_name(ratings.leaderboard(tour.store))
    alice, bob, carol = board.loc["alice"], board.loc["bob"], board.loc["carol"]
    assert (alice["games"], alice["wins"], alice["draws"], alice["losses"]) == (5, 2, 1, 2)
    assert (bob["games"], bob["wins"], bob["draws"], bob["losses"]) == (4, 1, 1, 2)
    assert (carol["games"], carol["wins"], carol["draws"], carol["losses"]) == (1, 1, 0, 0)
    assert alice["score_pct"] == pytest.approx(100 * 2.5 / 5)
    assert alice["margin"] == pytest.approx((12 - 4 + 8 + 0 + 15) / 5)
    assert bob["margin"] == pytest.approx((-12 + 4 - 8 + 0) / 4)
    assert carol["margin"] == pytest.approx(-15.0)
    assert alice["ms_per_move"] == pytest.approx((10 + 3 + 7 + 2 + 1) / (5 + 2 + 3 + 1 + 1))
    assert bob["ms_per_move"] == pytest.approx((20 + 30 + 1 + 2) / (4 + 6 + 1 + 1))
    assert math.isnan(carol["ms_per_move"])
    assert (alice["forfeits"], alice["forfeit_reasons"]) == (1, "1 illegal")
    pairs = queries.pair_totals(tour.store, queries.field_ids(tour.store)).set_index(["bot", "opp"])
    ids = {name: int(board.loc[name, "id"]) for name in ("alice", "bob", "carol")}
    ab = pairs.loc[(ids["alice"], ids["bob"])]
    assert (ab["games"], ab["wins"], ab["draws"], ab["losses"]) == (4, 2, 1, 1)


def test_retired_versions_leave_the_leaderboard(tour):
    old_a, new_a = make_bot("alice", "1"), make_bot("alice", "2")
    for _ in range(3):
        tour.play(old_a, B, old_a)
    tour.play(new_a, B, B)
    tour.play(B, C, B)
    tour.store.set_current([new_a, B, C])
    board = ratings.leaderboard(tour.store)
    assert sorted(board["bot"]) == ["alice", "bob", "carol"]
    alice = by_name(board).loc["alice"]
    assert alice["digest"] == "alice-v2"
    assert (alice["games"], alice["wins"], alice["losses"]) == (1, 0, 1)
    retired = queries.retired_bots(tour.store, queries.field_ids(tour.store))
    assert list(zip(retired["name"], retired["digest"], retired["games"], strict=True)) == [
        ("alice", "alice-v1", 3)
    ]


def test_a_current_bot_without_games_is_listed(tour):
    tour.play(A, B, A)
    tour.store.set_current([A, B, C])
    board = by_name(ratings.leaderboard(tour.store))
    assert board.loc["carol", "games"] == 0
    assert board.loc["carol", "mu"] == pytest.approx(25.0)
    assert math.isnan(board.loc["carol", "bt_elo"]) and math.isnan(board.loc["carol", "score_pct"])
    assert "carol" in terminal.format_table(ratings.leaderboard(tour.store))


def test_an_empty_store(tour):
    board = ratings.leaderboard(tour.store)
    assert board.empty and list(board.columns) == ratings.COLUMNS
    assert "no bots" in terminal.format_table(board)
    tour.store.set_current([A, B])
    board = ratings.leaderboard(tour.store)
    assert list(board["games"]) == [0, 0] and list(board["rank"]) == [1, 1]
    assert "alice" in terminal.format_table(board)


GAMES = [(A, B, A), (B, C, C), (C, A, None), (A, C, A), (B, A, B), (C, B, C), (A, B, A), (C, A, C)]


def fill(tour: Tournament, order: list[int]) -> None:
    """Store GAMES[i] for i in `order`, each under its schedule place (round = its index + 1)."""
    for i in order:
        s, n, w = GAMES[i]
        tour.play(s, n, w, round=i + 1)


def skills(store: Store) -> dict[str, tuple[float, float]]:
    board = ratings.leaderboard(store)
    return {r.bot: (r.mu, r.sigma) for r in board.itertuples()}


def test_ratings_follow_schedule_order_not_finishing_order(tmp_path):
    runs = []
    for k, order in enumerate(
        [list(range(len(GAMES))), list(reversed(range(len(GAMES)))), [3, 1, 7, 0, 5, 2, 6, 4]]
    ):
        t = Tournament(tmp_path / str(k))
        fill(t, order)
        runs.append(skills(t.store))
        t.store.close()
    assert runs[0] == runs[1] == runs[2]  # identical, not merely close
    # and they are the package's own ratings, game by game in schedule order
    env = trueskill.TrueSkill()
    want = {b.name: env.create_rating() for b in (A, B, C)}
    for s, n, w in GAMES:
        if w is None:
            want[s.name], want[n.name] = trueskill.rate_1vs1(want[s.name], want[n.name], drawn=True, env=env)
        else:
            loser = n if w is s else s
            want[w.name], want[loser.name] = trueskill.rate_1vs1(want[w.name], want[loser.name], env=env)
    for name, (mu, sigma) in runs[0].items():
        assert mu == pytest.approx(want[name].mu, abs=1e-9)
        assert sigma == pytest.approx(want[name].sigma, abs=1e-9)


def test_trueskill_depends_on_order_bradley_terry_does_not(tmp_path):
    first, second = Tournament(tmp_path / "a"), Tournament(tmp_path / "b")
    for s, n, w in GAMES:
        first.play(s, n, w)
    for s, n, w in reversed(GAMES):
        second.play(s, n, w)
    one, two = ratings.leaderboard(first.store), ratings.leaderboard(second.store)
    assert skills(first.store) != skills(second.store)
    a, b = by_name(one), by_name(two)
    for name in ("alice", "bob", "carol"):
        assert a.loc[name, "bt_elo"] == pytest.approx(b.loc[name, "bt_elo"], abs=1e-6)
        assert a.loc[name, "bt_pm"] == pytest.approx(b.loc[name, "bt_pm"], abs=1e-6)
    first.store.close()
    second.store.close()


def test_bradley_terry_orders_and_stays_finite_for_a_perfect_record(tour):
    for _ in range(5):
        tour.play(A, B, A)
        tour.play(B, A, A)
        tour.play(A, C, A)
        tour.play(C, A, A)
        tour.play(B, C, B)
        tour.play(C, B, C)
    board = ratings.leaderboard(tour.store)
    bt = by_name(board)
    assert bt.loc["alice", "bt_elo"] > bt.loc["bob", "bt_elo"]
    assert bt.loc["bob", "bt_elo"] == pytest.approx(bt.loc["carol", "bt_elo"])
    assert all(math.isfinite(x) for x in board["bt_elo"]) and all(math.isfinite(x) for x in board["bt_pm"])
    assert board["bt_elo"].mean() == pytest.approx(1500.0)
    # bob and carol split 5-5: the games cannot separate them
    assert list(board["close_above"]) == [False, False, True]


def test_a_bot_that_won_or_lost_every_game_shows_only_the_bound_its_games_give(tour, django_class):
    """Its games bound its strength on one side only; the other side of a ± would be only where the field's
    prior puts it (a bot that lost all of 140 games in a simulation was 2,936 Elo below the rest, far outside
    its ±: docs/statistics.md). The terminal, the page's tables and a student's own page show that bound."""
    from arena.server.views import mine

    for _ in range(5):  # alice wins every game, carol loses every game, bob in between
        for south, north, winner in ((A, B, A), (B, A, A), (A, C, A), (C, A, A), (B, C, B), (C, B, B)):
            tour.play(south, north, winner)
    board = ratings.leaderboard(tour.store)
    bt = by_name(board)
    top, low, mid = (bt.loc[name] for name in ("alice", "carol", "bob"))
    assert ratings.one_sided(top.score_pct) == "above" and ratings.one_sided(low.score_pct) == "below"
    assert ratings.one_sided(mid.score_pct) == "" and ratings.one_sided(math.nan) == ""
    lines = {line.split()[1]: line for line in terminal.format_table(board).splitlines()[1:4]}
    assert f"≥ {top.bt_elo - top.bt_pm:.0f}" in lines["alice"] and "±" not in lines["alice"]
    assert f"≤ {low.bt_elo + low.bt_pm:.0f}" in lines["carol"] and "±" not in lines["carol"]
    assert f"{mid.bt_elo:.0f} ± {mid.bt_pm:.0f}" in lines["bob"]
    # the leaderboard's small bar (left %, width %, Elo %) runs to the edge on the side the games leave open,
    # even where another bot's interval reaches further (a wide one of few games)
    few = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "bt_elo": [1700.0, 1300.0, 1450.0],
            "bt_pm": [100.0, 100.0, 400.0],
            "score_pct": [100.0, 0.0, 50.0],
        }
    )
    bars = {k: pytest.approx(v, abs=0.06) for k, v in page._intervals(few).items()}  # 1050..1850 Elo
    assert bars[1] == (68.75, 31.25, 81.25)  # 1600 to the right edge
    assert bars[2] == (0.0, 43.75, 31.25)  # the left edge to 1400
    assert bars[3] == (0.0, 100.0, 50.0)
    exported = io.StringIO()  # `arena export --standings` names the one end that holds
    with api.Tournament(tour.store.path.parent, create=False) as stored:
        stored.export_standings(exported)
    bounds = {r["bot"]: r["bound"] for r in map(json.loads, exported.getvalue().splitlines())}
    assert bounds == {"alice": "lower", "bob": "", "carol": "upper"}
    row = {"elo": low.bt_elo, "elo_lo": low.bt_elo - low.bt_pm, "elo_hi": low.bt_elo + low.bt_pm}
    elo, words = mine.elo_words({**row, "score_pct": 0.0})
    assert elo == f"≤ {round(row['elo_hi'])}" and "lost every game" in words
    assert mine.elo_words({**row, "score_pct": 40.0}) == (
        str(round(row["elo"])),
        f"95% between {round(row['elo_lo'])} and {round(row['elo_hi'])}",
    )
    assert mine.elo_words({**row, "score_pct": ""})[1].startswith("95% between")  # no place in the final


def test_close_marks_follow_interval_overlap(tour):
    for _ in range(40):
        tour.play(A, B, A)
        tour.play(B, A, A)
        tour.play(B, C, B)
        tour.play(C, B, B)
    for _ in range(20):
        tour.play(A, C, A)
        tour.play(C, A, A)
    for k in range(2):  # a few upsets, so nobody's record is perfect
        tour.play(B, A, B, round=1000 + k)
        tour.play(C, B, C, round=1002 + k)
    board = ratings.leaderboard(tour.store)
    assert list(board["bot"]) == ["alice", "bob", "carol"]
    assert list(board["place"]) == ["1", "2", "3"]
    assert not board["close_above"].any()  # 80 games a pair separate them clearly


def test_after_two_rounds_places_are_shared_and_a_higher_score_never_ranks_lower(tour):
    # 6 bots, two rounds of a double round robin with random results: the order follows the scores (every
    # pair met equally often), and bots the few games do not separate share one place, not a shading per row
    rng = random.Random(7)
    field = [make_bot(f"b{k}") for k in range(6)]
    strength = {b.name: k for k, b in enumerate(field)}
    for _ in range(2):
        for s in field:
            for n in field:
                if s is not n:
                    p = 0.5 + 0.08 * (strength[s.name] - strength[n.name])
                    tour.play(s, n, s if rng.random() < p else n)
    board = ratings.leaderboard(tour.store)
    scores = list(board["score_pct"])
    assert scores == sorted(scores, reverse=True)
    assert any("-" in p for p in board["place"])
    for k in range(1, len(board)):  # a place is the range the games allow: it holds the row's position
        first, *rest = (int(x) for x in board["place"][k].split("-"))
        assert first == board["rank"][k] <= k + 1 <= (rest or [first])[0]
        above_last = int(board["place"][k - 1].split("-")[-1])
        assert board["close_above"][k] == (first <= above_last)
    text = terminal.format_table(board)
    assert ratings.ORDER_RULE in text and board["place"][len(board) - 1] in text


def pair_table(*results: tuple[int, int, int, int, int]) -> ratings.pd.DataFrame:
    """Both rows of each pair from (bot, opp, wins, draws, losses)."""
    rows = []
    for bot, opp, won, drew, lost in results:
        games = won + drew + lost
        rows.append({"bot": bot, "opp": opp, "games": games, "wins": won, "draws": drew, "losses": lost})
        rows.append({"bot": opp, "opp": bot, "games": games, "wins": lost, "draws": drew, "losses": won})
    return ratings.pd.DataFrame(rows)


def test_bradley_terry_matches_the_two_bot_closed_form():
    # without the prior, two bots: the Elo gap is 400 log10(w / l) (a draw counts half)
    score = np.array([[0.0, 700.0], [300.0, 0.0]])
    total = np.array([[0.0, 1000.0], [1000.0, 0.0]])
    theta = posterior.fit(score, total)
    assert posterior.ELO_PER_NAT * (theta[0] - theta[1]) == pytest.approx(
        400 * math.log10(700 / 300), abs=1e-6
    )
    assert theta.sum() == pytest.approx(0.0, abs=1e-12)


def test_bots_that_always_draw_are_too_close_to_call(tour):
    for _ in range(10):
        tour.play(A, B, None, stores=(24, 24))
        tour.play(B, A, None, stores=(24, 24))
    board = ratings.leaderboard(tour.store)
    assert list(board["bt_elo"]) == pytest.approx([1500.0, 1500.0])
    assert list(board["close_above"]) == [False, True] and list(board["close_below"]) == [True, False]


def test_a_perfectly_ordered_field_is_finite_ordered_and_takes_one_place_each():
    # 100-0 in every pair of 12 bots: each place clearly above the next (a Fisher-information ± without
    # the prior would see no information in such a record and call them too close)
    n = 12
    a, b = np.triu_indices(n, 1)
    pairs = posterior.Pairs.empty(n).add(np.repeat(a, 50), np.repeat(b, 50), np.full(50 * len(a), 4))
    post = posterior.posterior(pairs)
    assert np.isfinite(post.elo).all() and np.isfinite(post.pm()).all()
    assert list(post.order()) == list(range(n))
    judged = settle.verdict(post, settle.Rule(), [f"b{k}" for k in range(n)])
    assert judged.settled and list(judged.places) == [str(k + 1) for k in range(n)]


def test_bots_that_never_answered_are_not_ranked_and_say_why(tour):
    # two broken bots (random bytes named bot.py) win games from each other's crashes; they rank nowhere
    s1, s2 = make_bot("bytes1"), make_bot("bytes2")
    crash = {"reason": "crash", "stores": (0, 0)}
    for _ in range(3):
        tour.play(A, B, A)
        tour.play(B, A, B, moves=(4, 5))
        tour.play(s1, s2, s2, faulty=s1, moves=(0, 0), **crash)
        tour.play(s2, s1, s1, faulty=s2, moves=(0, 0), **crash)
        for broken in (s1, s2):
            tour.play(A, broken, A, faulty=broken, moves=(1, 0), **crash)
            tour.play(broken, B, B, faulty=broken, moves=(0, 0), **crash)
    board = ratings.leaderboard(tour.store)
    assert set(board["bot"][:2]) == {"alice", "bob"} and set(board["bot"][2:]) == {"bytes1", "bytes2"}
    assert list(board["place"][2:]) == ["-", "-"] and all(p != "-" for p in board["place"][:2])
    assert all(w.startswith("never gave a first answer") and "crash" in w for w in board["unranked"][2:])
    assert (board["unranked"][:2] == "").all()
    text = terminal.format_table(board)
    assert "not ranked: bytes1: never gave a first answer (9 crash)" in text
    # the page lists them apart, off the leaderboard's table
    from arena.report import page

    html = page.render(tour.store)
    table = html[
        html.index('id="leaderboard-table"') : html.index("</table>", html.index('id="leaderboard-table"'))
    ]
    assert 'data-bot="alice"' in table and 'data-bot="bytes1"' not in table
    unranked = html[html.index('id="unranked"') : html.index("</p>", html.index('id="unranked"'))]
    assert "bytes1" in unranked and "bytes2" in unranked and "never gave a first answer" in unranked


# --- the incremental state (ratings.advance) ----------------------------------------------------------


def full_pass(store: Store) -> dict[int, Skill]:
    field = queries.field_ids(store)
    return ratings.trueskill_ratings(queries.rating_games(store, field), field)


def test_advance_rates_only_what_is_new_and_equals_a_full_pass_after_games_stored_out_of_order(tour):
    rng = random.Random(5)
    bots = [make_bot(n) for n in "abcde"]
    rounds = rng.sample(range(1, 400), 60)  # every game its own place in schedule order, stored shuffled
    kept = None
    for k, rnd in enumerate(rounds):
        s, n = rng.sample(bots, 2)
        tour.play(s, n, rng.choice([s, n, None]), round=rnd)
        if k % 7 == 6:  # a snapshot now and then, as the ladder writes them
            kept = ratings.advance(tour.store, kept, queries.field_ids(tour.store))
            assert kept.skills == full_pass(tour.store)  # float for float, late games or not
            assert kept.games == k + 1
    # games stored after the kept key are all that the next snapshot reads
    kept = ratings.advance(tour.store, kept, queries.field_ids(tour.store))
    tour.play(bots[0], bots[1], bots[0], round=1000)
    read = list(queries.rating_games_after(tour.store, kept.field, kept.key))
    assert len(read) == 1
    assert ratings.advance(tour.store, kept, kept.field).skills == full_pass(tour.store)


def test_advance_starts_again_for_a_new_field_and_a_removed_game(tour):
    a2 = make_bot("alice", "2")
    for s, n, w in GAMES:
        tour.play(s, n, w)
    kept = ratings.advance(tour.store, None, queries.field_ids(tour.store))
    tour.store.set_current([a2, B, C])  # alice uploads a new version: her old games drop out
    tour.play(a2, B, a2)
    tour.play(C, a2, None)
    field = queries.field_ids(tour.store)
    moved = ratings.advance(tour.store, kept, field)
    assert moved.field == tuple(sorted(field)) and moved.games == 2 + 2  # bob and carol's two, a2's two
    assert moved.skills == full_pass(tour.store)
    first = min(queries.rating_games_after(tour.store, field, (0, "", 0)))[0]  # a field game, rated
    tour.store.db.execute("DELETE FROM games WHERE id = ?", (first,))
    again = ratings.advance(tour.store, moved, field)
    assert again.games == 3 and again.skills == full_pass(tour.store)


def test_the_kept_history_ends_at_the_current_ratings_and_stays_a_charts_worth(tour):
    bots = [make_bot(n) for n in "abc"]
    kept = None
    for k in range(50):
        tour.play(bots[k % 3], bots[(k + 1) % 3], bots[k % 3] if k % 4 else None)
        kept = ratings.advance(tour.store, kept, queries.field_ids(tour.store))
        kept = dataclasses.replace(kept, target=4)
    history = kept.history()
    field = queries.field_ids(tour.store)
    every_game = ratings.history(queries.rating_games(tour.store, field), field, 50, points=50)
    for k, x in enumerate(kept.sampled.games):  # each kept point is the ratings after its game
        assert {i: v[k] for i, v in kept.sampled.mu.items()} == {i: v[x] for i, v in every_game.mu.items()}
    assert history.games[0] == 0 and history.games[-1] == 50
    assert 4 <= len(kept.sampled.games) - 1 <= 2 * 4
    xs = kept.sampled.games
    assert all(b - a == kept.every for a, b in itertools.pairwise(xs))
    for i, skill in full_pass(tour.store).items():
        assert (history.mu[i][-1], history.sigma[i][-1]) == (skill.mu, skill.sigma)


def test_trueskill_counts_a_repeated_game_once_in_a_full_pass_and_in_advance(tour):
    """Deterministic bots replaying one game from one opening: the Elo counts it once, and so must TrueSkill,
    else each replay made it surer of the same one result."""
    alice, bob, carol = make_bot("alice"), make_bot("bob"), make_bot("carol")

    def same_game(south: Bot, north: Bot, winner: Bot) -> GameRecord:
        return GameRecord(
            rules="kalah", south=south.name, north=north.name, moves=(1, 3), south_store=30, north_store=18,
            winner=winner.name, reason="normal", faulty=None, detail="", move_ms=(1.0, 2.0),
            think_ms={south.name: 1.0, north.name: 1.0}, moves_made={south.name: 1, north.name: 1},
            stderr={south.name: "", north.name: ""},
        )  # fmt: skip

    tour.store.add_game(Slot(1, "0", alice, bob), same_game(alice, bob, alice))
    tour.play(bob, carol, bob, round=2)
    once = full_pass(tour.store)
    kept = ratings.advance(tour.store, None, queries.field_ids(tour.store))
    for rnd in range(3, 13):  # the same game again and again, and one that differs only in its sides
        tour.store.add_game(Slot(rnd, "0", alice, bob), same_game(alice, bob, alice))
        kept = ratings.advance(tour.store, kept, queries.field_ids(tour.store))
    assert full_pass(tour.store) == once
    assert kept.skills == once and kept.games == 12
    history = ratings.rating_history(tour.store, queries.field_ids(tour.store))
    assert history.games[-1] == 12 and {i: v[-1] for i, v in history.mu.items()} == {
        i: s.mu for i, s in once.items()
    }
    tour.store.add_game(Slot(20, "0", bob, alice), same_game(bob, alice, alice))  # the other side: new
    assert full_pass(tour.store)[queries.field_ids(tour.store)[0]] != once[queries.field_ids(tour.store)[0]]
    assert ratings.advance(tour.store, kept, queries.field_ids(tour.store)).skills == full_pass(tour.store)
