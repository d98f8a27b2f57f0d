"""The HTML report: a page written from the store alone, with its game data beside it.

The page opens from file:// on a classroom machine with no network: CSS and script are inline, charts are
SVG drawn here (arena/report/charts.py), and the games' list and replays are files beside it loaded by
<script> tags (arena/report/games.py). It is rendered by jinja2 with autoescaping, because bot names,
details and above all stderr come from students' programs and may hold HTML; the page's script puts them
on the page as text, never as markup. Every number on it is computed here, in ratings or in the replays;
the templates only lay out and the script only draws.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import jinja2
import pandas as pd
from markupsafe import Markup

from arena.match.record import told
from arena.report import charts, look
from arena.report.botpages import Links, Result, bot_pages, recent_results
from arena.report.games import BLOCK, POOL_FROM, GameFiles, write_games
from arena.report.machines import tally
from arena.report.marked import write_analyses
from arena.stats import ratings
from arena.store import queries
from arena.store.writer import Store, now
from arena.tournament.settings import Settings

PAGE = "index.html"
LIVE = "live.js"  # rewritten with every page: a live page reloads itself when the stamp in it changes
FAULTS_PER_BOT = 20  # latest faults shown per bot; the counts cover all of them
LONG_TAIL_LINES = 8  # stderr tails longer than this are collapsed
LONG_TAIL_CHARS = 800
FIRST_WITHIN = 3.0  # seconds of replaying before a page is written; the replays left come after it
RUN_FROM = "from the folder the tournament was run in"  # where a fault's reproduce command runs


@dataclass(frozen=True, slots=True)
class Place:
    """One leaderboard row, formatted."""

    place: str  # '3' or a shared '3-5'
    shared: bool
    bot: str
    author: str
    digest: str
    conservative: str
    mu: str
    sigma: str
    games: int
    distinct: int  # of `games`, those not an exact repeat of an earlier one: what W-D-L and the Elo count
    wdl: str
    score: str
    margin: str
    forfeits: int
    reasons: str
    ms_per_move: str
    elo: str
    colour: str  # the bot's colour on the charts
    odds: tuple[tuple[int, int], ...] = ()  # (place, percent) of its chance of each place, the likely ones
    form: tuple[Result, ...] = ()  # its latest games, oldest first (FORM of them)
    interval: tuple[float, float, float] = (
        0.0,
        0.0,
        0.0,
    )  # its Elo interval on the field's: left, width, Elo %


@dataclass(frozen=True, slots=True)
class Cell:
    """One head-to-head cell: the row bot's record against the column bot, its colour, and the link to
    those games in the game list."""

    wdl: str
    score: str
    colour: str
    title: str
    href: str


@dataclass(frozen=True, slots=True)
class Live:
    """A tournament in progress, for the banner of a page rewritten while it runs."""

    done: int
    total: int
    left: str  # the time left, in words; an open-ended run's: the pairs still open and how sure each is
    updated: str
    open_ended: bool = False  # an adaptive run: `total` is its batch's, not the run's, so not shown


@dataclass(frozen=True, slots=True)
class FaultRow:
    """One forfeit as its author needs it: where, why, and what the bot printed on stderr."""

    game: int
    round: int
    opponent: str
    started: str
    reason: str
    detail: str
    stderr: str
    tail_lines: int
    last_line: str
    long: bool
    finished_at: str
    opening: str  # the opening's plies, '' for a game from the start position


@dataclass(frozen=True, slots=True)
class BotFaults:
    bot: str
    total: int
    reasons: str
    faults: tuple[FaultRow, ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """A pairing whose games repeated themselves: fewer distinct games than games."""

    a: str
    b: str
    games: int
    distinct: int


@dataclass(frozen=True, slots=True)
class Fact:
    label: str
    value: str


def _num(x: object, fmt: str) -> str:
    return "–" if x is None or pd.isna(x) else format(x, fmt)


def _when(iso: object) -> str:
    """A stored ISO time as a <time> that the page's script shows in the reader's zone ('2026-11-22 01:53
    UTC' without JavaScript, and on hover); '–' when there is none."""
    if not isinstance(iso, str) or not iso:
        return "–"
    try:
        at = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    shown = at.strftime("%Y-%m-%d %H:%M %Z").strip()
    return Markup('<time datetime="{}" class="utc" title="{}">{}</time>').format(at.isoformat(), shown, shown)


def _colour(score: float) -> str:
    """Vermillion below 50%, white at 50%, blue above: how the row bot fared against the column bot. Blue
    and orange stay apart for readers with any common colour-vision deficiency, as red and green do not."""
    strength = min(abs(score - 0.5) * 2.0, 1.0)
    hue = 205 if score >= 0.5 else 25
    return f"hsl({hue}, {round(25 + 55 * strength)}%, {round(97 - 25 * strength)}%)"


def games_href(bot: str, opp: str | None = None) -> str:
    """The game list's fragment for a bot's games (against `opp`): what a head-to-head cell links to."""
    href = f"#games?bot={quote(bot, safe='')}"
    return href + (f"&opp={quote(opp, safe='')}" if opp else "")


def bot_href(bot: str) -> str:
    """A bot's page within the report: what its name in the leaderboard links to."""
    return f"#bot-{bot}"


REPORT_LINKS = Links(
    back="#leaderboard",
    back_text="leaderboard",
    game=lambda game: f"#game-{game}/end",
    games=games_href,
    pair=games_href,
    reason=lambda bot, reason: f"{games_href(bot)}&reason={reason}",
)  # a bot page's links within the report: its game list, filtered, and its replays


FORM = 5  # the latest games a leaderboard row shows the results of: a bot's trend at a glance


def form(store: Store, field: Iterable[int], names: dict[int, str]) -> dict[int, tuple[Result, ...]]:
    """Each bot's latest FORM games' results, oldest first, by bot id."""
    return recent_results(store, field, names, FORM)


def _intervals(board: pd.DataFrame) -> dict[int, tuple[float, float, float]]:
    """Each rated bot's Elo interval as percentages of the field's whole range (left, width, Elo); a bot
    whose games bound it on one side only (`ratings.one_sided`) has its bar run to that side's edge, as
    its Elo's words and its line on the chart do."""
    rated = board[board["bt_elo"].notna()]
    if rated.empty:
        return {}
    lo = float((rated["bt_elo"] - rated["bt_pm"]).min())
    span = max(float((rated["bt_elo"] + rated["bt_pm"]).max()) - lo, 1.0)
    bars = {}
    for r in rated.itertuples(index=False):
        left, right = (r.bt_elo - r.bt_pm - lo) / span, (r.bt_elo + r.bt_pm - lo) / span
        side = ratings.one_sided(r.score_pct)
        left, right = (0.0 if side == "below" else left), (1.0 if side == "above" else right)
        bars[int(r.id)] = (
            round(100 * left, 1),
            round(100 * (right - left), 1),
            round(100 * (r.bt_elo - lo) / span, 1),
        )
    return bars


def leaderboard_rows(
    board: pd.DataFrame, styles: dict[int, charts.Style], recent: dict[int, tuple[Result, ...]] | None = None
) -> list[Place]:
    """The leaderboard's rows, in its order (the report's page and the class server's, face.py); `recent`:
    each bot's form (`form`)."""
    intervals = _intervals(board)
    return [
        Place(
            place=str(r.place),
            shared=bool(r.close_above or r.close_below),
            bot=str(r.bot),
            author=str(r.author) if isinstance(r.author, str) else "",
            digest=str(r.digest),
            conservative=f"{r.conservative:.1f}",
            mu=f"{r.mu:.1f}",
            sigma=f"{r.sigma:.2f}",
            games=int(r.games),
            distinct=int(r.distinct),
            wdl=f"{r.wins}-{r.draws}-{r.losses}",
            score=_num(r.score_pct, ".1f") + ("%" if r.games else ""),
            margin=_num(r.margin, "+.1f"),
            forfeits=int(r.forfeits),
            reasons=str(r.forfeit_reasons)
            if "," in str(r.forfeit_reasons)
            else str(r.forfeit_reasons).split(" ")[-1],
            ms_per_move=_num(r.ms_per_move, ".1f"),
            elo=ratings.elo_text(r.bt_elo, r.bt_pm, r.score_pct),
            colour=styles[int(r.id)].colour,
            odds=tuple((k + 1, round(100 * p)) for k, p in enumerate(r.rank_odds)),
            form=(recent or {}).get(int(r.id), ()),
            interval=intervals.get(int(r.id), (0.0, 0.0, 0.0)),
        )
        for r in board.itertuples(index=False)
    ]


def _settling(store: Store, standings: ratings.Standings) -> str:
    """What the last adaptive run stopped by, and whether the ranking is settled by it, or where the SPRT
    this store holds stands ('' after a run of rounds)."""
    if sprt := store.sprt():
        return f"SPRT: {sprt}"
    if store.stopping() is None or standings.verdict is None:
        return ""
    v = standings.verdict
    if v.settled:
        return f"{v.rule.describe()} This ranking is settled."
    return f"{v.rule.describe()} This ranking is not settled yet: {v.describe_open()}."


def _repeats(board: pd.DataFrame, variety: pd.DataFrame) -> list[Repeat]:
    """The pairings that played some game more than once, most repeated first."""
    names = dict(zip((int(i) for i in board["id"]), board["bot"], strict=True))
    rows = [
        Repeat(names[int(r.a)], names[int(r.b)], int(r.games), int(r.distinct_games))
        for r in variety.itertuples(index=False)
        if r.distinct_games < r.games and int(r.a) in names and int(r.b) in names
    ]
    return sorted(rows, key=lambda r: (r.distinct / r.games, r.a, r.b))


def matrix_rows(
    board: pd.DataFrame, pairs: pd.DataFrame, variety: pd.DataFrame, link: bool = True
) -> list[tuple[str, str, list[Cell | None]]]:
    """Rows and columns in leaderboard order, each row with its place and name; None on the diagonal.
    `link`: a met pair's cell opens its games (a page with no game list draws it without)."""
    order = [int(i) for i in board["id"]]
    names = dict(zip(order, board["bot"], strict=True))
    places = dict(zip(order, (str(p) for p in board["place"]), strict=True))
    met = {(int(r.bot), int(r.opp)): r for r in pairs.itertuples(index=False)}
    distinct = {}
    for v in variety.itertuples(index=False):
        distinct[(int(v.a), int(v.b))] = distinct[(int(v.b), int(v.a))] = int(v.distinct_games)
    rows = []
    for a in order:
        cells: list[Cell | None] = []
        for b in order:
            r = met.get((a, b))
            if a == b:
                cells.append(None)
            elif r is None or not r.games:
                cells.append(Cell("", "", "transparent", f"{names[a]} has not met {names[b]}", ""))
            else:
                score = (r.wins + 0.5 * r.draws) / max(int(r.distinct_games), 1)
                wdl = f"{r.wins}-{r.draws}-{r.losses}"
                kept = distinct.get((a, b), r.games)
                games = f"{r.games} games" if kept == r.games else f"{kept} distinct of {r.games} games"
                title = f"{names[a]} vs {names[b]}: {wdl} (W-D-L) in {games}, score {score:.1%}"
                href = games_href(names[a], names[b]) if link else ""
                cells.append(Cell(wdl, f"{100 * score:.0f}", _colour(score), title, href))
        rows.append((places[a], names[a], cells))
    return rows


def _faults(store: Store, board: pd.DataFrame, field: tuple[int, ...]) -> list[BotFaults]:
    latest = queries.latest_faults(store, field, FAULTS_PER_BOT)
    by_bot = {int(b): rows for b, rows in latest.groupby("bot")}
    out = []
    for r in board[board["forfeits"] > 0].itertuples(index=False):
        rows = by_bot.get(int(r.id))
        faults = []
        if rows is not None:
            for f in rows.itertuples(index=False):
                text = str(f.stderr or "")
                lines = text.rstrip("\n").splitlines()
                faults.append(
                    FaultRow(
                        game=int(f.game),
                        round=int(f.round),
                        opponent=str(f.opponent),
                        started=str(f.started),
                        reason=str(f.reason),
                        detail=told(str(f.detail), str(f.said)),
                        stderr=text,
                        tail_lines=len(lines),
                        last_line=next((ln for ln in reversed(lines) if ln.strip()), ""),
                        long=len(lines) > LONG_TAIL_LINES or len(text) > LONG_TAIL_CHARS,
                        finished_at=_when(f.finished_at),
                        opening=" ".join(map(str, f.opening)),
                    )
                )
        out.append(BotFaults(str(r.bot), int(r.forfeits), str(r.forfeit_reasons), tuple(faults)))
    return out


def _settings(store: Store, field: tuple[int, ...], generated: str) -> list[Fact]:
    settings = store.settings()
    facts = queries.game_facts(store, field).iloc[0]
    games = int(facts["games"] or 0)
    rows = [
        Fact("rules", settings.rules if settings else "not fixed yet"),
        Fact("move time", f"{settings.clock.move_ms} ms" if settings else "–"),
        Fact(
            "startup allowance",
            f"{settings.clock.startup_ms} ms (added to a bot's first move)" if settings else "–",
        ),
        Fact("schedule seed", str(settings.seed) if settings else "–"),
        *_openings(store, field),
        *_confinement(store, settings),
        Fact("rounds played", f"{int(facts['rounds'] or 0)} (up to round {int(facts['last_round'] or 0)})"),
        Fact("games stored", f"{games} ({int(facts['field_games'] or 0)} between current bot versions)"),
        Fact("created", _when(store.created())),
        Fact("last game finished", _when(facts["last_finished"])),
        Fact("report written", _when(generated)),
    ]
    if settings and settings.clock.bank_ms:
        rows.insert(2, Fact("time bank", f"{settings.clock.bank_ms} ms per bot per game (chess clock)"))
    return rows


def _openings(store: Store, field: tuple[int, ...]) -> list[Fact]:
    """Where games began: the book and how it was made, and games that could not use it."""
    book = store.book()
    if book is None:
        return []
    rows = [
        Fact("openings", book.source + (", each played from both sides by every pair" if book.lines else ""))
    ]
    if book.lines:
        variety = queries.pair_variety(store, field)
        from_start = int(variety["from_start"].sum()) if not variety.empty else 0
        if from_start:
            rows.append(
                Fact(
                    "games from the start position",
                    f"{from_start}: a bot in them speaks a protocol that cannot begin at an opening "
                    "(Manchester agents), so their games start at the start position",
                )
            )
    return rows


def _confinement(store: Store, settings: Settings | None) -> list[Fact]:
    """The limits bots ran under, and plainly what this machine could not enforce."""
    if settings is None:
        return []
    enforced = store.confinement()
    sandbox = "off"
    if enforced and enforced.sandbox:
        sandbox = "on (bubblewrap: an allowlisted filesystem, no network, no other bots' files)"
    # The tournament's games, not the last run's machines: a resume on sandboxed machines alone does not
    # make the games an earlier run played unsandboxed so.
    outside = store.unsandboxed()
    if outside:
        where = ", ".join(f"{n} on {w or 'this machine'}" for w, n in outside.items())
        sandbox = f"off for {sum(outside.values())} of the tournament's games ({where})"
    allowed = store.allowances()
    asked = allowed.asked
    own = ", ".join(
        f"{bot} {mb} MiB" + (f" (asked for {asked[bot]} MiB: capped)" if asked.get(bot, mb) != mb else "")
        for bot, mb in sorted(allowed.memory.items())
    )
    cap = settings.max_memory_mb if settings.max_memory_mb is not None else settings.memory_mb
    rows = [
        Fact(
            "memory per bot",
            f"{settings.memory_mb} MiB; a bot.toml may ask for up to {cap} MiB"
            + (f"; by their bot.toml: {own}" if own else ""),
        ),
        Fact("processes per bot", str(settings.max_procs)),
        Fact("thinking on the opponent's time", "allowed (--ponder)" if settings.ponder else "no: paused"),
        Fact("sandbox", sandbox),
    ]
    if settings.read_only:
        granted = ", ".join(settings.read_only)
        rows.append(Fact("read-only paths", f"{granted} (--read-only: every bot may read them)"))
    rows += [Fact("warning", note) for note in (enforced.notes if enforced else ())]
    if cluster := store.cluster():
        rows.append(Fact("cluster", cluster))
    workers = store.workers()
    rows += [Fact("worker", m.summary()) for m in workers.values()]
    if workers:  # games, faults and a residual per machine, so that one that disagrees stands out
        rows += [Fact("machine", t.summary()) for t in tally(store.records())]
    rows += [Fact("not entered", f"{entry}: {why}") for entry, why in store.not_entered()]
    return rows


def render(
    store: Store,
    generated: str | None = None,
    standings: ratings.Standings | None = None,
    games: GameFiles | None = None,
    live: Live | None = None,
    stamp: str = "",
) -> str:
    """The report page as a string; `generated` fixes the 'report written' time (tests), and `standings`
    saves computing them again when the caller already has them. `games` are the data files written beside
    the page (without them the page has no think times); `live` makes it the page of a tournament still
    running, which reloads itself when `live.js` no longer holds its `stamp`."""
    generated = generated or now()
    standings = standings or ratings.standings(store)
    board = standings.board
    retired = queries.retired_bots(store, standings.field)
    variety = queries.pair_variety(store, standings.field)
    ids = [int(i) for i in board["id"]]
    styles = {bot: charts.style(k) for k, bot in enumerate(ids)}
    history = ratings.rating_history(store, standings.field)
    names = dict(zip(ids, board["bot"], strict=True))
    series = [
        charts.Series(names[b], styles[b], history.mu[b], history.sigma[b]) for b in ids if b in history.mu
    ]
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arena.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    enforced = store.confinement()
    return env.get_template("report.html").render(
        title=store.path.parent.name,
        places=leaderboard_rows(board[board["unranked"] == ""], styles, form(store, standings.field, names)),
        stylesheet=look.stylesheet(),
        unranked=[(str(b), str(why)) for b, why in zip(board["bot"], board["unranked"], strict=True) if why],
        not_entered=[entry for entry, _ in store.not_entered()],
        unconfined=list(enforced.notes) if enforced else [],
        order_rule=ratings.order_rule(standings.verdict.rule) if standings.verdict else ratings.ORDER_RULE,
        settling=_settling(store, standings),
        against=standings.verdict.describe_against() if standings.verdict and not store.sprt() else [],
        any_shared=bool(board["close_above"].any()),
        shared_example=next((str(p) for p in board["place"] if "-" in str(p)), ""),
        matrix=matrix_rows(board, standings.pairs, variety),
        repeats=_repeats(board, variety),
        faults=_faults(store, board, standings.field),
        settings=_settings(store, standings.field, generated),
        generated=_when(generated),
        faults_per_bot=FAULTS_PER_BOT,
        retired=[
            (str(r.name), str(r.digest), str(r.status), _when(r.first_seen), int(r.games))
            for r in retired.itertuples(index=False)
        ],
        games=int(board["games"].sum()) // 2,
        distinct_games=int(board["distinct"].sum()) // 2,
        elo_chart=charts.elo_chart(
            [
                charts.Interval(
                    str(r.bot),
                    styles[int(r.id)],
                    float(r.bt_elo),
                    float(r.bt_pm),
                    ratings.elo_text(r.bt_elo, r.bt_pm, r.score_pct),
                    ratings.one_sided(r.score_pct),
                )
                for r in board[board["unranked"] == ""].itertuples(index=False)
            ],
            "Elo with its 95% interval of every bot, in the leaderboard's order",
        ),
        rating_chart=charts.rating_chart(history.games, series, "TrueSkill mu ± sigma of every bot"),
        bots=bot_pages(store, standings, history, games.think if games else {}, styles),
        bot_href=bot_href,
        to=REPORT_LINKS,
        alone=False,
        run_from=RUN_FROM,
        links=True,
        list_src=f"games/list.js?v={games.stamp}" if games else "",
        pending=games.missing if games else 0,
        replay_block=BLOCK,
        stored_games=games.count if games else 0,
        live=live,
        adaptive=store.stopping() is not None,
        stamp=stamp,
        live_src=LIVE,
    )


def write_report(
    store: Store, folder: Path, standings: ratings.Standings | None = None, live: Live | None = None
) -> Path:
    """Write FOLDER/index.html and its game data (FOLDER/games/) from the store; return the page's path.

    Every file is written beside its final name and renamed into place, the game data before the page that
    points to it, so a browser that reloads while a tournament runs never sees half a page. `live` marks
    the page of a tournament still running: it reloads itself when the next one is written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    standings = standings or ratings.standings(store)
    if live is not None:  # a rewrite while games are played: a bounded share of the replays, the rest later
        return _write_page(store, folder, standings, write_games(store, folder, within=FIRST_WITHIN), live)
    games = write_games(store, folder, within=FIRST_WITHIN)
    if games.missing >= POOL_FROM:  # a big tournament's first page: up now, then every replay, then again
        _write_page(store, folder, standings, games, None)
    if games.missing:
        games = write_games(store, folder, jobs=os.cpu_count() or 1)
    write_analyses(store, folder)
    return _write_page(store, folder, standings, games, None)


def _write_page(
    store: Store, folder: Path, standings: ratings.Standings, games: GameFiles, live: Live | None
) -> Path:
    page = folder / PAGE
    stamp = f"{time.time_ns():x}"
    html = render(store, standings=standings, games=games, live=live, stamp=stamp)
    _replace(page, html)
    _replace(folder / LIVE, f"arenaLive({json.dumps(stamp)});\n")
    return page.absolute()


def _replace(path: Path, text: str) -> None:
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_text(text, encoding="utf-8")
    part.replace(path)
