"""`arena check BOT`: what the referee would hold against a bot, found in a minute, not in a tournament.

The bot plays a few short games, confined as `arena run` confines it, against the reference bots (greedy,
random), from positions the rules engine picks so that the protocol is exercised: as South with a move that
earns an extra turn on offer, as North with a capture on offer in the second game of the same process
(NEWGAME after END), under the pie rule as North with the SWAP choice, then QUIT. Each is an item of a
checklist beside the figures a tournament cares about (startup, think time against the limit, peak memory,
processes); every problem comes with the referee's exact lines, to bring it back by hand.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from arena.game.rules import NORTH, SOUTH, SWAP, Kalah, Move, Position, Relay, Rules
from arena.match.bots import Bot, BotError, BuildError, load_bot, reproduce_command, run_command
from arena.match.build import ensure_built
from arena.match.clock import Limits
from arena.match.process import BotProcess, Fault
from arena.match.protocol import V1, lines_sent
from arena.match.record import GameRecord
from arena.match.referee import Player, check_rules, play_game, starts_anywhere
from arena.report.replay import marks, replay
from arena.sandbox import Capabilities, Confinement, Jail, MiB, Warden, grant
from arena.tournament.settings import Settings, confinement_here, not_granted

OK, WARN, FAIL, SKIP = "ok", "warn", "FAIL", "skip"  # an item's status, as the checklist prints it
NEAR = 0.8  # a worst move (or startup) above this share of its limit is a warning: a busier machine forfeits
_OPENING_PLIES = 6  # how deep the search for an opening that offers an extra turn or a capture goes
_STDERR_LINES = 10  # lines of a failing game's stderr shown


@dataclass(frozen=True, slots=True)
class Item:
    """One line of the checklist. `problem` says what to fix; `reproduce` holds the referee's lines to the
    bot's process up to the problem, and `command` a shell line that feeds them to the bot."""

    name: str
    status: str  # OK, WARN, FAIL or SKIP (not tested: why is in `summary`)
    summary: str
    problem: str = ""
    stderr: str = ""
    reproduce: tuple[str, ...] = ()
    command: str = ""


@dataclass(frozen=True, slots=True)
class Report:
    """The checklist of one bot under one set of settings."""

    bot: str
    rules: str
    move_ms: int
    items: tuple[Item, ...]
    notes: tuple[str, ...] = ()  # what this machine could not enforce (also logged as warnings)

    @property
    def fails(self) -> bool:
        """Whether the referee would hold something against the bot: a forfeit, or a broken QUIT."""
        return any(item.status == FAIL for item in self.items)

    def verdict(self) -> str:
        failed = sum(item.status == FAIL for item in self.items)
        warned = sum(item.status == WARN for item in self.items)
        if failed:
            return (
                f"{self.bot}: FAIL: {failed} problem{'s' * (failed != 1)} above would cost it games in a "
                "tournament; fix them and check again"
            )
        if warned:
            return f"{self.bot}: ready to play, with {warned} warning{'s' * (warned != 1)} above"
        return f"{self.bot}: ready to play: nothing the referee would hold against it"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"fails": self.fails, "verdict": self.verdict()}


@dataclass(frozen=True, slots=True)
class Trial:
    """One game of the check: the bot's side, its opponent, the opening and what the game exercises.
    `binding`: a forfeit here is one in the tournament (the pie game under rules without pie is not). A
    name with {process} is a game meant for the process of the game before (NEWGAME after END): the
    name then says whether it was."""

    name: str
    side: int
    opponent: str
    rules: Rules
    opening: tuple[Move, ...] = ()
    binding: bool = True


# --- which games -------------------------------------------------------------------------------------------


def _openings(rules: Rules, depth: int) -> Iterator[tuple[tuple[Move, ...], Position]]:
    """Every opening of up to `depth` plies (no SWAP) with its position, shortest first. Under the pie rule
    only South's first turn, as a tournament's openings: the swap decision stays with North's bot."""
    level: list[tuple[tuple[Move, ...], Position]] = [((), rules.initial())]
    for _ in range(depth + 1):
        yield from level
        level = [
            ((*plies, m), rules.play(pos, m))
            for plies, pos in level
            if not rules.is_over(pos) and not (rules.pie and (pos.to_move != SOUTH or pos.turn > 0))
            for m in rules.legal_moves(pos)
            if m != SWAP
        ]


def _offers(rules: Rules, pos: Position, what: str) -> bool:
    """Whether the side to move has a move that earns an extra turn (`what` 'extra') or captures."""
    for move in rules.legal_moves(pos):
        if move == SWAP:
            continue
        ply = marks(rules, pos, move)
        if ply.extra if what == "extra" else ply.captured != 0:
            return True
    return False


def opening_offering(rules: Rules, side: int, what: str) -> tuple[Move, ...] | None:
    """The shortest opening after which `side` is to move with an extra turn (`what` 'extra') or a capture
    ('capture') on offer; for an extra turn, one right after its own extra turn if there is one (a bot that
    keeps its own board, or forgets the turn is still its own, then plays a pit that is empty)."""
    found = None
    for plies, pos in _openings(rules, _OPENING_PLIES):
        if rules.is_over(pos) or pos.to_move != side or not _offers(rules, pos, what):
            continue
        if what != "extra":
            return plies
        before = rules.initial()
        for ply in plies[:-1]:
            before = rules.play(before, ply)
        if plies and before.to_move == side:
            return plies
        if found is None:
            found = plies
    return found


def with_pie(rules: Rules) -> Rules:
    """The rules with the pie rule on (SWAP allowed as the second player's first move)."""
    if rules.pie or not isinstance(rules, Kalah | Relay):
        return rules
    return dataclasses.replace(rules, pie=True)


def trials(bot: Bot, rules: Rules) -> tuple[Trial, ...]:
    """The games the check plays: few and short, each exercising what a tournament will."""
    if not starts_anywhere(bot):  # Manchester agents: every game from the start, one process each
        return (
            Trial("South, moving first", SOUTH, "greedy", rules),
            Trial("North, SWAP on offer" if rules.pie else "North", NORTH, "random", rules),
        )
    extra = opening_offering(rules, SOUTH, "extra")
    capture = opening_offering(rules, NORTH, "capture")
    pie = with_pie(rules)
    games = (
        Trial(
            "South, a move that earns an extra turn on offer" if extra is not None else "South",
            SOUTH,
            "greedy",
            rules,
            extra or (),
        ),
        Trial(
            "North, {process}" + (", a capture on offer" if capture is not None else ""),
            NORTH,
            "random",
            rules,
            capture or (),
        ),
        Trial(f"North under the pie rule ({pie.spec}), SWAP on offer", NORTH, "greedy", pie, (), rules.pie),
    )
    return games[:2] if bot.protocol == "kgp" else games  # KGP has no swap move


def reference_bots(folders: tuple[Path, ...]) -> dict[str, Bot] | None:
    """greedy and random from the first folder that has both (arena's own, ARENA_BOTS, first), or None.
    ARENA_BOTS's files are links in a checkout: followed there alone (load_bot refuses a link elsewhere)."""
    for folder in folders:
        paths = {name: folder / f"{name}.py" for name in ("greedy", "random")}
        if all(p.is_file() for p in paths.values()):
            own = folder == ARENA_BOTS
            return {name: load_bot(p.resolve() if own else p) for name, p in paths.items()}
    return None


# The reference bots are package data, found alike from a checkout, a wheel and site-packages. In a checkout
# they are links to bots/greedy.py and bots/random.py (the tournament's bots keep their one copy there; a
# wheel copies the files), so that `arena check` and `arena serve` need no checkout.
ARENA_BOTS = Path(str(files("arena.student") / "references"))


# --- watching the bot ---------------------------------------------------------------------------------------


def _jail(player: Player) -> Jail | None:
    try:
        proc = player.wire().proc if player.running else None
        return proc.jail if isinstance(proc, BotProcess) else None
    except RuntimeError:  # its process ended between the two looks
        return None


def _counted(pids: list[int]) -> int:
    """The bot's own processes: the sandbox's bubblewrap processes in its cgroup are not the bot's."""
    count = 0
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        count += name != "bwrap"
    return count


class Sampler:
    """Looks at the bot's cgroup from a thread while it plays: the kernel keeps its memory peak, but not
    the most processes (and threads) it ran at once."""

    def __init__(self, player: Player, every: float = 0.01) -> None:
        self.player = player
        self.every = every
        self.processes = 0
        self.tasks = 0  # processes and their threads: what the pids controller (--max-procs) counts
        self.peak = 0  # bytes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def look(self) -> None:
        jail = _jail(self.player)
        if jail is None or jail.cgroups is None:
            return
        self.processes = max(self.processes, _counted(jail.pids()))
        self.tasks = max(self.tasks, jail.cgroups.tasks() or 0)
        self.peak = max(self.peak, jail.cgroups.peak_bytes() or 0)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.look()

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- the check ----------------------------------------------------------------------------------------------


def command_line(bot: Bot, lines: tuple[str, ...], wait_s: int = 0, named: str | None = None) -> str:
    """A shell line that feeds `lines` to the bot as the referee did (outside the sandbox): the one
    reproduce command (bots.reproduce_command). `wait_s`: then keep its input open (as the referee does) and
    say whether it was still running after that long. `named`: the bot's folder as its author has it."""
    if not wait_s:
        return reproduce_command(lines, bot.path, bot.argv, named=named)
    text = shlex.quote("".join(line + "\\n" for line in lines))
    run = run_command(bot.path, bot.argv, named=named)
    inner = run[1:-1].partition(" && ") if run.startswith("(cd ") else ("", "", run)
    timed = (
        f"(printf {text}; sleep {wait_s + 1}) | timeout {wait_s} {inner[2]}; "
        f'echo "exit status $? (124: still running {wait_s} s after the last line)"'
    )
    return f"({inner[0]} && {timed})" if inner[0] else timed


def _tail(text: str) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-_STDERR_LINES:])


def _played(record: GameRecord, rules: Rules, name: str) -> str:
    """How the game went for bot `name`: the score, who swapped, and its moves, extra turns and captures
    (read off the replay, so that a student sees what the game exercised)."""
    other = record.north if name == record.south else record.south
    word = "drew" if record.winner is None else ("won" if record.winner == name else "lost")
    text = f"{word} {record.store_of(name)}-{record.store_of(other)}"
    if record.swapped:
        text += f" ({'it' if record.north == name else 'its opponent'} swapped)"  # SWAP is North's
    game = replay(record, rules=rules)
    own = [p for k, p in enumerate(game.plies) if not p.opening and game.owners(k)[p.mover] == name]
    extra, captures = sum(p.extra for p in own), sum(p.captured != 0 for p in own)
    return text + f" in {len(own)} moves, {extra} with an extra turn, {captures} capturing"


@dataclass
class _Tally:
    """What the check has seen so far: of the bot's current process, when it started, whether it has
    answered, and the lines it was sent in finished games; of all games, the figures."""

    started: float = 0.0
    answered: bool = False
    history: list[str] = dataclasses.field(default_factory=list)
    startups: list[float] = dataclasses.field(default_factory=list)  # ms from a start to its first answer
    think: list[float] = dataclasses.field(default_factory=list)  # ms of each move but a first one
    per_game: list[float] = dataclasses.field(default_factory=list)  # ms of thinking in each game
    failed: set[str] = dataclasses.field(default_factory=set)  # reasons of the games that must pass


def check(
    bot: Bot,
    settings: Settings | None = None,
    references: dict[str, Bot] | None = None,
    say: Callable[[str], None] | None = None,
    named: str | None = None,
) -> Report:
    """Play the check's games with `bot` (confined as `arena run` would) and return its checklist.
    `references`: greedy and random (default: arena's bundled bots). Raises RulesError for rules the bot's
    protocol cannot play, BotError when there are no reference bots. A bot with a build (bot.toml `build`)
    is built first, confined as `arena run` builds it; `say` hears of a build before it runs. `named`: the
    bot's folder as its author has it, for the reproduce lines (bots.run_command), when it lies elsewhere."""
    settings = settings or Settings()
    rules = settings.game_rules()
    check_rules((bot,), rules)
    if why := not_granted(bot, grant(settings.read_only, [bot.path.parent])):
        raise BotError(f"{bot.path}: {why}")
    refs = references or reference_bots((ARENA_BOTS,))
    if refs is None:
        raise BotError(
            "no reference bots: arena check plays against greedy.py and random.py, looked for in "
            f"{ARENA_BOTS} (arena's own) and the --bots folder; reinstall arena, or copy them into --bots"
        )
    conf, caps = confinement_here(settings)
    limits = settings.limits()
    items: list[Item] = []
    if bot.build:
        try:
            bot, item = _build(bot, conf, say)
        except BuildError as e:
            failed = Item("build", FAIL, "failed", str(e), _tail(e.output))
            return Report(bot.name, rules.spec, limits.clock.move_ms, (failed,), caps.notes)
        items.append(item)
    warden = Warden(conf)
    me = Player(bot, warden=warden)
    opponents = {
        name: Player(ref, name if name != bot.name else f"reference-{name}", warden=warden)
        for name, ref in refs.items()
    }
    tally = _Tally()
    try:
        with Sampler(me) as sampler:
            for number, trial in enumerate(trials(bot, rules), 1):
                items.append(_game(number, trial, me, opponents[trial.opponent], limits, tally, named))
                sampler.look()
            if bot.anytime:
                items.append(_anytime(me))
            items.append(_quit(me, limits, tally, named))
            sampler.look()
        items += _figures(bot, settings, limits, caps, tally, sampler, bounded=conf.drop_root)
    finally:
        for player in (me, *opponents.values()):
            player.kill()
        warden.close()
    return Report(bot.name, rules.spec, limits.clock.move_ms, tuple(items), caps.notes)


def _build(bot: Bot, conf: Confinement, say: Callable[[str], None] | None) -> tuple[Bot, Item]:
    """The bot built (if its sources changed since its last build) and the build's item."""
    heard: list[str] = []

    def building(text: str) -> None:
        heard.append(text)
        if say is not None:
            say(text)

    began = time.monotonic()
    built = ensure_built(bot, conf, say=building)
    if heard:
        return built, Item("build", OK, f"built in {time.monotonic() - began:.1f} s")
    return built, Item("build", OK, "up to date: built before from the same sources")


def _game(
    number: int,
    trial: Trial,
    me: Player,
    ref: Player,
    limits: Limits,
    tally: _Tally,
    named: str | None = None,
) -> Item:
    """Play one trial: its item; the bot's move times and a new process's startup go to the tally."""
    process_is = "second game in one process (NEWGAME after END)"
    if not me.running:
        process_is = (
            f"in a new process (game {number - 1}'s forfeit ended the last: NEWGAME after END untested)"
        )
    name = f"game {number}: {trial.name.format(process=process_is)}, vs {trial.opponent}"
    v1 = me.bot.protocol == "v1"  # the reproduce lines are v1's
    if not me.running:
        tally.started, tally.history, tally.answered = time.monotonic(), [], False
        with contextlib.suppress(Fault):  # here, not in play_game: its startup is timed from now
            me.start()  # (one that cannot start fails again in play_game, where it is a forfeit)
    mine: list[bool] = []

    def on_move(pos: Position, move: Move, player: object) -> None:
        mine.append(player is me)
        if player is me and not tally.answered:
            tally.answered = True
            tally.startups.append((time.monotonic() - tally.started) * 1000)

    fresh = not tally.answered
    south, north = (me, ref) if trial.side == SOUTH else (ref, me)
    record = play_game(trial.rules, south, north, limits, on_move, trial.opening)
    times = [ms for ms, own in zip(record.move_ms, mine, strict=False) if own]
    tally.think += times[1:] if fresh else times
    tally.per_game.append(sum(times[1:] if fresh else times))
    sent = lines_sent(trial.rules, record, me.name, limits.clock) if v1 else ()
    before = tuple(tally.history)
    if record.faulty == me.name or not me.running:
        tally.history = []
    else:
        tally.history += sent
    if record.faulty is None:
        return Item(name, OK, _played(record, trial.rules, me.name))
    if record.faulty != me.name:
        return Item(name, WARN, f"the reference bot forfeited ({record.reason}: {record.told()})")
    status = FAIL if trial.binding else WARN
    problem = f"forfeit ({record.reason}): {record.told()}"
    if trial.binding:
        tally.failed.add(record.reason)
    elif record.reason in tally.failed:
        problem += f" (under the pie rule too: {trial.rules.spec}; the same fault as above)"
    else:
        problem += f" (only under the pie rule: {trial.rules.spec})"
    if not v1:  # the referee's lines are v1's; a Manchester agent's game is told by its plies
        problem += f"; the game's plies: {' '.join(map(str, record.plies)) or 'none'}"
    lines = (*before, *sent)
    return Item(
        name,
        status,
        f"forfeits after {len(times)} move{'' if len(times) == 1 else 's'}",
        problem,
        _tail(record.stderr.get(me.name, "")),
        lines,
        command_line(me.bot, lines, named=named) if v1 else "",
    )


def _anytime(me: Player) -> Item:
    """bot.toml `anytime`: how many answers the bot's last process wrote per MOVE, and how many came late."""
    name = "anytime: several answers per MOVE, the last legal one played"
    wire = me.wire() if me.running else None
    if not isinstance(wire, V1) or not wire.answers:
        return Item(name, SKIP, "its last process answered no MOVE")
    counts, late = wire.answers, wire.late
    several = sum(count > 1 for count in counts)
    summary = (
        f"{statistics.mean(counts):.1f} answers per MOVE, several in {several} of {len(counts)} MOVEs; "
        f"{late} late line{'s' * (late != 1)} dropped"
    )
    if late:
        return Item(
            name,
            WARN,
            summary,
            "answers written after the MOVE's time, or before the bot read the next MOVE, are dropped: "
            "check the clock before each answer",
        )
    if not several:
        return Item(
            name,
            WARN,
            summary,
            "it writes one answer per MOVE, yet anytime = true makes every MOVE take its whole time: print "
            "each better move as the search finds it, or remove anytime from bot.toml",
        )
    return Item(name, OK, summary)


def _quit(me: Player, limits: Limits, tally: _Tally, named: str | None = None) -> Item:
    """QUIT to the bot's process after its games (to a new one if the last game ended it): it must exit
    within the referee's grace, or be killed."""
    grace = limits.quit_grace_ms
    word = "goodbye" if me.bot.protocol == "kgp" else "QUIT"  # KGP's end of a connection
    name = f"{word}: exits within {grace} ms"
    if not starts_anywhere(me.bot):
        return Item(name, SKIP, "the Manchester protocol has no QUIT: an agent exits after END")
    if not me.running:
        tally.history = []
        try:
            me.start()
        except Fault as fault:
            return Item(name, SKIP, f"its process could not be started: {fault.told()}")
    proc = me.wire().proc
    if not isinstance(proc, BotProcess):  # arena check runs the bot's own process, never a connection
        raise TypeError(f"{name}: not a bot's process")
    began = time.monotonic()
    me.close(grace)
    took = (time.monotonic() - began) * 1000
    code = proc.returncode()
    lines = (*tally.history, "QUIT")
    if code == -signal.SIGKILL or took >= grace:
        v1 = me.bot.protocol == "v1"
        return Item(
            name,
            FAIL,
            f"still running {grace} ms after {word}: killed",
            f"exit when {word} comes (the referee kills a bot that stays, and every game's end waits for it)",
            _tail(me.stderr_tail()),
            lines if v1 else (),
            command_line(me.bot, lines, wait_s=1, named=named) if v1 else "",
        )
    said = f" with code {code}" if code else ""
    return Item(name, OK, f"exited{said} in {took:.0f} ms")


def _figures(
    bot: Bot,
    settings: Settings,
    limits: Limits,
    caps: Capabilities,
    tally: _Tally,
    sampler: Sampler,
    bounded: bool = False,
) -> list[Item]:
    """The figures: startup, think time, memory and processes, each against its limit. `bounded`: the
    process limit holds without cgroups (the bot runs as a uid of its own, whose RLIMIT_NPROC counts it
    alone)."""
    items = []
    clock = limits.clock
    allowance = clock.startup_ms + clock.move_ms
    if tally.startups:
        worst = max(tally.startups)
        summary = f"first answer {worst:.0f} ms after the process started (allowed {allowance} ms)"
        near = worst > NEAR * allowance
        items.append(
            Item("startup", WARN if near else OK, summary, "close to the startup allowance" if near else "")
        )
    else:
        items.append(Item("startup", SKIP, "no answer to measure"))
    think = tally.think
    if think:
        median, worst = statistics.median(think), max(think)
        summary = f"median {median:.0f} ms, worst {worst:.0f} ms of {clock.move_ms} ms ({len(think)} moves)"
        near = worst > NEAR * clock.move_ms and not bot.anytime  # an anytime bot's MOVE takes it all
        problem = ""
        if near:
            problem = (
                f"its worst move took {worst / clock.move_ms:.0%} of the limit: on a busier machine it "
                "times out; aim for half of the move time"
            )
        if clock.bank_ms is not None:
            most = max(tally.per_game)
            summary += f"; at most {most / 1000:.1f} s of its {clock.bank_ms / 1000:g} s time bank in a game"
            if most > NEAR * clock.bank_ms:
                near = True
                problem = (
                    f"it used {most / clock.bank_ms:.0%} of its time bank in a game: fine if it budgets by "
                    "what is left (each MOVE says it), a timeout in a longer game if not"
                )
        items.append(Item("think time", WARN if near else OK, summary, problem))
    else:
        items.append(Item("think time", SKIP, "no moves to measure"))
    memory = settings.confinement().memory_of(bot.memory_mb)[0]
    if caps.cgroups and sampler.peak:
        peak = sampler.peak / MiB
        near = peak > NEAR * memory
        items.append(
            Item(
                "memory",
                WARN if near else OK,
                f"peak {peak:.0f} MiB of {memory} MiB",
                "close to its memory limit: going over is a crash" if near else "",
            )
        )
    else:
        items.append(Item("memory", SKIP, f"not measured here (no cgroups); the limit is {memory} MiB"))
    if caps.cgroups and sampler.processes:
        plural = "es" * (sampler.processes != 1)
        tasks = f" ({sampler.tasks} tasks with threads and the sandbox's own)" if sampler.tasks else ""
        near = sampler.tasks > NEAR * settings.max_procs
        items.append(
            Item(
                "processes",
                WARN if near else OK,
                f"peak {sampler.processes} process{plural}{tasks}, of {settings.max_procs} (--max-procs)",
                "close to the process limit: going over is a crash" if near else "",
            )
        )
    else:
        unmeasured = f"not measured here (no cgroups); the limit is {settings.max_procs}"
        if not bounded:
            unmeasured = (
                f"not measured nor bounded here (no cgroups): --max-procs {settings.max_procs} holds only "
            )
            unmeasured += "where arena has cgroups or runs as root"
        items.append(Item("processes", SKIP, unmeasured))
    return items


# --- the checklist as text ----------------------------------------------------------------------------------


def render(report: Report) -> str:
    """The checklist: one line per item (readable without colour), what to fix and the lines that bring each
    problem back, then the verdict."""
    out = [f"arena check {report.bot}: rules {report.rules}, {report.move_ms} ms a move"]
    for item in report.items:
        out.append(f"  {item.status:<5} {item.name}: {item.summary}")
        if item.problem:
            out.append(f"        {item.problem}")
        if item.stderr:
            label = "the build's output (tail)" if item.name == "build" else "its stderr (tail)"
            out += [f"        {label}:", *(f"          {line}" for line in item.stderr.splitlines())]
        if item.command:
            out += ["        reproduce it: feed the bot the referee's lines", f"          {item.command}"]
    out.append(report.verdict())
    return "\n".join(out)
