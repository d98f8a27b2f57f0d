"""Every game for the page, as data files it loads on demand: the list of games, and their replays.

A page of 100,000 games cannot hold 100,000 replays and still open quickly, so the page itself holds the
leaderboard and the tables, and beside it, in FOLDER/games/:

- `list.js`: every game in a few small numbers (who, result, reason, length), columns of JSON arrays, loaded
  by a <script> tag once the leaderboard is drawn: the game list, its filters and the head-to-head links
  run on it;
- `bNNN.js`: the replays of the games with ids BLOCK*NNN .. BLOCK*NNN+BLOCK-1, loaded by a <script> tag
  when one of them is opened. A <script> tag, not fetch(): it works from file:// with no server.

Every board of a replay is the rules engine's (arena/report/replay.py), computed here; the page's script
only draws. Replaying is the costly part (a few microseconds a ply), and a stored game never changes, so a
block file is rewritten only when its games did (its first line keeps a signature of them), which keeps the
live page's rewrites during a tournament cheap. The same pass collects each bot's think time per move,
kept in the block's first line too, so an unchanged block is never replayed again.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import time
import zlib
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

from arena.game.rules import CAPTURE, LIFT, SWAP, SWEEP, Rules, Step, parse_rules
from arena.match.bots import Where
from arena.match.clock import TimeControl
from arena.match.record import GameRecord, Reason, record_fields
from arena.report.replay import Ply, Replay, replay
from arena.store import queries
from arena.store.writer import Store
from arena.tournament.settings import Settings

FOLDER = "games"
BLOCK = 250  # games per replay file: ~250 KB of Kalah(6,6); one file is what opening a game costs
FORMAT = 3  # bump when the encoding changes: every block is written again (3: folder bots' own commands)
HEADER = "// arena replays "
# Think time is kept as a histogram per bot over the move's share of the time limit, 8 bins a decade from
# 0.01% of the limit up to 10 times it (past the limit: the startup allowance of a first move, or a timeout).
BINS_PER_DECADE = 8
LIMIT_BIN = 32  # bins below it are under the limit
BINS = 41
# Board values travel as one character each (code 48 + value, plain ASCII up to 79 seeds) so a Kalah(6,6)
# position is 14 bytes; bigger boards fall back to arrays of numbers.
CHAR_MAX = 79
REASON_ORDER = tuple(Reason)


@dataclass(slots=True)
class Think:
    """One bot's think times per move: a histogram (see BINS), how many, their sum and the longest."""

    bins: list[int] = field(default_factory=lambda: [0] * BINS)
    moves: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0

    def add(self, times: list[float], limit_ms: float) -> None:
        """Count the moves that took `times` ms, in order; one call for many, since a block's replays count a
        bot's moves by thousands."""
        bins, log10, floor = self.bins, math.log10, math.floor
        total = self.total_ms
        for ms in times:
            share = ms / limit_ms if limit_ms > 0 else 0.0
            k = floor(BINS_PER_DECADE * log10(share)) + LIMIT_BIN if share > 0 else 0
            bins[min(max(k, 0), BINS - 1)] += 1
            total += ms
        self.moves += len(times)
        self.total_ms = total
        self.max_ms = max([self.max_ms, *times])

    def merge(self, other: Think) -> None:
        self.bins = [a + b for a, b in zip(self.bins, other.bins, strict=True)]
        self.moves += other.moves
        self.total_ms += other.total_ms
        self.max_ms = max(self.max_ms, other.max_ms)

    def plain(self) -> list[Any]:
        return [
            self.moves,
            round(self.total_ms, 2),
            self.max_ms,
            {k: c for k, c in enumerate(self.bins) if c},
        ]

    @classmethod
    def of(cls, data: list[Any]) -> Think:
        bins = [0] * BINS
        for k, c in data[3].items():
            bins[int(k)] = int(c)
        return cls(bins, int(data[0]), float(data[1]), float(data[2]))

    def percentile(self, q: float, limit_ms: float) -> float:
        """The q-quantile (0..1) in ms, to the resolution of a bin (its upper edge)."""
        if not self.moves:
            return math.nan
        wanted, seen = q * self.moves, 0
        for k, c in enumerate(self.bins):
            seen += c
            if seen >= wanted and c:
                return min(self.max_ms, bin_edge(k + 1) * limit_ms)
        return self.max_ms


def bin_edge(k: int) -> float:
    """The lower edge of think-time bin k as a share of the limit."""
    return float(10.0 ** ((k - LIMIT_BIN) / BINS_PER_DECADE))


@dataclass(frozen=True, slots=True)
class GameFiles:
    """What the page needs from the data files: where they are and the think times they counted."""

    stamp: str  # changes whenever the list does: the page asks for list.js?v=STAMP
    count: int
    think: dict[int, Think]  # by bot version id
    missing: int = 0  # blocks of replays not written yet (see write_games' `within`)


_CHAR = bytes(48 + v if v <= CHAR_MAX else 255 for v in range(256))  # value -> its code; 255: not ASCII
_FIELDS = record_fields()  # asked once: working out the record's types costs more than a game's replay


def _chars(values: Iterable[int]) -> str:
    """Values 0..CHAR_MAX as one character each, by bytes.translate: a page's replays hold millions."""
    return bytes(values).translate(_CHAR).decode("ascii")


def _record(row: dict[str, Any]) -> GameRecord:
    """`GameRecord.from_dict` with the field types worked out once, not once per game."""
    fields: dict[str, Any] = {n: tuple(row[n]) if isinstance(row[n], list) else row[n] for n, _ in _FIELDS}
    return GameRecord(**fields)


def random_moves_note(record: GameRecord) -> str:
    """What the game page says of a KGP agent's positions played by a random legal move (no move by `stop`,
    or `yield` without one), as the course server plays them: who, how often, out of its moves."""
    return "; ".join(
        f"{bot}: no move by stop: a random legal move was played, {n} time{'s' if n != 1 else ''} "
        f"in {record.moves_made.get(bot, n)} moves"
        for bot, n in sorted(record.random_moves.items())
    )


def encode(game: Replay, record: GameRecord) -> dict[str, Any]:
    """One game's replay, compact: moves and flags one character a ply, boards one character a hole."""
    plies = game.plies
    boards = list(chain.from_iterable([p.board for p in plies]))
    biggest = max(boards, default=0)
    data: dict[str, Any] = {
        "o": game.opening,
        "m": "".join(["S" if p.move == SWAP else chr(48 + int(p.move)) for p in plies]),
        "f": _chars(map(_flags, plies)),
        "n": plies[-1].to_move if plies else game.start.to_move,
        "t": [round(ms, 1) for ms in record.move_ms],
    }
    data["s"] = ",".join([_steps(p) for p in plies])
    if biggest <= CHAR_MAX:
        data["b"] = _chars(boards)
    else:
        data["B"] = [list(p.board) for p in plies]
    captures = {str(k): [p.captured, *p.capture_pits] for k, p in enumerate(plies) if p.captured}
    if captures:
        data["c"] = captures
    if game.error:
        data["e"] = game.error
    if record.random_moves:
        data["r"] = random_moves_note(record)
    if game.fault:
        f = game.fault
        data["x"] = {
            "bot": f.bot,
            "reason": f.reason,
            "detail": f.detail,
            "stderr": f.stderr,
            "ply": f.plies,
            "lines": list(f.lines),
            "cmd": f.command,
            "note": f.bank_note,
        }
    elif record.faulty:  # a record that does not replay still says who forfeited and why
        data["x"] = {"bot": record.faulty, "reason": record.reason, "detail": record.told(),
                     "stderr": record.stderr.get(record.faulty, ""), "ply": len(plies), "lines": [],
                     "cmd": "", "note": ""}  # fmt: skip
    return data


_MARK = {LIFT: "(", CAPTURE: "*", SWEEP: "#"}  # a sown seed has no mark: the hole alone


def _steps(p: Ply) -> str:
    """A ply's steps as the engine traced them (`Rules.trace`), one character a hole (code 48 + hole),
    lifts, captures and the end sweep marked by a character before it; the page's animation moves seeds
    exactly so and decides nothing."""
    return "".join(map(_step, p.steps))


@lru_cache(maxsize=1 << 16)
def _step(step: Step) -> str:
    """One step's characters, kept: a page's replays encode millions of steps, of a few thousand kinds."""
    kind, hole, _ = step
    return _MARK.get(kind, "") + chr(48 + hole)


def _flags(p: Ply) -> int:
    """The page's bits of a ply: 1 North moved, 2 extra turn, 4 capture, 8 swap, 16 relay, 32 game over."""
    return p.mover | 2 * p.extra | 4 * bool(p.captured) | 8 * p.swap | 16 * p.relay | 32 * p.ended


def _write(path: Path, text: str) -> None:
    """Beside, then renamed: a page loading the file never reads half of it."""
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_text(text, encoding="utf-8")
    part.replace(path)


def _header(path: Path) -> dict[str, Any] | None:
    try:
        with path.open(encoding="utf-8") as f:
            line = f.readline()
    except OSError:
        return None
    if not line.startswith(HEADER):
        return None
    try:
        data = json.loads(line[len(HEADER) :])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _block(
    store: Store, rules: Rules, settings: Settings | None, block: int
) -> tuple[dict[str, Any], dict[int, Think]]:
    """Replay one block's games: their encoded replays by id, and think times by bot version."""
    rows = list(queries.records_between(store, block * BLOCK, block * BLOCK + BLOCK - 1))
    return _replayed(rows, rules, settings, queries.bot_places(store))


def _replayed(
    rows: list[dict[str, Any]], rules: Rules, settings: Settings | None, places: dict[int, Where]
) -> tuple[dict[str, Any], dict[int, Think]]:
    clock = settings.clock if settings else None
    limit = float((clock or TimeControl()).move_ms)
    games: dict[str, Any] = {}
    spent: defaultdict[int, list[float]] = defaultdict(list)  # each bot version's think times, in order
    spec = rules.spec
    for row in rows:
        record = _record(row)
        south, north = int(row["south_id"]), int(row["north_id"])
        where = {record.south: places[south], record.north: places[north]}
        game = replay(record, clock, rules if record.rules == spec else None, where)
        games[str(row["id"])] = encode(game, record)
        _spent(spent, game, record, south, north)
    return games, _thought(spent, limit)


def think_times(rows: Iterable[dict[str, Any]], settings: Settings | None) -> dict[int, Think]:
    """Each bot version's think times over a store's `rows`, as the report's replays count them (who moved
    is the rules' to say: an extra turn, the pie's swap), without drawing the replays: for the class
    server's bot pages, which the report's files are not written for."""
    rules = parse_rules(settings.rules) if settings else parse_rules("kalah")
    clock = settings.clock if settings else TimeControl()
    spent: defaultdict[int, list[float]] = defaultdict(list)
    for row in rows:
        record = _record(row)
        game = replay(record, clock if settings else None, rules if record.rules == rules.spec else None)
        _spent(spent, game, record, int(row["south_id"]), int(row["north_id"]))
    return _thought(spent, float(clock.move_ms))


def _spent(
    spent: defaultdict[int, list[float]], game: Replay, record: GameRecord, south: int, north: int
) -> None:
    owners = [south, north]
    times = iter(record.move_ms)
    for ply in game.plies:
        if not ply.opening:
            ms = next(times, None)
            if ms is not None:
                spent[owners[ply.mover]].append(ms)
        if ply.swap:
            owners.reverse()


def _thought(spent: dict[int, list[float]], limit: float) -> dict[int, Think]:
    think = {bot: Think() for bot in spent}
    for bot, them in spent.items():
        think[bot].add(them, limit)
    return think


def _block_file(
    block: int,
    sig: list[Any],
    rows: list[dict[str, Any]],
    settings: Settings | None,
    places: dict[int, Where],
) -> tuple[str, dict[int, Any]]:
    """A block file's text and its think times (plain): what a worker process makes of a block's rows."""
    rules = parse_rules(settings.rules) if settings else parse_rules("kalah")
    data, stats = _replayed(rows, rules, settings, places)
    think = {b: t.plain() for b, t in stats.items()}
    head = {"sig": sig, "think": {str(b): v for b, v in think.items()}}
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"{HEADER}{json.dumps(head, separators=(',', ':'))}\narenaBlock({block},{body});\n", think


POOL_FROM = 16  # blocks to replay before it pays to start worker processes (each imports arena, ~1 s)


def write_games(store: Store, folder: Path, within: float | None = None, jobs: int = 1) -> GameFiles:
    """Write FOLDER/games/: the list, and every block whose games changed since it was written.

    Replaying is the costly part (a stored game never changes, so an unchanged block is never replayed
    again). `within`: seconds to spend on it; blocks still to write when they are up are left for the next
    write (`GameFiles.missing`), newest first, so a page of a big tournament can be up before all its replays
    are. `jobs`: processes to replay with (one: this one)."""
    out = Path(folder) / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    settings = store.settings()
    rules = parse_rules(settings.rules) if settings else parse_rules("kalah")
    think: dict[int, Think] = {}
    wanted = set()
    count = 0
    todo: list[tuple[int, list[Any], Path]] = []
    for block, games, id_sum, finished in queries.id_blocks(store, BLOCK):
        count += games
        path = out / f"b{block}.js"
        wanted.add(path.name)
        sig = [FORMAT, games, id_sum, finished, rules.spec, settings.clock.move_ms if settings else None]
        header = _header(path)
        if header is not None and header.get("sig") == sig:
            for bot, v in header["think"].items():
                think.setdefault(int(bot), Think()).merge(Think.of(v))
        else:
            todo.append((block, sig, path))
    for stale in out.glob("b*.js"):
        if stale.name not in wanted:
            stale.unlink()
    stamp = _write_list(store, out, rules)
    deadline = None if within is None else time.monotonic() + within
    places = queries.bot_places(store)
    done = _replay_blocks(store, settings, places, todo[::-1], deadline, jobs)
    for stats in done:
        for bot, v in stats.items():
            think.setdefault(int(bot), Think()).merge(Think.of(v))
    return GameFiles(stamp, count, think, len(todo) - len(done))


def _written(path: Path, future: Future[tuple[str, dict[int, Any]]]) -> dict[int, Any]:
    text, think = future.result()
    _write(path, text)
    return think


def _replay_blocks(
    store: Store,
    settings: Settings | None,
    places: dict[int, Where],
    todo: list[tuple[int, list[Any], Path]],
    deadline: float | None,
    jobs: int,
) -> list[dict[int, Any]]:
    """Write the blocks of `todo` in order until `deadline`; the think times of those written."""

    def rows(block: int) -> list[dict[str, Any]]:
        return list(queries.records_between(store, block * BLOCK, block * BLOCK + BLOCK - 1))

    done: list[dict[int, Any]] = []
    if jobs > 1 and len(todo) >= POOL_FROM and deadline is None:
        # fork: the workers need nothing but the function (spawn and forkserver would import the caller's
        # main module again, which a script without a __main__ guard does not survive)
        try:
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
                running: deque[tuple[Path, Future[tuple[str, dict[int, Any]]]]] = deque()
                for block, sig, path in todo:  # a few blocks ahead per process: memory stays that of a few
                    made = pool.submit(_block_file, block, sig, rows(block), settings, places)
                    running.append((path, made))
                    if len(running) >= 2 * jobs:
                        done.append(_written(*running.popleft()))
                while running:
                    done.append(_written(*running.popleft()))
            return done
        except (BrokenProcessPool, OSError):  # no processes to be had: this one does the rest
            todo = todo[len(done) :]
    for block, sig, path in todo:
        if deadline is not None and time.monotonic() > deadline:
            break
        text, think = _block_file(block, sig, rows(block), settings, places)
        _write(path, text)
        done.append(think)
    return done


def _write_list(store: Store, out: Path, rules: Rules) -> str:
    """games/list.js: every game as columns of small numbers, and the names to read them with."""
    current = set(store.current_ids())
    versions = queries.bot_versions(store)
    shared = Counter(n for _, n, _ in versions)
    index: dict[int, int] = {}
    bots: list[dict[str, Any]] = []
    for i, name, digest in sorted(versions, key=lambda v: (v[0] not in current, v[1], v[0])):
        index[i] = len(bots)
        # a name with several versions: the current one keeps the plain name, older ones show their digest
        label = f"{name}@{digest[:7]}" if shared[name] > 1 and i not in current else name
        bots.append({"id": i, "name": name, "label": label, "current": i in current})
    reasons: dict[str, int] = {r: k for k, r in enumerate(REASON_ORDER)}
    cols: dict[str, list[int]] = {
        k: [] for k in ("id", "round", "s", "n", "w", "x", "r", "ss", "ns", "p", "o", "sw")
    }
    last_id = last_round = 0
    for gid, rnd, s, n, w, x, reason, ss, ns, p, o, sw in queries.game_list(store):
        cols["id"].append(gid - last_id)
        cols["round"].append(rnd - last_round)
        last_id, last_round = gid, rnd
        cols["s"].append(index[s])
        cols["n"].append(index[n])
        cols["w"].append(2 if not w else (0 if w == s else 1))  # 0 South's starter won, 1 North's, 2 draw
        cols["x"].append(0 if not x else (1 if x == s else 2))  # who forfeited, likewise
        cols["r"].append(reasons.setdefault(str(reason), len(reasons)))
        cols["ss"].append(int(ss))
        cols["ns"].append(int(ns))
        cols["p"].append(int(p or 0))
        cols["o"].append(int(o or 0))
        cols["sw"].append(int(bool(sw)))
    start = rules.initial()
    data = {
        "block": BLOCK,
        "pits": rules.pits,
        "rules": rules.spec,
        "start": list(start.board),
        "bots": bots,
        "reasons": list(reasons),
        "count": len(cols["id"]),
        **cols,
    }
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    stamp = f"{len(cols['id'])}-{zlib.crc32(body.encode()):08x}"
    _write(out / "list.js", f"arenaList({body});\n")
    return stamp
