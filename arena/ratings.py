"""Ratings from the store: TrueSkill in schedule order, plain counts beside it, and an order-free check.

TrueSkill is what the leaderboard sorts by (mu - 3 sigma: a bot climbs by winning, not by luck in a few
games). It depends on the order of games, so it is computed in schedule order (round, ordinal), never in the
order games happened to finish, and a Bradley-Terry fit over the pairwise counts sits beside it: that fit
ignores order, and its intervals tell a teacher which adjacent places the games do not separate.

Only the current field's games count (both bots current versions); a changed bot is a new version and its
older versions drop out. The games stream from SQLite one at a time, so memory does not grow with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import trueskill

from arena import store as st
from arena.store import Store

ELO_CENTRE = 1500.0  # Bradley-Terry points are shown on the Elo scale, the field's mean at 1500
ELO_PER_NAT = 400.0 / math.log(10.0)
Z95 = 1.959963984540054  # the ± shown is a 95% interval
PRIOR_DRAWS = 1.0  # virtual drawn games of every bot against an average opponent (see bradley_terry)


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
    games: Iterable[tuple[int, int, int | None]], bots: Iterable[int], model: Model | None = None
) -> dict[int, Skill]:
    """TrueSkill of every bot after `games` (south, north, winner or None for a draw), taken in the order
    given. The winner field already makes a forfeit a loss of the faulty bot."""
    model = model or Model.of()
    start = model.initial()
    mu = dict.fromkeys(bots, start.mu)
    sigma = dict.fromkeys(mu, start.sigma)
    update = model.update
    for south, north, winner in games:
        if winner is None:
            a, b = south, north
        else:
            a, b = (south, north) if winner == south else (north, south)
        mu[a], sigma[a], mu[b], sigma[b] = update(mu[a], sigma[a], mu[b], sigma[b], winner is None)
    return {i: Skill(mu[i], sigma[i]) for i in mu}


@dataclass(frozen=True, slots=True)
class Strength:
    """A Bradley-Terry strength on the Elo scale with the half-width of its 95% interval."""

    elo: float
    pm: float


def bradley_terry(
    pairs: pd.DataFrame, bots: Iterable[int], prior_draws: float = PRIOR_DRAWS
) -> dict[int, Strength]:
    """Order-free strengths from pairwise counts (columns bot, opp, wins, draws, losses; a draw counts half).

    Fitted by the MM algorithm (Hunter 2004). A bot that won, or lost, every game has no finite maximum
    likelihood strength, so every bot also gets `prior_draws` virtual draws against an average opponent:
    a weak prior that keeps such strengths finite (and clearly uncertain) and hardly moves bots with many
    games. The ± comes from the Fisher information with the field's mean held fixed (sum-to-zero), so it is
    about a bot's place within this field. Bots without games get no strength.
    """
    played = pairs[pairs["games"] > 0] if len(pairs) else pairs
    ids = [i for i in bots if i in set(played["bot"])] if len(played) else []
    if not ids:
        return {}
    index = {b: k for k, b in enumerate(ids)}
    n = len(ids)
    score = np.zeros((n, n))  # score[i, j]: points of i against j (win 1, draw 1/2)
    games = np.zeros((n, n))
    for row in played.itertuples(index=False):
        i, j = index[int(row.bot)], index[int(row.opp)]
        score[i, j] += row.wins + 0.5 * row.draws
        games[i, j] += row.games
    points = score.sum(axis=1) + 0.5 * prior_draws
    p = np.ones(n)
    for _ in range(100_000):
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1) + prior_draws / (p + 1.0)
        new = points / denom
        new /= math.exp(np.log(new).mean())  # the scale is free; keep the geometric mean at 1
        done = np.max(np.abs(np.log(new) - np.log(p))) < 1e-12
        p = new
        if done:
            break
    theta = np.log(p)
    q = p[:, None] * p[None, :] / (p[:, None] + p[None, :]) ** 2
    info = -games * q
    np.fill_diagonal(info, 0.0)
    info[np.diag_indices(n)] = -info.sum(axis=1) + prior_draws * p / (p + 1.0) ** 2
    centre = np.eye(n) - 1.0 / n
    cov = centre @ np.linalg.inv(info) @ centre
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    elo = ELO_CENTRE + ELO_PER_NAT * (theta - theta.mean())
    return {b: Strength(float(elo[k]), float(Z95 * ELO_PER_NAT * se[k])) for b, k in index.items()}


def _reasons(rows: pd.DataFrame) -> str:
    """'2 crash, 1 timeout' from (reason, count) rows, most frequent first."""
    rows = rows.sort_values(["count", "reason"], ascending=[False, True])
    return ", ".join(f"{int(c)} {r}" for r, c in zip(rows["reason"], rows["count"], strict=True))


COLUMNS = [
    "rank", "bot", "conservative", "mu", "sigma", "games", "wins", "draws", "losses", "score_pct", "margin",
    "forfeits", "forfeit_reasons", "ms_per_move", "bt_elo", "bt_pm", "close_above", "close_below", "id",
    "digest", "author",
]  # fmt: skip


def leaderboard(store: Store, model: Model | None = None) -> pd.DataFrame:
    """One row per bot of the current field, best first (by mu - 3 sigma), with a `rank` column.

    Counts come from SQL aggregates; `close_above`/`close_below` mark places whose Bradley-Terry intervals
    overlap the neighbour's: the games do not tell those bots apart, whatever the order of the table.
    """
    field = st.field_ids(store)
    bots = st.field_bots(store, field)
    skills = trueskill_ratings(st.rating_games(store, field), bots["id"].tolist(), model)
    pairs = st.pair_totals(store, field)
    reasons = st.forfeit_reasons(store, field)
    strengths = bradley_terry(pairs, bots["id"].tolist())

    sums = ["games", "wins", "draws", "losses", "margin_sum", "forfeits", "think_ms", "moves"]
    totals = pairs.groupby("bot")[sums].sum() if len(pairs) else pd.DataFrame(columns=sums)
    board = bots.rename(columns={"name": "bot"}).set_index("id", drop=False)
    board = board.join(totals.reindex(board.index).fillna(0))
    for col in ("games", "wins", "draws", "losses", "forfeits", "moves"):
        board[col] = board[col].astype(int)
    board["mu"] = [skills[i].mu for i in board.index]
    board["sigma"] = [skills[i].sigma for i in board.index]
    board["conservative"] = board["mu"] - 3.0 * board["sigma"]
    played = board["games"] > 0
    board["score_pct"] = (100.0 * (board["wins"] + 0.5 * board["draws"]) / board["games"]).where(played)
    board["margin"] = (board["margin_sum"] / board["games"]).where(played)
    board["ms_per_move"] = (board["think_ms"] / board["moves"]).where(board["moves"] > 0)
    by_bot = {int(b): _reasons(rows) for b, rows in reasons.groupby("bot")} if len(reasons) else {}
    board["forfeit_reasons"] = [by_bot.get(int(i), "") for i in board.index]
    board["bt_elo"] = [strengths[i].elo if i in strengths else math.nan for i in board.index]
    board["bt_pm"] = [strengths[i].pm if i in strengths else math.nan for i in board.index]

    board = board.sort_values(["conservative", "mu", "bot"], ascending=[False, False, True])
    board["rank"] = board["conservative"].rank(method="min", ascending=False).astype(int)
    lo, hi = board["bt_elo"] - board["bt_pm"], board["bt_elo"] + board["bt_pm"]
    overlap = (lo < hi.shift(1)) & (hi > lo.shift(1))  # with the place above; NaN compares False
    board["close_above"] = overlap.to_numpy()
    board["close_below"] = np.append(overlap.to_numpy()[1:], False)
    return board[COLUMNS].reset_index(drop=True)


def _num(x: float, fmt: str, missing: str = "-") -> str:
    return missing if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def format_table(board: pd.DataFrame) -> str:
    """The leaderboard for a terminal: compact columns, a ≈ before places too close to call."""
    if board.empty:
        return "no bots in the current field yet"
    heads = ["", "rank", "bot", "mu-3σ", "mu", "σ", "games", "W-D-L", "score", "margin", "forfeits",
             "ms/move", "BT Elo ±"]  # fmt: skip
    rows = []
    for r in board.itertuples(index=False):
        forfeits = str(r.forfeits) + (f" ({r.forfeit_reasons})" if r.forfeits else "")
        elo = "-" if math.isnan(r.bt_elo) else f"{r.bt_elo:.0f} ± {r.bt_pm:.0f}"
        rows.append([
            "≈" if r.close_above else "", str(r.rank), r.bot, f"{r.conservative:.1f}", f"{r.mu:.1f}",
            f"{r.sigma:.2f}", str(r.games), f"{r.wins}-{r.draws}-{r.losses}", _num(r.score_pct, ".1f") + "%" * (
                r.games > 0), _num(r.margin, "+.1f"), forfeits, _num(r.ms_per_move, ".1f"), elo,
        ])  # fmt: skip
    left = {2, 10}  # bot and forfeits read best left-aligned
    widths = [max(len(x) for x in col) for col in zip(heads, *rows, strict=True)]
    lines = [
        "  ".join(
            c.ljust(w) if k in left else c.rjust(w) for k, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in [heads, *rows]
    ]
    if board["close_above"].any():
        lines.append("≈ too close to call with the place above (Bradley-Terry 95% intervals overlap)")
    return "\n".join(lines)
