"""A page per bot, within the report: its results by opponent, its faults by kind, its think time against the
limit, its margins, its rating over the tournament, and what its analysed games say (mistakes.py). What a
student opens to see how their bot did."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd
from markupsafe import Markup

from arena.match.record import told
from arena.report import charts, mistakes
from arena.report.games import BINS, LIMIT_BIN, Think, bin_edge
from arena.stats.ratings import History, Standings, elo_text
from arena.store import queries
from arena.store.writer import Store
from arena.tournament.settings import Settings


@dataclass(frozen=True, slots=True)
class Opponent:
    """The bot's record against one opponent."""

    name: str
    games: int
    wdl: str
    score: str
    margin: str
    forfeits: int
    their_forfeits: int


@dataclass(frozen=True, slots=True)
class FaultKind:
    """All of a bot's faults of one reason: how many, and the latest as the example."""

    reason: str
    count: int
    game: int
    opponent: str
    detail: str  # in arena's words: what every viewer may read
    said: str  # what the bot wrote that shows it: its author's and the teacher's only

    @property
    def told(self) -> str:
        return told(self.detail, self.said)


@dataclass(frozen=True, slots=True)
class Links:
    """Where a bot page's links lead: within the report's own page (its game list, its replays), or to the
    class server's pages. "" for a link the page has nowhere to send."""

    back: str
    back_text: str
    game: Callable[[int], str]  # a game's replay, at its end
    games: Callable[[str], str]  # all of the bot's games
    pair: Callable[[str, str], str]  # an opponent's name in the bot's results
    reason: Callable[[str, str], str]  # the bot's games lost for one reason


@dataclass(frozen=True, slots=True)
class Result:
    """One game's result from a bot's side, as its form shows it."""

    result: str  # 'W', 'D' or 'L'
    game: int
    opponent: str

    def says(self) -> str:
        word = {"W": "won", "D": "drew", "L": "lost"}[self.result]
        return f"game {self.game}: {word} against {self.opponent}"


def recent_results(
    store: Store, field: Iterable[int], names: dict[int, str], count: int
) -> dict[int, tuple[Result, ...]]:
    """Each bot's latest `count` games' results from its side, oldest first, by bot id."""
    found: dict[int, list[Result]] = {}
    for r in queries.recent_results(store, field, count).itertuples(index=False):
        found.setdefault(int(r.bot), []).append(
            Result(str(r.result), int(r.game), names.get(int(r.opp), "?"))
        )
    return {bot: tuple(results) for bot, results in found.items()}


RECENT = 10  # of a bot's games, the latest its page shows the results of


@dataclass(frozen=True, slots=True)
class BotPage:
    name: str
    place: str
    elo: str  # the Elo with its 95% interval: what decides the place
    rating: str  # TrueSkill, beside it
    score: str
    wdl: str
    games: int
    distinct: int  # of `games`, those not an exact repeat of an earlier one: what W-D-L counts
    opponents: tuple[Opponent, ...]
    faults: tuple[FaultKind, ...]
    random_moves: str  # a KGP agent's positions played by a random legal move, in words; "" if none
    think: Markup
    think_facts: str
    margins: Markup
    margin_facts: str
    rating_chart: Markup
    colour: str
    recent: tuple[Result, ...] = ()  # its latest RECENT games, oldest first
    # its analysed games' figures (mistakes.py): its own row, then the reference bots'; () if none analysed
    analysed: tuple[tuple[str, ...], ...] = ()

    @property
    def phase_words(self) -> str:
        return mistakes.PHASE_WORDS


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if not math.isnan(x) else "–"


def _think_chart(think: Think | None, limit_ms: float, name: str) -> tuple[Markup, str]:
    if think is None or not think.moves:
        return Markup(""), "No moves of its own recorded."
    used = [k for k, c in enumerate(think.bins) if c]
    lo, hi = min(used[0], LIMIT_BIN - 8), max(used[-1], LIMIT_BIN) + 1
    bars = []
    for k in range(lo, hi):
        share_lo, share_hi = bin_edge(k), bin_edge(k + 1)
        label = ""
        if (k - LIMIT_BIN) % 8 == 0:
            label = "limit" if k == LIMIT_BIN else f"{100 * share_lo:g}%"
        low_text = "0" if k == 0 else f"{share_lo * limit_ms:.3g}"
        high_text = "and more" if k == BINS - 1 else f"{share_hi * limit_ms:.3g} ms"
        title = f"{low_text}–{high_text}: {think.bins[k]} moves"
        colour = charts.LOSS if k >= LIMIT_BIN else charts.WIN
        bars.append(charts.Bar(label, think.bins[k], colour, title))
    over = sum(think.bins[LIMIT_BIN:])
    p50, p90, p99 = (think.percentile(q, limit_ms) for q in (0.5, 0.9, 0.99))
    facts = (
        f"{think.moves} moves; mean {think.total_ms / think.moves:.1f} ms, median ≤ {p50:.3g} ms, "
        f"90% ≤ {p90:.3g} ms, 99% ≤ {p99:.3g} ms, longest {think.max_ms:.0f} ms, against a limit of "
        f"{limit_ms:.0f} ms; {over} over the limit (a first move's startup allowance, or a timeout)"
    )
    chart = charts.bar_chart(
        bars, f"{name}: think time per move, as a share of the limit", LIMIT_BIN - lo, "limit"
    )
    return chart, facts


def _margin_chart(rows: pd.DataFrame, name: str) -> tuple[Markup, str]:
    if rows.empty:
        return Markup(""), "No games yet."
    counts = {int(m): int(c) for m, c in zip(rows["margin"], rows["count"], strict=True)}
    lo, hi = min(min(counts), 0), max(max(counts), 0)
    step = max(1, math.ceil((hi - lo + 1) / 60))  # at most ~60 bars: margins grouped on big boards
    bars = []
    for start in range(lo - (lo % step), hi + 1, step):
        count = sum(counts.get(m, 0) for m in range(start, start + step))
        span = f"{start:+d}" if step == 1 else f"{start:+d}..{start + step - 1:+d}"
        colour = charts.DRAW if start <= 0 < start + step else (charts.WIN if start > 0 else charts.LOSS)
        label = f"{start:+d}" if start % (10 * step) == 0 else ""
        bars.append(charts.Bar(label, count, colour, f"margin {span}: {count} games"))
    total = sum(counts.values())
    mean = sum(m * c for m, c in counts.items()) / total
    facts = (
        f"{total} games; mean margin {mean:+.1f} seeds, widest win {max(counts):+d}, "
        f"worst loss {min(counts):+d}"
    )
    return charts.bar_chart(bars, f"{name}: final margins"), facts


def random_note(randoms: int, moves: int) -> str:
    """A KGP agent's random stand-in moves as its page counts them."""
    times = f"{randoms} time{'s' if randoms != 1 else ''}"
    return f"no move by stop: a random legal move was played, {times} in {moves} moves"


def bot_pages(
    store: Store,
    standings: Standings,
    history: History,
    think: dict[int, Think] | None,
    styles: dict[int, charts.Style],
) -> list[BotPage]:
    """One page per bot of the field, in leaderboard order. `think`: each bot's think times, from the games'
    replays (None: none were replayed, as on the class server, and the page says nothing of them)."""
    board = standings.board
    names = dict(zip((int(i) for i in board["id"]), board["bot"], strict=True))
    settings = store.settings()
    limit = float((settings or Settings()).clock.move_ms)
    kinds = queries.fault_kinds(store, standings.field)
    randoms = {
        int(k.bot): (int(k.randoms), int(k.moves))
        for k in queries.random_moves(store, standings.field).itertuples()
    }
    margins = queries.margins(store, standings.field)
    recent = recent_results(store, standings.field, names, RECENT)
    pairs = standings.pairs
    figures = mistakes.tally(mistakes.analysed_games(store))
    pages = []
    for r in board.itertuples(index=False):
        bot = int(r.id)
        mine = pairs[pairs["bot"] == bot]
        theirs = {int(p.bot): int(p.forfeits) for p in pairs[pairs["opp"] == bot].itertuples(index=False)}
        opponents = tuple(
            Opponent(
                names.get(int(p.opp), "?"),
                int(p.games),
                f"{int(p.wins)}-{int(p.draws)}-{int(p.losses)}",
                _pct((p.wins + 0.5 * p.draws) / p.distinct_games if p.distinct_games else math.nan),
                f"{p.margin_sum / p.games:+.1f}" if p.games else "–",
                int(p.forfeits),
                theirs.get(int(p.opp), 0),
            )
            for p in mine.itertuples(index=False)
            if int(p.opp) in names
        )
        faults = tuple(
            FaultKind(str(k.reason), int(k.count), int(k.game), str(k.opponent), str(k.detail), str(k.said))
            for k in kinds[kinds["bot"] == bot].itertuples(index=False)
        )
        chart, facts = _think_chart((think or {}).get(bot), limit, str(r.bot))
        facts = facts if think is not None else ""
        mchart, mfacts = _margin_chart(margins[margins["bot"] == bot], str(r.bot))
        series = []
        if bot in history.mu:
            series = [charts.Series(str(r.bot), styles[bot], history.mu[bot], history.sigma[bot])]
        pages.append(
            BotPage(
                name=str(r.bot),
                place=str(r.place),
                elo=elo_text(r.bt_elo, r.bt_pm, r.score_pct),
                rating=f"{r.mu:.1f} ± {r.sigma:.1f}",
                score=f"{r.score_pct:.1f}%" if r.games else "–",
                wdl=f"{r.wins}-{r.draws}-{r.losses}",
                games=int(r.games),
                distinct=int(r.distinct),
                opponents=opponents,
                faults=faults,
                random_moves=random_note(*randoms[bot]) if bot in randoms else "",
                think=chart,
                think_facts=facts,
                margins=mchart,
                margin_facts=mfacts,
                rating_chart=charts.rating_chart(history.games, series, f"{r.bot}: TrueSkill mu ± sigma"),
                colour=styles[bot].colour,
                recent=recent.get(bot, ()),
                analysed=mistakes.rows_for(str(r.bot), figures),
            )
        )
    return pages
