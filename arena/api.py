"""The library API: a tournament on disk, and games between two bots. The CLI is flags to these calls.

    from arena import Tournament

    with Tournament("reports/demo", move_ms=200) as cup:
        cup.run("bots", rounds=2)
        print(cup.leaderboard())
        print("page:", cup.report())

Bots are confined (sandbox, memory and process limits, paused while the opponent thinks) unless the
settings say otherwise; what this machine cannot enforce is logged as a warning on the "arena" logger
(Python prints it to stderr unless logging is configured) and written on the page.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from arena.game.openings import Book, generate, load_book, order, sequel
from arena.game.rules import Move, Position
from arena.match.bots import Bot, BotError, Survey, survey
from arena.match.build import ensure_built
from arena.match.record import GameRecord
from arena.match.referee import Player, Seat, check_rules, play_game, starts_anywhere
from arena.sandbox import Capabilities, Confinement, Warden, grant
from arena.store.writer import EXPORT_FIELDS, STORE_FILE, Allowances, Enforced, Store
from arena.tournament.schedule import RoundRobin
from arena.tournament.settings import Progress, RunOptions, Settings, confinement_here, not_granted, resolve

if TYPE_CHECKING:
    import pandas as pd

    from arena.stats.ratings import Standings
    from arena.stats.settle import Rule, Verdict
    from arena.stats.sprt import Design as SprtDesign
    from arena.stats.sprt import Match as SprtMatch
    from arena.tournament.schedule import Schedule
    from arena.tournament.scheduler import RunResult

# The scheduler (multiprocess), the ratings (pandas) and the report (jinja2) are imported by the methods
# that use them, so that a script or `arena play` that plays single games does not pay for them.

log = logging.getLogger("arena")


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


def make_book(settings: Settings) -> Book:
    """The openings a new tournament plays, in the seeded order its rounds go through them: from the book
    file named in the settings, else generated from the seed; none with `openings=0`."""
    rules = settings.game_rules()
    if settings.book is not None:
        book = load_book(settings.book, rules)
    elif settings.openings > 0:
        book = generate(rules, settings.openings, settings.seed)
    else:
        book = Book((), "none: every game starts at the start position")
    return order(book, settings.seed)


@dataclass(frozen=True, slots=True)
class Entrants:
    """The bots a run plays (from a folder or a list), its gauntlet bot, and the folder's entries meant as
    bots that cannot play, each with why and how to fix it: they are not entered, the run goes on."""

    bots: tuple[Bot, ...]
    hero: Bot | None
    broken: tuple[tuple[str, str], ...] = ()


def entrants(
    bots: Entrants | Sequence[Bot] | Path | str,
    gauntlet: str | None = None,
    *,
    build: Callable[[Bot], Bot] | None = None,
    read_only: Sequence[str] = (),
    private: Sequence[Path | str] = (),
) -> Entrants:
    """A run's entrants, or BotError when there is no tournament to play (fewer than two bots, no such
    gauntlet bot). `build` builds each bot that has a build (arena.match.build.ensure_built): one whose
    build fails is not entered, its reason the compiler's first error. A bot whose bot.toml asks to read
    paths that the teacher's `read_only` does not grant is not entered either; GrantError when `read_only`
    would show bots a private place (the bots folder, `private` such as the reports folder). `bots` may be
    an earlier answer (surveyed without a build, say): it is not surveyed again, so that one command reads
    and hashes the folder once."""
    if isinstance(bots, Entrants):
        found = Survey(bots.bots, bots.broken)
    else:
        found = survey(Path(bots)) if isinstance(bots, str | Path) else Survey(tuple(bots), ())
    folders = [bots] if isinstance(bots, str | Path) else [b.path.parent for b in found.bots]
    found = _granted(found, grant(read_only, [*folders, *private]))
    if build is not None:
        found = _built(found, build)
    where = f"{bots}" if isinstance(bots, str | Path) else "the list"
    if len(found.bots) < 2:
        also = ""
        if found.broken:  # the first of them, with its fix: most likely the student's own bot
            also = f" ({len(found.broken)} more cannot play: {found.broken[0][0]}: {found.broken[0][1]})"
        raise BotError(f"a tournament needs at least two bots; {where} has {len(found.bots)}{also}")
    hero = None
    if gauntlet is not None:
        hero = next((b for b in found.bots if b.name == gauntlet), None)
        if hero is None:
            raise BotError(f"gauntlet {gauntlet}: no such bot in {where}")
    return Entrants(found.bots, hero, found.broken)


def _granted(found: Survey, granted: Sequence[str]) -> Survey:
    """The survey with every bot whose bot.toml asks for paths not granted moved to the broken."""
    bots, broken = [], list(found.broken)
    for bot in found.bots:
        why = not_granted(bot, granted)
        if why is None:
            bots.append(bot)
        else:
            broken.append((bot.path.name, why))
    return Survey(tuple(bots), tuple(sorted(broken)))


def _built(found: Survey, build: Callable[[Bot], Bot]) -> Survey:
    """The survey with every bot that has a build built; those whose build failed move to the broken."""
    bots, broken = [], list(found.broken)
    for bot in found.bots:
        try:
            bots.append(build(bot) if bot.build else bot)
        except BotError as e:  # BuildError, or the command the build should have made is missing
            broken.append((bot.path.name, str(e).removeprefix(f"{bot.path}: ").removeprefix(f"{bot.path}/")))
    return Survey(tuple(bots), tuple(sorted(broken)))


# How a stored setting reads in the start-of-run summary.
_SETTING_TEXT = {
    "rules": "rules {}",
    "move_ms": "move time {} ms",
    "startup_ms": "startup allowance {} ms",
    "seed": "seed {}",
    "memory_mb": "memory {} MiB",
    "max_procs": "at most {} processes",
    "max_memory_mb": "a bot.toml may ask for up to {} MiB",
    "read_only": "bots may read {}",
    "ponder": "pondering {}",
    "sandbox": "sandbox {}",
    "bank_ms": "time bank {} ms",
    "openings": "{} openings",
    "book": "openings from {}",
}


@dataclass(frozen=True, slots=True)
class Plan:
    """What `Tournament.run` is about to do, for the one block a run says at its start."""

    name: str
    continuing: bool  # the tournament existed before
    bots: int
    new: tuple[str, ...]  # bots that were not in the last run's field
    changed: tuple[str, ...]  # bots whose code differs from the version in the last run's field
    left: tuple[str, ...]  # bots of the last run's field that are not in this one: withdrawn
    scheduled: int
    to_play: int
    stored: tuple[str, ...]  # settings this run keeps from the stored tournament, unlike the defaults
    settle: str | None = None  # the stopping rule of an adaptive run, in words; None: a number of rounds

    def summary(self) -> str:
        games = f"{self.to_play} of {self.scheduled} games to play"
        if self.settle is not None:
            stored = self.scheduled - self.to_play
            games = f"adaptive: plays until settled ({stored} games stored). {self.settle}"
        if not self.continuing:
            return f"new tournament {self.name!r}: {self.bots} bots; {games}"
        changes = [
            f"{len(names)} {what}{'s' * (len(names) != 1)} ({', '.join(names)})"
            for names, what in ((self.new, "new bot"), (self.changed, "changed version"))
            if names
        ]
        if self.left:
            changes.append(f"{len(self.left)} left the field ({', '.join(self.left)})")
        lines = [f"continuing {self.name!r}: " + ", ".join(changes or ["the same bots"]) + f"; {games}"]
        if self.stored:
            lines.append("from the stored tournament: " + ", ".join(self.stored))
        return "\n".join(lines)


def _plain(x: float) -> float | None:
    """A float for JSON: None for a missing value (NaN)."""
    return None if x != x else round(float(x), 2)


def _default_rule() -> Rule:
    from arena.stats.settle import Rule

    return Rule()


def _rule_dict(rule: Rule | None) -> dict[str, Any]:
    return (rule or _default_rule()).to_dict()


class Tournament:
    """A tournament kept in `folder`: its store (arena.sqlite, every game committed as it ends) and its page
    (index.html). Opening an existing one continues it; its settings are fixed for its whole life, so
    asking for other ones is a StoreError that names them (None in `asked` means "not asked")."""

    def __init__(
        self, folder: Path | str, settings: Settings | None = None, *, create: bool = True, **asked: Any
    ) -> None:
        self.folder = Path(folder)
        path = self.folder / STORE_FILE
        self.asked = {k for k, v in asked.items() if v is not None}
        store = None if create and not path.exists() else Store(path, create=create)
        try:
            self.stored = store.settings() if store else None  # as found: None for a new tournament
            self.settings = resolve(settings or self.stored, asked)
            grant(self.settings.read_only, [self.folder.parent])  # GrantError before a store is made
            book = store.book() if store and self.stored else None
            self.book = book if book is not None else make_book(self.settings)
            # A new tournament's file is written only once its settings and openings hold.
            store = store or Store(path)
            if create:
                store.lock()  # one writer: a second run of this tournament stops here, saying whose it is
            store.fix_settings(self.settings)
            store.fix_book(self.book)
            # Past the book's last opening, new ones from the seed (once the settings are known to hold)
            given = self.settings.book is not None
            self.book = sequel(self.book, self.settings.game_rules(), self.settings.seed, given)
        except BaseException:
            if store:
                store.close()
            raise
        self.store = store
        self._here: tuple[Confinement, Capabilities] | None = None

    def _local(self) -> tuple[Confinement, Capabilities]:
        """The limits as this machine enforces them, for its games and its builds (warned of once)."""
        if self._here is None:
            self._here = confinement_here(self.settings)
        return self._here

    def enter(
        self,
        bots: Entrants | Sequence[Bot] | Path | str = "bots",
        gauntlet: str | None = None,
        *,
        on_build: Callable[[str], None] | None = None,
    ) -> Entrants:
        """The bots a run of `bots` plays, those with a build built on this machine first (again only when
        their sources changed; `on_build` hears of each build as it starts), and those not entered, with
        why: also every bot whose build failed."""

        def build(bot: Bot) -> Bot:
            return ensure_built(bot, self._local()[0], say=on_build)

        private = [self.folder.parent]  # the reports folder
        return entrants(bots, gauntlet, build=build, read_only=self.settings.read_only, private=private)

    def _entered(self, bots: Entrants | Sequence[Bot] | Path | str, gauntlet: str | None) -> Entrants:
        """`bots` as entered: already (`enter`'s answer, so that one command surveys and hashes the folder
        once, and its plan and its run play the same versions), or entered now."""
        if isinstance(bots, Entrants):
            if gauntlet is not None and (bots.hero is None or bots.hero.name != gauntlet):
                raise ValueError("the gauntlet bot is chosen when the bots are entered")
            return bots
        return self.enter(bots, gauntlet)

    @classmethod
    def open(cls, folder: Path | str) -> Tournament:
        """An existing tournament, under its stored settings (StoreError if there is none)."""
        return cls(folder, create=False)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Tournament:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def schedule(
        self,
        field: Sequence[Bot],
        rounds: int | None,
        hero: Bot | None = None,
        settle: Rule | None = None,
        max_games: int | None = None,
        keep: bool = False,
    ) -> Schedule:
        """The round robin of `rounds` rounds (or `hero`'s gauntlet), or with `rounds` None the adaptive
        schedule that plays until `settle` (default: `Rule()`) holds, at most `max_games` games of the field;
        `keep`: its batches are kept in the store, so a resumed run finishes the one it was playing."""
        if rounds is not None:
            return RoundRobin(tuple(field), rounds, self.settings.seed, self.book, hero)
        from arena.stats.settle import Rule
        from arena.tournament.adaptive import Adaptive

        if hero is not None:
            raise ValueError("a gauntlet plays a number of rounds: give --rounds with --gauntlet")
        rule = settle or Rule()
        names = {b.name for b in field}
        unknown = [r for r in rule.references if r not in names]
        if unknown:
            raise ValueError(
                f"reference bot {unknown[0]!r} is not in the field; the bots: {', '.join(sorted(names))}"
            )
        store = self.store if keep else None
        return Adaptive(tuple(field), rule, self.settings.seed, self.book, max_games, store)

    def run(
        self,
        bots: Entrants | Sequence[Bot] | Path | str = "bots",
        rounds: int | None = 1,
        *,
        settle: Rule | None = None,
        max_games: int | None = None,
        gauntlet: str | None = None,
        options: RunOptions | None = None,
        **how: Any,
    ) -> RunResult:
        """Play what the schedule of `rounds` rounds lacks, as `options` say (`RunOptions`: on this machine's
        cores or a Dask cluster, progress, the live page; `how` are its fields, to change a few of them:
        `run(bots, jobs=2)`). With `rounds` None, play adaptively until the ranking is settled by `settle` (a
        `settle.Rule`; default: 95% confidence, 30 Elo resolution), or the field has `max_games` games
        (`schedule`); `verdict` then says how settled it is.

        `bots` is a folder (every bot in it), a list of bots, or `enter`'s answer (one survey of the folder
        for a plan and its run); `gauntlet` names the one bot whose games alone are played. KeyboardInterrupt
        stops the run cleanly: the result says `interrupted`, and every finished game is stored. A bot with no
        first answer in `bench_after` games in a row (0: never) sits out the rest of the run; the next run
        tries it again. `live` rewrites the page (FOLDER/index.html) every few seconds while games finish,
        showing the progress and the standings so far and reloading itself in the browser; `on_page` is
        called with the page's path once it is first written (to open it). The caller writes the final page.
        Bots with a `build` in their bot.toml are built first, on this machine (`enter`); a bot whose build
        fails is not entered."""
        entered = self._entered(bots, gauntlet)  # built here, also for a cluster: the built folder travels
        field, hero = list(entered.bots), entered.hero
        check_rules(field, self.settings.game_rules())
        schedule = self.schedule(field, rounds, hero, settle, max_games, keep=True)
        self.store.set_stopping(None if rounds is not None else _rule_dict(settle))
        result = self._play(entered, schedule, dataclasses.replace(options or RunOptions(), **how))
        if rounds is None and not result.interrupted:  # an adaptive run: why it stopped
            from arena.tournament.adaptive import Adaptive

            assert isinstance(schedule, Adaptive)
            why = schedule.stopped(self.store.results(current_only=True))
            result = dataclasses.replace(result, stopped=why)
        return result

    def match(
        self,
        new: str,
        base: str,
        bots: Entrants | Sequence[Bot] | Path | str = "bots",
        design: SprtDesign | None = None,
        max_games: int | None = None,
    ) -> SprtMatch:
        """The SPRT of bot `new` against bot `base` (names in `bots`) as a schedule (`sprt.Match`)."""
        from arena.stats.sprt import Design, Match

        entered = self._entered(bots, None)
        by_name = {b.name: b for b in entered.bots}
        for name in (new, base):
            if name not in by_name:
                known = ", ".join(sorted(by_name)) or "none"
                raise ValueError(f"no bot {name!r} to test (the bots: {known})")
        if new == base:
            raise ValueError(f"{new} and {base} are the same bot: an SPRT needs a new version and an old one")
        return Match(
            by_name[new],
            by_name[base],
            design or Design(),
            self.settings.seed,
            self.book,
            max_games=max_games,
        )

    def sprt(
        self,
        new: str,
        base: str,
        bots: Entrants | Sequence[Bot] | Path | str = "bots",
        design: SprtDesign | None = None,
        *,
        max_games: int | None = None,
        options: RunOptions | None = None,
        **how: Any,
    ) -> RunResult:
        """Play `new` against `base` in pairs of games (one opening, once from each side) until the SPRT
        `design` (default: elo0 0, elo1 10, alpha = beta = 0.05) decides, or `max_games`; stored like any
        tournament, so the same call resumes it. The store (and so the page) keeps where the test stands,
        judged again after every batch: `match(...).status(store.results())` says it too."""
        options = dataclasses.replace(options or RunOptions(), **how)
        entered = self._entered(bots, None)  # surveyed once, for the match and its play
        schedule = self.match(new, base, entered, design, max_games)
        self.store.set_stopping(None)
        chosen = Entrants(tuple(schedule.bots), None, entered.broken)

        def judged(done: int, total: int, record: GameRecord | None) -> None:
            if done == total:  # a batch is complete (or none was left): the test is judged again
                now = schedule.status(self.store.results()).line()
                self.store.set_sprt(f"{new} against {base}: {schedule.design.describe()}. {now}")
            if options.progress is not None:
                options.progress(done, total, record)

        result = self._play(chosen, schedule, dataclasses.replace(options, progress=judged))
        judged(0, 0, None)  # also when nothing was left to play
        return result

    def _play(self, entered: Entrants, schedule: Schedule, options: RunOptions) -> RunResult:
        from arena.tournament import scheduler

        field = list(entered.bots)
        if options.live:
            options = dataclasses.replace(options, progress=self._live(options.progress, options.on_page))
        self.store.set_not_entered(entered.broken)
        back = scheduler.backend(options.jobs, options.cluster)
        # What bots asked for in their bot.toml beyond the tournament's limits, for the page to show.
        conf = self.settings.confinement()
        asked = {b.name: b.memory_mb for b in field if b.memory_mb is not None}
        memory = {name: conf.memory_of(mb)[0] for name, mb in asked.items()}
        self.store.set_allowances(Allowances(memory, asked))
        if back.remote:  # the limits as asked: each worker enforces what its machine can, and says so
            conf = self.settings.confinement()
            self.store.set_cluster(str(getattr(back, "trust", "")))
        else:
            conf, caps = self._local()
            self.store.set_confinement(Enforced(caps.sandbox, caps.cgroups, tuple(caps.notes)))
        return scheduler.run(self.store, self.settings, schedule, conf, options, back)

    def _live(self, progress: Progress | None, on_page: Callable[[Path], None] | None) -> Progress:
        """The progress callback that keeps the page current, then calls `progress`."""
        from arena.report.live import LivePage

        return LivePage(self.store, self.folder, then=progress, opened=on_page)

    def plan(
        self,
        bots: Entrants | Sequence[Bot] | Path | str = "bots",
        rounds: int | None = 1,
        gauntlet: str | None = None,
        *,
        settle: Rule | None = None,
        max_games: int | None = None,
    ) -> Plan:
        """What `run` with these arguments would play, and how the field changed since the last run (for
        an adaptive run: its first batch)."""
        entered = self._entered(bots, gauntlet)
        field, hero = list(entered.bots), entered.hero
        before = self.store.versions(self.store.current_ids())
        now = {b.name: b.digest for b in field}
        schedule = self.schedule(field, rounds, hero, settle, max_games)
        results = self.store.results()
        played = schedule.played(results)
        to_play = len(schedule.next(results))
        defaults, settings = Settings().named(), self.settings.named()
        stored = tuple(
            _SETTING_TEXT[k].format(_shown(settings[k]))
            for k in _SETTING_TEXT
            if self.stored is not None and k not in self.asked and settings[k] != defaults[k]
        )
        return Plan(
            name=self.folder.name,
            continuing=self.stored is not None,
            bots=len(field),
            new=tuple(sorted(n for n in now if n not in before)),
            changed=tuple(sorted(n for n in now if n in before and before[n] != now[n])),
            left=tuple(sorted(n for n in before if n not in now)),
            scheduled=played + to_play,
            to_play=to_play,
            stored=stored,
            settle=None if rounds is not None else (settle or _default_rule()).describe(),
        )

    def verdict(self, settle: Rule | None = None) -> Verdict:
        """How settled the field's ranking is under `settle`, by default the last adaptive run's rule (or,
        after a run of rounds, the default rule): what is ordered, what shares a place, what is open."""
        from arena.stats import posterior
        from arena.stats import settle as settling
        from arena.store import queries

        rule = settle or settling.Rule.of(self.store.stopping())
        field = queries.field_ids(self.store)
        bots = queries.field_bots(self.store, field)
        ids = [int(i) for i in bots["id"]]
        post = posterior.posterior(posterior.from_games(queries.pair_games(self.store, ids), ids))
        return settling.verdict(post, rule, list(bots["name"]))

    def standings(self) -> Standings:
        """The leaderboard and the head-to-head table, from the store."""
        from arena.stats import ratings

        return ratings.standings(self.store)

    def leaderboard(self) -> pd.DataFrame:
        """One row per bot of the current field, best first (TrueSkill mu - 3 sigma)."""
        return self.standings().board

    def report(self, standings: Standings | None = None) -> Path:
        """Write the page, FOLDER/index.html, and its game data (FOLDER/games/) from the store alone;
        returns the page's path."""
        from arena.report import page as report

        return report.write_report(self.store, self.folder, standings)

    def records(self) -> Iterator[dict[str, Any]]:
        """Every stored game in schedule order: `id`, `round`, the GameRecord's fields, `finished_at`."""
        return self.store.records()

    def export_standings(self, file: IO[str], fmt: str = "jsonl", standings: Standings | None = None) -> int:
        """Write the leaderboard to `file`, best first, as JSON lines or CSV: each bot's place ('3-5' when
        shared), its Elo with the 95% interval (`bound`: which end alone holds, for a bot that won or lost
        every game), its chance of each place (`rank_odds`, place 1 first) and its TrueSkill, and its
        verdict against each reference bot of the rule (`against`); returns the rows written. `standings`:
        the caller's, when it has them already."""
        if fmt not in ("jsonl", "csv"):
            raise ValueError(f"unknown export format {fmt!r}; known: jsonl, csv")
        from arena.stats import ratings

        board = (standings or self.standings()).board
        writer = (
            csv.DictWriter(file, fieldnames=STANDINGS_FIELDS, lineterminator="\n") if fmt == "csv" else None
        )
        if writer:
            writer.writeheader()
        for r in board.itertuples(index=False):
            row: dict[str, Any] = {
                "place": str(r.place),
                "bot": r.bot,
                "elo": _plain(r.bt_elo),
                "elo_lo": _plain(r.bt_elo - r.bt_pm),
                "elo_hi": _plain(r.bt_elo + r.bt_pm),
                # "upper" where only elo_hi bounds the Elo (it lost every game), "lower" where only elo_lo
                # does (it won every game): the other end is only where the field's prior puts it
                "bound": BOUND[ratings.one_sided(r.score_pct)],
                "rank_odds": [round(p, 4) for p in r.rank_odds],
                "conservative": _plain(r.conservative),
                "mu": _plain(r.mu),
                "sigma": _plain(r.sigma),
                "games": int(r.games),
                "distinct": int(r.distinct),  # of `games`, not an exact repeat: what wins-draws-losses count
                "wins": int(r.wins),
                "draws": int(r.draws),
                "losses": int(r.losses),
                "score_pct": _plain(r.score_pct),
                "forfeits": int(r.forfeits),
                "digest": r.digest,
                "author": r.author if isinstance(r.author, str) else None,
                "against": r.against,  # reference bot -> "better", "worse", "within" (the resolution), "open"
            }
            if writer:
                writer.writerow(
                    {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()}
                )
            else:
                file.write(json.dumps(row) + "\n")
        return len(board)

    def export(self, file: IO[str], fmt: str = "jsonl") -> int:
        """Write every stored game to `file` as JSON lines or CSV (containers as JSON); returns the count."""
        if fmt not in ("jsonl", "csv"):
            raise ValueError(f"unknown export format {fmt!r}; known: jsonl, csv")
        writer = csv.DictWriter(file, fieldnames=EXPORT_FIELDS, lineterminator="\n") if fmt == "csv" else None
        if writer:
            writer.writeheader()
        count = 0
        for record in self.store.records():
            if writer:
                writer.writerow(
                    {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in record.items()}
                )
            else:
                file.write(json.dumps(record) + "\n")
            count += 1
        return count


BOUND = {"below": "upper", "above": "lower", "": ""}  # ratings.one_sided's side -> the only bound given
STANDINGS_FIELDS = [
    "place", "bot", "elo", "elo_lo", "elo_hi", "bound", "rank_odds", "conservative", "mu", "sigma", "games",
    "distinct", "wins", "draws", "losses", "score_pct", "forfeits", "digest", "author", "against",
]  # fmt: skip


class Match:
    """Games between two bots under one Settings, alternating sides, their processes kept between games, each
    pair of games from the next opening of the settings' book (`openings=0`: every game from the start).
    Either side may be a `Seat` instead of a bot: a person (arena.student.human.Human) plays it.

    with Match(load_bot("bots/greedy.py"), load_bot("bots/random.py")) as match:
        record = match.play()
    """

    def __init__(self, a: Bot | Seat, b: Bot | Seat, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rules = self.settings.game_rules()
        check_rules([x for x in (a, b) if isinstance(x, Bot)], self.rules)
        granted = grant(self.settings.read_only, [x.path.parent for x in (a, b) if isinstance(x, Bot)])
        for bot in (x for x in (a, b) if isinstance(x, Bot)):
            if why := not_granted(bot, granted):
                raise BotError(f"{bot.path}: {why}")
        conf, self.capabilities = confinement_here(self.settings)
        # A bot with a build is built first: BuildError (one line; the compiler's output in .output) if not.
        a, b = (ensure_built(x, conf) if isinstance(x, Bot) else x for x in (a, b))
        # Openings as in a tournament (two deterministic bots would repeat one pair of games otherwise); a
        # person, or a bot whose protocol must begin at the start, plays from the start.
        if all(isinstance(x, Bot) and starts_anywhere(x) for x in (a, b)):
            given = self.settings.book is not None
            self.book = sequel(make_book(self.settings), self.rules, self.settings.seed, given)
        else:
            self.book = Book((), "none: every game starts at the start position")
        self.warden = Warden(conf)
        second = b.name if b.name != a.name else f"{b.name}-2"
        first_seat = Player(a, warden=self.warden) if isinstance(a, Bot) else a
        second_seat = Player(b, second, warden=self.warden) if isinstance(b, Bot) else b
        self.players: tuple[Seat, Seat] = (first_seat, second_seat)
        self.score = {p.name: 0.0 for p in self.players}
        self.games = 0

    def play(self, on_move: Callable[[Position, Move, Seat], None] | None = None) -> GameRecord:
        """One game: the first bot is south in odd games (1st, 3rd, ...), the second in even ones; each pair
        of games plays the book's next opening, once from each side."""
        first, second = self.players
        south, north = (first, second) if self.games % 2 == 0 else (second, first)
        opening = self.book.for_round(self.games // 2 + 1)
        record = play_game(self.rules, south, north, self.settings.limits(), on_move, opening)
        self.games += 1
        for player in self.players:
            self.score[player.name] += 0.5 if record.winner is None else float(record.winner == player.name)
        return record

    def close(self) -> None:
        """End both bots' processes and remove their cgroups."""
        try:
            for player in self.players:
                if isinstance(player, Player):
                    player.close(self.settings.limits().quit_grace_ms)
        finally:
            self.warden.close()

    def __enter__(self) -> Match:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
