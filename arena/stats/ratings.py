"""Ratings from the store: TrueSkill in schedule order, plain counts beside it, and an order-free check.

The leaderboard is ordered by a Bradley-Terry fit over the pairwise counts (Elo scale): it ignores the order
of games, so in a round robin where every pair met equally often its order is the order of scores; its
uncertainty (arena/stats/posterior.py) and the stopping rule (settle.py) say which neighbours the games
do not order: those bots share a place ("3-5"), and each bot has its odds of every place.
TrueSkill (mu - 3 sigma) stays every bot's rating beside it; it depends on the order of games, so it is
computed in schedule order (round, ordinal), never in the order games happened to finish.

Only the current field's games count (both bots current versions); a changed bot is a new version and its
older versions drop out. The games stream from SQLite one at a time, so memory does not grow with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import trueskill

from arena.store import queries
from arena.store.writer import Store

if TYPE_CHECKING:
    from arena.stats.settle import Rule, Verdict


Game = tuple[
    int, int, int | None, bool
]  # (south, north, winner or None for a draw, repeat): queries.rating_games


@dataclass(frozen=True, slots=True)
class Skill:
    """A TrueSkill belief: mean and uncertainty of a bot's playing strength."""

    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: the strength the bot has almost surely; what the leaderboard sorts by."""
        return self.mu - 3.0 * self.sigma


@dataclass(frozen=True, slots=True)
class Model:
    """A TrueSkill environment's numbers, read once, for the closed-form two-player update.

    `trueskill.rate_1vs1` runs the general factor graph (~160 us a game); for two players the graph has one
    exact solution, computed here with the package's own v/w functions and draw margin, so the ratings are
    the package's to 1e-9 at a few microseconds a game.
    """

    env: trueskill.TrueSkill
    beta2: float
    tau2: float
    margin: float  # draw margin of a two-player game, on the performance scale

    @classmethod
    def of(cls, env: trueskill.TrueSkill | None = None) -> Model:
        env = env if env is not None else trueskill.TrueSkill()
        if callable(env.draw_probability):
            raise ValueError("the closed-form update needs a fixed draw probability, not a function")
        margin = trueskill.calc_draw_margin(env.draw_probability, 2, env=env)
        return cls(env, env.beta**2, env.tau**2, margin)

    def initial(self) -> Skill:
        return Skill(self.env.mu, self.env.sigma)

    def update(
        self, mu1: float, sigma1: float, mu2: float, sigma2: float, drawn: bool
    ) -> tuple[float, float, float, float]:
        """New (mu1, sigma1, mu2, sigma2) after player 1 beat player 2, or they drew.

        Where trueskill would raise FloatingPointError (an upset, or a draw, so far outside the beliefs that
        doubles cannot express the truncated Gaussian), w takes its limit instead (1 for a shock, 0 for a
        certainty), so one freak game cannot stop a tournament's report.
        """
        env = self.env
        var1 = sigma1 * sigma1 + self.tau2
        var2 = sigma2 * sigma2 + self.tau2
        c2 = 2.0 * self.beta2 + var1 + var2
        c = math.sqrt(c2)
        t, e = (mu1 - mu2) / c, self.margin / c
        if drawn:
            v = env.v_draw(t, e)
            try:
                w = env.w_draw(t, e)
            except FloatingPointError:
                w = 1.0
        else:
            v = env.v_win(t, e)
            try:
                w = env.w_win(t, e)
            except FloatingPointError:
                w = 1.0 if t < e else 0.0
        return (
            mu1 + var1 / c * v,
            math.sqrt(var1 * (1.0 - var1 / c2 * w)),
            mu2 - var2 / c * v,
            math.sqrt(var2 * (1.0 - var2 / c2 * w)),
        )

    def rate_1vs1(self, first: Skill, second: Skill, drawn: bool = False) -> tuple[Skill, Skill]:
        """Like `trueskill.rate_1vs1`: `first` won (or drew) against `second`."""
        m1, s1, m2, s2 = self.update(first.mu, first.sigma, second.mu, second.sigma, drawn)
        return Skill(m1, s1), Skill(m2, s2)


def trueskill_ratings(
    games: Iterable[Game], bots: Iterable[int], model: Model | None = None
) -> dict[int, Skill]:
    """TrueSkill of every bot after `games` (south, north, winner or None for a draw, repeat), taken in the
    order given. The winner field already makes a forfeit a loss of the faulty bot; a repeat of an earlier
    game (deterministic bots meeting again in the same position) changes nothing, as in the Elo: TrueSkill
    would take it as new evidence and grow surer of the same one result each time it was replayed."""
    model = model or Model.of()
    start = model.initial()
    mu = dict.fromkeys(bots, start.mu)
    sigma = dict.fromkeys(mu, start.sigma)
    for game in games:
        _rate(model, mu, sigma, game)
    return {i: Skill(mu[i], sigma[i]) for i in mu}


def _rate(model: Model, mu: dict[int, float], sigma: dict[int, float], game: Game) -> None:
    """Update `mu` and `sigma` in place by one game (south, north, winner or None for a draw, repeat): a
    repeat leaves them as they are."""
    south, north, winner, repeat = game
    if repeat:
        return
    a, b = (north, south) if winner == north else (south, north)  # the winner first; a draw as given
    mu[a], sigma[a], mu[b], sigma[b] = model.update(mu[a], sigma[a], mu[b], sigma[b], winner is None)


@dataclass(frozen=True, slots=True)
class History:
    """TrueSkill of every bot as the tournament went on: after `games[k]` games (schedule order), bot b
    stood at `mu[b][k]` ± `sigma[b][k]`. Sampled ~120 times (a chart is 720 px wide), so a chart of
    100,000 games is as small as one of 1,000."""

    games: tuple[int, ...]
    mu: dict[int, tuple[float, ...]]
    sigma: dict[int, tuple[float, ...]]


def history(
    games: Iterable[Game],
    bots: Iterable[int],
    total: int,
    points: int = 120,
    model: Model | None = None,
) -> History:
    """The same ratings as `trueskill_ratings`, sampled every ceil(total / points) games and after the
    last; `total` is how many games `games` yields (known from the store before streaming them)."""
    model = model or Model.of()
    start = model.initial()
    ids = list(bots)
    mu = dict.fromkeys(ids, start.mu)
    sigma = dict.fromkeys(ids, start.sigma)
    every = max(1, -(-total // points))
    xs: list[int] = [0]
    mus: dict[int, list[float]] = {i: [start.mu] for i in ids}
    sigmas: dict[int, list[float]] = {i: [start.sigma] for i in ids}
    done = 0
    for game in games:
        _rate(model, mu, sigma, game)
        done += 1
        if done % every == 0:
            xs.append(done)
            for i in ids:
                mus[i].append(mu[i])
                sigmas[i].append(sigma[i])
    if xs[-1] != done:
        xs.append(done)
        for i in ids:
            mus[i].append(mu[i])
            sigmas[i].append(sigma[i])
    return History(tuple(xs), {i: tuple(v) for i, v in mus.items()}, {i: tuple(v) for i, v in sigmas.items()})


def rating_history(store: Store, field: Iterable[int], points: int = 120) -> History:
    """`history` of the field's games in the store, in schedule order."""
    ids = list(field)
    total = int(queries.game_facts(store, ids).iloc[0]["field_games"] or 0)
    return history(queries.rating_games(store, ids), ids, total, points)


POINTS = 60  # a kept history's target: 60 to 120 points, as many as the report's chart at most


@dataclass(frozen=True, slots=True)
class Rated:
    """TrueSkill of a field after its games up to `key` in schedule order, with its history: what a playing
    ladder keeps between snapshots, so that each rates only the games since (`advance`), and its standings
    and bot pages both read this one pass.

    `check` is (count, sum of ids, sum of winner ids) of the games rated: the store's field games at or
    before `key` must still add up to it. They do not when a game is stored after one with a later key (a
    parallel worker's, or an adaptive batch's: its rounds count each pair's meetings, so its games fall
    between those played before) or one is removed; then the field is rated again from the start.
    `sampled` keeps the ratings after every `every`-th game, `every` doubling as the points pass twice
    `target` (POINTS): a chart's worth, however many games."""

    field: tuple[int, ...]
    key: queries.Key  # the last game rated; (0, "", 0) before the first
    check: tuple[int, int, int]
    skills: dict[int, Skill]
    every: int
    sampled: History
    target: int = POINTS

    @classmethod
    def start(cls, field: Iterable[int], target: int = POINTS, model: Model | None = None) -> Rated:
        """No game rated yet: every bot of `field` at the model's initial belief."""
        ids = tuple(sorted(int(i) for i in field))
        first = (model or Model.of()).initial()
        empty = History((0,), {i: (first.mu,) for i in ids}, {i: (first.sigma,) for i in ids})
        return cls(ids, (0, "", 0), (0, 0, 0), dict.fromkeys(ids, first), 1, empty, target)

    @property
    def games(self) -> int:
        return self.check[0]

    def history(self) -> History:
        """The sampled points and, last, the current ratings."""
        h = self.sampled
        if h.games[-1] == self.games:
            return h
        return History(
            (*h.games, self.games),
            {i: (*v, self.skills[i].mu) for i, v in h.mu.items()},
            {i: (*v, self.skills[i].sigma) for i, v in h.sigma.items()},
        )


def advance(store: Store, kept: Rated | None, field: Iterable[int], model: Model | None = None) -> Rated:
    """`kept` advanced by the field's games stored since it was rated, or, where it is no longer a prefix
    of them (another field, a game stored out of order or removed: `Rated`), the field's games from the
    start. The same ratings as `trueskill_ratings` over every game, float for float."""
    model = model or Model.of()
    ids = tuple(sorted(int(i) for i in field))
    target = kept.target if kept else POINTS
    if kept is None or kept.field != ids or queries.rated_check(store, ids, kept.key) != kept.check:
        kept = Rated.start(ids, target, model)
    mu = {i: s.mu for i, s in kept.skills.items()}
    sigma = {i: s.sigma for i, s in kept.skills.items()}
    xs = list(kept.sampled.games)
    mus = {i: list(v) for i, v in kept.sampled.mu.items()}
    sigmas = {i: list(v) for i, v in kept.sampled.sigma.items()}
    count, id_sum, winner_sum = kept.check
    key, every = kept.key, kept.every
    for gid, rnd, ordinal, south, north, winner, repeat in queries.rating_games_after(store, ids, kept.key):
        _rate(model, mu, sigma, (south, north, winner, repeat))
        count, id_sum, winner_sum, key = (
            count + 1,
            id_sum + gid,
            winner_sum + (winner or 0),
            (rnd, ordinal, gid),
        )
        if count % every:
            continue
        xs.append(count)
        for i in ids:
            mus[i].append(mu[i])
            sigmas[i].append(sigma[i])
        if len(xs) > 2 * target + 1:  # thinned to every other point: the chart keeps its width's worth
            every *= 2
            keep = [k for k, x in enumerate(xs) if x % every == 0]
            xs = [xs[k] for k in keep]
            mus = {i: [v[k] for k in keep] for i, v in mus.items()}
            sigmas = {i: [v[k] for k in keep] for i, v in sigmas.items()}
    sampled = History(
        tuple(xs), {i: tuple(v) for i, v in mus.items()}, {i: tuple(v) for i, v in sigmas.items()}
    )
    skills = {i: Skill(mu[i], sigma[i]) for i in ids}
    return Rated(ids, key, (count, id_sum, winner_sum), skills, every, sampled, target)


def _reasons(rows: pd.DataFrame) -> str:
    """'2 crash, 1 timeout' from (reason, count) rows, most frequent first."""
    rows = rows.sort_values(["count", "reason"], ascending=[False, True])
    return ", ".join(f"{int(c)} {r}" for r, c in zip(rows["reason"], rows["count"], strict=True))


COLUMNS = [
    "rank", "place", "bot", "conservative", "mu", "sigma", "games", "distinct", "wins", "draws", "losses",
    "score_pct", "margin", "forfeits", "forfeit_reasons", "ms_per_move", "bt_elo", "bt_pm", "rank_odds",
    "close_above", "close_below", "id", "digest", "author", "unranked", "against",
]  # fmt: skip
_SUMS = ["games", "distinct_games", "wins", "draws", "losses", "margin_sum", "forfeits", "think_ms", "moves"]


@dataclass(frozen=True, slots=True)
class Standings:
    """The leaderboard and the pairwise table it was built from (the report's head-to-head matrix)."""

    board: pd.DataFrame
    pairs: pd.DataFrame
    field: tuple[int, ...]
    verdict: Verdict | None = None  # the stopping rule on the bots with games (None: fewer than two)


ORDER_RULE = (
    "Ordered by Elo (Bradley-Terry, fitted to all games at once; TrueSkill's mu − 3σ is shown but does not "
    "decide the order): a place is the range the games allow the bot (3-5), from one plus the bots above "
    "it with 95% confidence to the count less those below it."
)


def one_sided(score_pct: float | None) -> str:
    """'below' for a bot that scored nothing in the games it is rated on, 'above' for one that lost nothing,
    else '': its games bound its strength on that side only, and the other side of its interval is where
    the field's prior puts it (docs/statistics.md: a bot that lost every game may be further below)."""
    if score_pct is None or math.isnan(score_pct):
        return ""
    return "below" if score_pct <= 0.0 else "above" if score_pct >= 100.0 else ""


def elo_text(elo: float, pm: float, score_pct: float, none: str = "–") -> str:
    """A bot's Elo as a table shows it, '1620 ± 85'; of a bot whose games bound it on one side only (see
    `one_sided`), that bound: '≤ 1180' for one that lost every game, '≥ 2100' for one that won every game.
    `none` where there is no Elo (no games)."""
    if math.isnan(elo):
        return none
    side = one_sided(score_pct)
    if side:
        return f"≤ {elo + pm:.0f}" if side == "below" else f"≥ {elo - pm:.0f}"
    return f"{elo:.0f} ± {pm:.0f}"


def place_text(first: int, last: int) -> str:
    """'3' or '3-5'."""
    return str(first) if first == last else f"{first}-{last}"


def order_rule(rule: Rule) -> str:
    """ORDER_RULE at `rule`'s confidence."""
    return ORDER_RULE.replace("95%", f"{rule.confidence * 100:g}%")


def leaderboard(store: Store, model: Model | None = None) -> pd.DataFrame:
    """One row per bot of the current field, best first (see ORDER_RULE), with `rank` (the first of its
    places) and `place` ('3-5' for a shared place).

    Counts come from SQL aggregates; `close_above`/`close_below` mark a place shared with the row above or
    below: the games do not tell those bots apart, whatever the order of the table.
    """
    return standings(store, model).board


def standings(store: Store, model: Model | None = None, rated: Rated | None = None) -> Standings:
    """The leaderboard with its pairwise table, read from the store in one pass of each query; its
    TrueSkill `rated`'s where that is of this field (`advance`), else from a pass over the field's games."""
    field = queries.field_ids(store)
    bots = queries.field_bots(store, field)
    ids = [int(i) for i in bots["id"]]
    if rated is not None and rated.field == tuple(sorted(ids)):
        skills = rated.skills
    else:
        skills = trueskill_ratings(queries.rating_games(store, field), ids, model)
    pairs = queries.pair_totals(store, field)
    reasons = queries.forfeit_reasons(store, field)
    names = dict(zip(ids, bots["name"], strict=True))

    board = bots.rename(columns={"name": "bot"})
    board.index = pd.Index(ids)
    totals = pairs.astype({c: float for c in _SUMS}).groupby("bot")[_SUMS].sum()
    board = board.join(totals.reindex(board.index, fill_value=0.0))
    board = board.astype({c: int for c in ("games", "wins", "draws", "losses", "forfeits", "moves")})
    # W-D-L and the score count the distinct games, as the Elo does (a repeat is no new evidence); `games`
    # is every game played, `distinct` those that were not an exact repeat of an earlier one
    board["distinct"] = board["distinct_games"].astype(int)
    board["mu"] = [skills[i].mu for i in ids]
    board["sigma"] = [skills[i].sigma for i in ids]
    board["conservative"] = board["mu"] - 3.0 * board["sigma"]
    played = board["games"] > 0
    counted = board["distinct"].where(board["distinct"] > 0)
    board["score_pct"] = (100.0 * (board["wins"] + 0.5 * board["draws"]) / counted).where(played)
    board["margin"] = (board["margin_sum"] / board["games"]).where(played)
    board["ms_per_move"] = (board["think_ms"] / board["moves"]).where(board["moves"] > 0)
    by_bot = {int(b): _reasons(rows) for b, rows in reasons.groupby("bot")}
    board["forfeit_reasons"] = [by_bot.get(i, "") for i in ids]
    # A bot that never gave a first answer (random bytes named bot.py) is not ranked: its wins are the other
    # broken bots' forfeits, and every bot beats it alike. It is listed last, with why.
    silent = (board["moves"] == 0) & (board["forfeits"] > 0)
    board["unranked"] = [
        f"never gave a first answer ({why})" if quiet else ""
        for quiet, why in zip(silent, board["forfeit_reasons"], strict=True)
    ]
    playing = [i for i in ids if board.at[i, "games"] > 0 and not silent[i]]

    judged = None
    pm: np.ndarray = np.zeros(0)
    elo: np.ndarray = np.zeros(0)
    odds: np.ndarray = np.zeros((0, 0))
    if len(playing) >= 2:
        from arena.stats.posterior import from_games, posterior
        from arena.stats.settle import Rule, verdict

        post = posterior(from_games(queries.pair_games(store, playing), playing))
        judged = verdict(post, Rule.of(store.stopping()), [names[i] for i in playing])
        odds, elo, pm = post.rank_odds(), post.elo, post.pm()
    index = {b: k for k, b in enumerate(playing)} if judged else {}
    board["bt_elo"] = [elo[index[i]] if i in index else math.nan for i in ids]
    board["bt_pm"] = [pm[index[i]] if i in index else math.nan for i in ids]
    board["rank_odds"] = [tuple(float(x) for x in odds[index[i]]) if i in index else () for i in ids]
    # Each bot's verdict against each reference bot of the rule: "better", "worse", "within", "open"
    against = judged.against() if judged else {}
    board["against"] = [{ref: v.word for ref, v in against.get(names[i], {}).items()} for i in ids]

    # The verdict's order and places; bots without games share the places below them, and bots never
    # ranked come last, placed '-'.
    order = [playing[k] for k in judged.order] if judged else []
    places = list(judged.places) if judged else []
    ranked = set(order)
    rest = sorted((i for i in ids if i not in ranked and not silent[i]), key=lambda i: names[i])
    if rest:
        places += [place_text(len(order) + 1, len(order) + len(rest))] * len(rest)
    unranked = sorted((i for i in ids if silent[i]), key=lambda i: names[i])
    board = board.loc[order + rest + unranked]
    board["rank"] = [int(p.split("-")[0]) for p in places] + [len(places) + 1] * len(unranked)
    board["place"] = places + ["-"] * len(unranked)
    # A row's place overlaps the row above's (or below's): the games do not yet order the two
    first = board["rank"].tolist()
    last = [int(p.split("-")[-1]) if p != "-" else first[k] for k, p in enumerate(board["place"])]
    board["close_above"] = [k > 0 and first[k] <= last[k - 1] for k in range(len(first))]
    board["close_below"] = [k + 1 < len(first) and first[k + 1] <= last[k] for k in range(len(first))]
    return Standings(board[COLUMNS].reset_index(drop=True), pairs, tuple(ids), judged)
