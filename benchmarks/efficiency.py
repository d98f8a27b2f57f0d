"""Tournament efficiency: how much of the machine `arena run` gives to the bots' thinking.

    python benchmarks/efficiency.py [--rounds 2] [--move-time 100] [--jobs N] [--mode spin|sleep]

Runs the real command, as a user does (`arena run`: confined, every game stored, the report written), at the
README's settings: four bots, `--move-time 100`, all cores; but `--rounds 2` by default instead of the
README's 20, to stay near a minute and a half on 2 cores. The four bots are one small standard-library bot
written into a temporary bots folder under four names: it uses 92% of the MOVE's milliseconds, from the moment
it read the line, then plays a random legal pit. By default it spins (`--mode spin`): bots that use their
time compute, so the referees, the store writer and the report compete with them for the cores, as in a real
tournament; `--mode sleep` shows the machinery alone, with idle cores.

Efficiency is the sum of every bot's think time in every game (the records' think_ms, the referee's clock)
divided by (wall time of the whole command x jobs): process starts, the time between moves and between games,
store writes, the idle tail while the last game ends, and the report all count in the wall time.

Where the rest goes comes from the bots themselves: each logs to stderr (kept in the game record) when it
started, when it read each NEWGAME and MOVE and when it answered, on the machine's wall clock. Games are put
back on the workers that played them (a worker plays one game at a time), and each worker's share of the wall
time is split into the parts printed. Three short extra commands measure the fixed costs on their own:
`arena run` again with nothing left to play, `arena report`, and importing arena.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRACTION = 0.92
BOTS = 4

# The bot. Every log line goes to stderr before the answer is printed, so the referee has drained it into this
# game's record by the time it reads the answer.
BOT = '''"""Benchmark bot: uses {fraction:.0%} of each MOVE's time ({mode}), then plays a random legal pit."""
import random
import sys
import time

BOOT = time.time()
SPIN = {spin}
log = sys.stderr.write
log(f"B {{BOOT:.6f}}\\n")
for line in sys.stdin:
    got = time.time()
    words = line.split()
    if not words:
        continue
    if words[0] == "NEWGAME":
        log(f"N {{got:.6f}}\\n")
    elif words[0] == "MOVE":
        until = time.monotonic() + {fraction} * int(words[1]) / 1000
        if SPIN:
            while time.monotonic() < until:
                pass
        else:
            time.sleep(max(0.0, until - time.monotonic()))
        board = [int(w) for w in words[2:]]
        pits = len(board) // 2 - 1
        move = random.choice([p for p in range(1, pits + 1) if board[p - 1] > 0])
        log(f"M {{got:.6f}} {{time.time():.6f}}\\n")
        sys.stderr.flush()
        print(move, flush=True)
    elif words[0] == "QUIT":
        break
'''


def arena_command() -> list[str]:
    """The `arena` console script next to this Python (a venv), else `python -m arena`."""
    script = Path(sys.executable).parent / "arena"
    return [str(script)] if script.exists() else [sys.executable, "-m", "arena"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@dataclass
class Game:
    record: dict
    start: float = 0.0  # first sign of the game in the bots' logs (a NEWGAME read, or a bot's start)
    end: float = 0.0  # the last answer
    own_ms: list[float] = field(default_factory=list)  # per move in play order: the bot's own thinking
    boots: list[float] = field(default_factory=list)  # bot processes that started for this game
    first_moves: list[int] = field(default_factory=list)  # indexes (in play order) of a process's first move


def parse(record: dict) -> Game:
    """The bots' logs of one game, back in the order of its moves."""
    game = Game(record)
    times: list[float] = []
    moves: list[tuple[float, float, bool]] = []  # (read, answered, first move of its process)
    for text in record["stderr"].values():
        fresh = False
        for line in text.splitlines():
            kind, *stamps = line.split()
            values = [float(s) for s in stamps]
            times += values
            if kind == "B":
                game.boots.append(values[0])
                fresh = True
            elif kind == "M":
                moves.append((values[0], values[1], fresh))
                fresh = False
    moves.sort()
    if len(moves) != len(record["moves"]):
        raise SystemExit(f"game {record['id']}: {len(moves)} logged moves, {len(record['moves'])} recorded")
    game.own_ms = [(b - a) * 1000 for a, b, _ in moves]
    game.first_moves = [i for i, (_, _, first) in enumerate(moves) if first]
    # The referee's clock for a move starts when it sends the MOVE: the answer's time minus the move's ms.
    # For a bot process started for this game that is before the bot's first log line.
    sent = [answered - ms / 1000 for (_, answered, _), ms in zip(moves, record["move_ms"], strict=True)]
    game.start, game.end = min(times + sent), max(times)
    return game


def lanes(games: list[Game], jobs: int) -> list[list[Game]]:
    """Put the games back on the workers. A worker plays one game at a time and takes the next as soon as
    one ends, so a game goes to the worker whose last game ended last before it began. The logs' times are
    the bots' (an answer is logged just before the referee reads it, a few ms on a busy machine), hence
    the slack."""
    slack = 0.05
    workers: list[list[Game]] = [[] for _ in range(jobs)]
    for game in sorted(games, key=lambda g: g.start):
        free = [w for w in workers if not w or w[-1].end <= game.start]
        free = free or [w for w in workers if w[-1].end <= game.start + slack]
        if not free:
            raise SystemExit(f"more than {jobs} games at once in the logs: is --jobs right?")
        max(free, key=lambda w: w[-1].end if w else 0.0).append(game)
    return workers


def timed(args: list[str], cwd: Path, watch: Path | None = None) -> tuple[float, float, float, float]:
    """Run a command: (wall seconds, its start and end on the wall clock, when `watch` first existed)."""
    seen = [0.0]
    done = threading.Event()

    def look() -> None:  # a stat every 5 ms until the file is there
        while watch is not None and not done.is_set() and not seen[0]:
            if watch.exists():
                seen[0] = time.time()
            time.sleep(0.005)

    watcher = threading.Thread(target=look, daemon=True)
    began, t0 = time.time(), time.perf_counter()
    watcher.start()
    subprocess.run(args, cwd=cwd, env=env(), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    done.set()
    watcher.join()
    return wall, began, began + wall, seen[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds (the README's tournament has 20)")
    parser.add_argument("--move-time", type=int, default=100, help="ms per move, as in the README")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--mode", choices=("spin", "sleep"), default="spin", help="how the bots use time")
    parser.add_argument("--keep", type=Path, help="keep the bots and the tournament in this folder")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="arena-efficiency-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        run(args, tmp)
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path) -> None:
    bots = tmp / "bots"
    bots.mkdir(exist_ok=True)
    code = BOT.format(fraction=FRACTION, mode=args.mode, spin=args.mode == "spin")
    for i in range(1, BOTS + 1):
        (bots / f"clock{i}.py").write_text(code)
    arena = arena_command()
    where = ["--out", str(tmp / "out"), "--name", "efficiency"]
    command = [*arena, "run", "--rounds", str(args.rounds), "--move-time", str(args.move_time)]
    command += ["--jobs", str(args.jobs), "--seed", "1", "--quiet", "--bots", str(bots), *where]
    folder = tmp / "out" / "efficiency"
    shutil.rmtree(tmp / "out", ignore_errors=True)
    # A new tournament writes its store once its settings and openings hold: the end of the start-up proper.
    wall, began, ended, stored = timed(command, tmp, watch=folder / "arena.sqlite")
    reported = (folder / "index.html").stat().st_mtime
    export = [*arena, "export", "--format", "jsonl", *where]
    exported = subprocess.run(export, cwd=tmp, env=env(), check=True, capture_output=True, text=True)
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    again = timed(command, tmp)[0]  # nothing left to play: start-up, standings, report
    report = timed([*arena, "report", *where], tmp)[0]
    imports = timed([sys.executable, "-c", "import arena.cli"], tmp)[0]

    games = [parse(r) for r in records]
    jobs = args.jobs
    capacity = wall * jobs
    think = sum(sum(r["think_ms"].values()) for r in records) / 1000
    moves = sum(len(r["moves"]) for r in records)
    own = sum(sum(g.own_ms) for g in games) / 1000
    faults = [r for r in records if r["faulty"]]
    # The referee's clock per move minus the bot's own: the pipe both ways and the wake-ups, and on a
    # process's first move its start (interpreter, sandbox) as well.
    start_in_moves = transport = 0.0
    for g in games:
        extra = [ref - mine for ref, mine in zip(g.record["move_ms"], g.own_ms, strict=True)]
        start_in_moves += sum(x for i, x in enumerate(extra) if i in g.first_moves) / 1000
        transport += sum(x for i, x in enumerate(extra) if i not in g.first_moves) / 1000
    firsts = sum(len(g.first_moves) for g in games)
    in_game = sum(g.end - g.start - sum(g.record["move_ms"]) / 1000 for g in games)
    workers = lanes(games, jobs)
    busy = [w for w in workers if w]
    last = max(w[-1].end for w in busy)
    per_move = transport / max(1, moves - firsts) * 1000
    per_game = [
        ("bots thinking, on their own clock", own),
        (f"pipe and wake-ups, {per_move:.2f} ms a move (referee's clock - bot's)", transport),
        ("in a game between moves (referee's work, NEWGAME to first MOVE)", in_game),
        (
            "between games on a worker (END, record, next task, new processes)",
            sum(b.start - a.end for w in busy for a, b in zip(w, w[1:], strict=False)),
        ),
    ]
    fixed = [  # the same for 2 rounds or 20 (bot processes are reused)
        (
            "start-up until the store is written (python, imports, settings, openings)",
            (stored - began) * jobs,
        ),
        (
            "then until each worker's first game (sandbox probe, workers, first bots)",
            sum(w[0].start - stored for w in busy) + (jobs - len(busy)) * (last - stored),
        ),
        ("bot process starts inside a first move (referee's clock - bot's)", start_in_moves),
        (
            "after a worker's last game while another plays on (idle worker)",
            sum(last - w[-1].end for w in busy),
        ),
        (
            "after the last game until the page is written (last commit, standings, report)",
            (reported - last) * jobs,
        ),
        ("after the page until the command exits", (ended - reported) * jobs),
    ]

    print(
        f"arena run: {BOTS} bots that use {FRACTION:.0%} of each move's time ({args.mode}), --move-time "
        f"{args.move_time}, --rounds {args.rounds} (the README's tournament: 20), --jobs {jobs}, confined "
        "as by default"
    )
    print(
        f"  {len(records)} games, {moves} moves, {len(faults)} forfeits, "
        f"{sum(len(g.boots) for g in games)} bot processes started; wall time {wall:.1f} s"
    )
    print(
        f"efficiency = think time / (wall x jobs) = {think:.1f} / ({wall:.1f} x {jobs}) = "
        f"{think / capacity:.3f}   (target: at least 0.95)"
    )
    print(f"  counting only the bots' own thinking (their clock): {own / capacity:.3f}")
    print(f"where the {capacity:.1f} core-seconds (wall x jobs) go:")
    for name, seconds in per_game + fixed:
        print(f"  {seconds:8.2f} s  {seconds / capacity:6.1%}  {name}")
    rest = capacity - sum(s for _, s in per_game + fixed)
    print(f"  {rest:8.2f} s  {rest / capacity:6.1%}  not accounted for")
    print(
        f"the fixed costs alone: arena run again with nothing left to play {again:.2f} s (start-up, "
        f"standings, report); arena report {report:.2f} s; python -c 'import arena.cli' {imports:.2f} s"
    )
    scale = 20 / args.rounds
    grown = sum(s for _, s in per_game) * scale + sum(s for _, s in fixed) + rest
    print(
        f"projected to the README's 20 rounds (the per-game parts x{scale:g}, the fixed ones as measured): "
        f"efficiency {((think - start_in_moves) * scale + start_in_moves) / grown:.3f}"
    )
    if faults:
        print("forfeits:", "; ".join(f"{r['faulty']}: {r['reason']} {r['detail']}" for r in faults[:5]))
    spread = statistics.quantiles([x for g in games for x in g.own_ms], n=20)
    print(f"the bots' own time a move, 5%..95%: {spread[0]:.1f}..{spread[-1]:.1f} ms")


if __name__ == "__main__":
    main()
