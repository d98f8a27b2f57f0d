"""Tournament throughput: random vs random through the scheduler on all cores, against one referee thread,
and the real `arena run` command against the machine's raw pipe limit.

    python benchmarks/throughput.py [--games 2000] [--jobs N]

Prints games/s for the scheduler (worker processes reusing bot processes), for the same with --fresh (a new
process per game, as a baseline for what reuse saves), and for a single in-process referee as the baseline.
With gcc present it also plays protocol.md's C bot against itself: a bot that costs almost nothing, so the
figure shows what the referee and scheduler themselves can do.

Then what a user runs: `arena run` as a subprocess (confined as by default, every game stored, the report
written) on a temporary bots folder holding two copies of the random bot, timed from start to exit. Its
games/s stand next to the raw pipe limit measured in the same run: the same games' positions sent as bare MOVE
lines over blocking pipes (write, readline; nothing else) to the same random bot, on as many processes as
arena has jobs, each with its own two bots.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.game.rules import parse_rules  # noqa: E402
from arena.match.bots import Bot, load_bot  # noqa: E402
from arena.match.protocol import move_line, newgame_line  # noqa: E402
from arena.match.referee import Limits, Player, play_game  # noqa: E402
from arena.sandbox import Confinement, capabilities  # noqa: E402
from arena.tournament.local import play_slots  # noqa: E402
from arena.tournament.schedule import Slot  # noqa: E402


def scheduler_rate(
    a: Bot, b: Bot, games: int, jobs: int, fresh: bool, conf: Confinement | None = None
) -> float:
    slots = [Slot(1, str(i), a, b) if i % 2 else Slot(1, str(i), b, a) for i in range(games)]
    done = 0

    def count(slot, record) -> None:  # type: ignore[no-untyped-def]
        nonlocal done
        done += 1

    start = time.perf_counter()
    play_slots(slots, "kalah", Limits(), jobs, fresh, count, conf)
    assert done == games
    return games / (time.perf_counter() - start)


def single_thread_rate(a: Bot, b: Bot, games: int) -> float:
    rules = parse_rules("kalah")
    pa, pb = Player(a), Player(b)
    start = time.perf_counter()
    for _ in range(games):
        play_game(rules, pa, pb)
    rate = games / (time.perf_counter() - start)
    pa.close()
    pb.close()
    return rate


def c_bot(folder: Path) -> Bot | None:
    """protocol.md's minimal C bot, compiled into `folder`, or None without gcc."""
    if shutil.which("gcc") is None:
        return None
    source = re.search(r"^```c\n(.*?)^```", (ROOT / "protocol.md").read_text(), re.S | re.M)
    assert source, "protocol.md has no C bot"
    (folder / "bot.c").write_text(source.group(1))
    subprocess.run(["gcc", "-O2", "-o", "cbot", "bot.c"], cwd=folder, check=True)
    return load_bot(folder / "cbot")


def arena_command() -> list[str]:
    """The `arena` console script next to this Python (a venv), else `python -m arena`."""
    script = Path(sys.executable).parent / "arena"
    return [str(script)] if script.exists() else [sys.executable, "-m", "arena"]


@dataclass
class Run:
    games: int
    wall: float  # s, the whole command
    startup: float  # s until the tournament's store was written (python, imports, settings, openings)
    main_cpu: float  # s of CPU of the arena process itself once its store exists (records, store writes,
    # the page), not its workers'; its start-up before that is in `startup`
    again: float  # s, the same command again with nothing left to play
    records: list[dict]


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of one process so far, from /proc; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def arena_run(folder: Path, games: int, jobs: int) -> Run:
    """`arena run` on two copies of the random bot, with its default confinement, as a user runs it."""
    bots = folder / "bots"
    bots.mkdir()
    for name in ("random_a", "random_b"):
        shutil.copy(ROOT / "bots" / "random.py", bots / f"{name}.py")
    where = ["--out", str(folder / "out"), "--name", "throughput"]
    command = [*arena_command(), "run", "--rounds", str(max(1, games // 2)), "--jobs", str(jobs)]
    command += ["--seed", "1", "--quiet", "--bots", str(bots), *where]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    store = folder / "out" / "throughput" / "arena.sqlite"
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL)
    stored = cpu = cpu_at_store = 0.0
    while proc.poll() is None:  # every 5 ms: has the store appeared, how much CPU has arena used
        cpu = max(cpu, _cpu(proc.pid))
        if not stored and store.exists():
            stored, cpu_at_store = time.perf_counter() - start, cpu
        time.sleep(0.005)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"arena run failed with exit code {proc.returncode}")
    start = time.perf_counter()
    subprocess.run(command, cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL)
    again = time.perf_counter() - start
    export = [*arena_command(), "export", "--format", "jsonl", *where]
    out = subprocess.run(export, cwd=folder, env=env, check=True, capture_output=True, text=True).stdout
    records = [json.loads(line) for line in out.splitlines()]
    return Run(len(records), wall, stored, cpu - cpu_at_store, again, records)


def _raw_worker(games: list[tuple[list, list]], barrier, results) -> None:  # type: ignore[no-untyped-def]
    """One job's share of the raw limit: MOVE lines to two random bots over blocking pipes, nothing else."""
    rules = parse_rules("kalah")
    bot = load_bot(ROOT / "bots" / "random.py")
    procs = [
        subprocess.Popen(bot.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        for _ in range(2)
    ]
    lines = []
    for opening, moves in games:
        pos = rules.initial()
        for ply in opening:
            pos = rules.play(pos, ply)
        for move in moves:
            lines.append((procs[pos.to_move], move_line(pos, pos.to_move, 1000) + "\n"))
            pos = rules.play(pos, move)
    for side, p in enumerate(procs):
        p.stdin.write(newgame_line(rules, side) + "\n")
        p.stdin.write(move_line(rules.initial(), side, 1000) + "\n")  # warm up: the bot has started
        p.stdout.readline()
    barrier.wait()
    start = time.perf_counter()
    for p, line in lines:
        p.stdin.write(line)
        p.stdout.readline()
    results.put(time.perf_counter() - start)
    for p in procs:
        p.stdin.write("QUIT\n")
        p.stdin.close()
        p.wait()


def raw_pipe_rate(records: list[dict], jobs: int) -> float:
    """Games/s of bare pipe round trips over the positions of `records`, split over `jobs` processes."""
    games = [(r.get("opening") or [], r["moves"]) for r in records]
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(jobs), ctx.Queue()
    workers = [ctx.Process(target=_raw_worker, args=(games[i::jobs], barrier, results)) for i in range(jobs)]
    for w in workers:
        w.start()
    slowest = max(results.get() for _ in workers)
    for w in workers:
        w.join()
    return len(games) / slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="times the scheduler, arena run and raw figures are taken, in turn",
    )
    args = parser.parse_args()
    a = load_bot(ROOT / "bots" / "random.py")
    b = Bot("random-2", a.argv, a.cwd, a.path, a.digest)
    single = single_thread_rate(a, b, args.games // 4)
    fresh = scheduler_rate(a, b, max(20, args.games // 20), args.jobs, fresh=True)
    conf, caps = capabilities(Confinement(hidden=(str(ROOT / "bots"),)), want_sandbox=True)
    # The machine is shared: the figures compared are taken in turn, `--repeat` times, and their medians
    # (and the medians of the ratios within each turn) are printed.
    turns: list[dict[str, float]] = []
    runs: list[Run] = []
    for _ in range(args.repeat):
        turn = {"reuse": scheduler_rate(a, b, args.games, args.jobs, fresh=False)}
        turn["confined"] = scheduler_rate(a, b, args.games, args.jobs, fresh=False, conf=conf)
        with tempfile.TemporaryDirectory() as tmp:
            run = arena_run(Path(tmp), args.games, args.jobs)
        runs.append(run)
        turn["run"] = run.games / run.wall
        turn["raw"] = raw_pipe_rate(run.records, args.jobs)
        turns.append(turn)

    def med(key: str, over: str | None = None) -> float:
        return statistics.median(t[key] / (t[over] if over else 1.0) for t in turns)

    def spread(key: str) -> str:
        return f"{min(t[key] for t in turns):.0f}..{max(t[key] for t in turns):.0f}"

    reuse = med("reuse")
    print(
        f"cores: {os.cpu_count()}, jobs: {args.jobs}, random vs random, kalah; medians of {args.repeat} turns"
    )
    print(f"one referee in-process (baseline):   {single:8.1f} games/s")
    print(
        f"arena scheduler, processes reused:   {reuse:8.1f} games/s  ({spread('reuse')}; "
        f"{reuse / single:.2f}x the baseline)"
    )
    print(
        f"arena scheduler, --fresh processes:  {fresh:8.1f} games/s  (reuse is {reuse / fresh:.0f}x faster)"
    )
    what = ("sandbox" if caps.sandbox else "no sandbox") + " + cgroups" * caps.cgroups
    print(
        f"arena scheduler, confined ({what}): {med('confined'):8.1f} games/s  ({spread('confined')}; "
        f"{med('confined', 'reuse'):.2f}x unconfined)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cbot = c_bot(Path(tmp))
        if cbot is not None:
            other = Bot("cbot-2", cbot.argv, cbot.cwd, cbot.path, cbot.digest)
            c_rate = scheduler_rate(cbot, other, args.games, args.jobs, fresh=False)
            print(f"arena scheduler, protocol.md's C bot:  {c_rate:8.1f} games/s (the referee's own limit)")
    games = runs[0].games
    moves = sum(len(r["moves"]) for r in runs[0].records) / games
    startup = statistics.median(r.startup for r in runs)
    wall = statistics.median(r.wall for r in runs)
    main_cpu = statistics.median(r.main_cpu for r in runs)
    print(
        f"arena run, the command (confined, storing, the page): {games} games, {wall:.2f} s: "
        f"{med('run'):8.1f} games/s  ({spread('run')})"
    )
    print(
        f"  start-up until the store is written (python, imports, openings): {startup:.2f} s; from there to "
        f"exit {games / (wall - startup):.1f} games/s; the same command with nothing left to play: "
        f"{statistics.median(r.again for r in runs):.2f} s"
    )
    print(
        f"  the arena process's CPU after start-up (records, store, page; not workers): {main_cpu:.2f} s, "
        f"{main_cpu / games * 1000:.2f} ms a game"
    )
    print(
        f"raw pipe limit, the same positions ({moves:.0f} moves a game), {args.jobs} processes x 2 bots: "
        f"{med('raw'):8.1f} games/s  ({spread('raw')})"
    )
    print(f"arena run / raw pipe limit: {med('run', 'raw'):.2f}  (median of the turns' ratios)")


if __name__ == "__main__":
    main()
