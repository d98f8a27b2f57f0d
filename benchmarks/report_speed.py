"""How long the leaderboard and the HTML report take on big stores, and how much memory they need.

    .venv/bin/python benchmarks/report_speed.py [--games 10000 100000] [--bots 20] [--keep DIR]

Builds a store per size with synthetic games among ~20 bots (straight into SQLite with executemany: no bots
run), then measures, each in a fresh process so the figures are its own: `ratings.leaderboard` and
`report.write_report` (what `arena run` does after a tournament), wall seconds, and peak memory: the rise of
the process's max RSS over what it held before, and the peak of Python allocations under tracemalloc. Flat
memory shows as the same peak for 10x the games. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.match.bots import Bot  # noqa: E402
from arena.report import page as report  # noqa: E402
from arena.tournament import ratings  # noqa: E402
from arena.tournament.store import Settings, Store, now  # noqa: E402

REASONS = ("timeout", "crash", "illegal", "garbled")


def _games(ids: list[int], names: list[str], count: int, seed: int) -> Iterator[tuple[object, ...]]:
    """`count` games in round-robin rounds; stronger bots win more; ~3% draws, ~2% forfeits with stderr."""
    rng = random.Random(seed)
    strength = {i: rng.gauss(0.0, 1.0) for i in ids}
    name = dict(zip(ids, names, strict=True))
    made, rnd = 0, 0
    stamp = now()
    while made < count:
        rnd += 1
        for south in ids:
            for north in ids:
                if south == north or made >= count:
                    continue
                made += 1
                n_moves = rng.randint(20, 60)
                moves = [rng.randint(1, 6) for _ in range(n_moves)]
                ms = [round(rng.uniform(0.1, 30.0), 2) for _ in range(n_moves)]
                ss = rng.randint(0, 48)
                ns = 48 - ss
                faulty = winner = None
                reason, detail = "normal", ""
                stderr = {name[south]: "", name[north]: ""}
                roll = rng.random()
                if roll < 0.02:
                    faulty = rng.choice((south, north))
                    winner = north if faulty == south else south
                    reason = rng.choice(REASONS)
                    detail = f"{reason}: synthetic fault in move {n_moves}"
                    stderr[name[faulty]] = "".join(f"debug line {k} <tag> & more\n" for k in range(30))
                elif roll < 0.05:
                    ss = ns = 24
                else:
                    p = 1.0 / (1.0 + math.exp(strength[north] - strength[south]))
                    winner = south if rng.random() < p else north
                    if (winner == south) != (ss > ns):
                        ss, ns = ns, ss
                    if ss == ns:
                        ss, ns = (ss + 1, ns - 1) if winner == south else (ss - 1, ns + 1)
                think_s, think_n = sum(ms[0::2]), sum(ms[1::2])
                yield (
                    rnd, f"{rng.getrandbits(64):016x}", south, north, "kalah", json.dumps(moves), ss, ns,
                    winner, reason, faulty, detail, json.dumps(ms), json.dumps(stderr), 0,
                    think_s, (n_moves + 1) // 2, think_n, n_moves // 2, stamp,
                )  # fmt: skip


def build(path: Path, games: int, bots: int, seed: int = 1) -> None:
    """A store at `path` with `bots` current bots (plus one retired version) and `games` games."""
    with Store(path) as store:
        store.fix_settings(Settings("kalah", 1000, 10_000, seed))
        field = [
            Bot(f"bot{k:02d}", ("true",), ROOT, ROOT / f"bot{k:02d}.py", f"{k:016x}") for k in range(bots)
        ]
        store.bot_id(Bot("bot00", ("true",), ROOT, ROOT / "bot00.py", "old-version"))  # retired, no games
        ids = store.set_current(field)
        rows = _games(ids, [b.name for b in field], games, seed)
        store.db.execute("BEGIN")
        store.db.executemany(
            "INSERT INTO games (round, ordinal, south_id, north_id, rules, moves, south_store, north_store, "
            "winner_id, reason, faulty_id, detail, move_ms, stderr, swapped, south_think_ms, south_moves, "
            "north_think_ms, north_moves, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        store.db.execute("COMMIT")


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def measure(path: Path, trace: bool) -> dict[str, float]:
    """Time leaderboard + write_report on the store at `path` (run in a fresh process)."""
    with Store(path, create=False) as store:
        before = _maxrss_mib()
        if trace:
            tracemalloc.start()
        t0 = time.perf_counter()
        board = ratings.leaderboard(store)
        t1 = time.perf_counter()
        page = report.write_report(store, path.parent)
        t2 = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else math.nan
        tracemalloc.stop()
        return {
            "leaderboard_s": t1 - t0,
            "report_s": t2 - t1,
            "total_s": t2 - t0,
            "rss_before_mib": before,
            "rss_rise_mib": _maxrss_mib() - before,
            "py_peak_mib": peak,
            "bots": len(board),
            "page_kib": page.stat().st_size / 1024,
        }


def _child(path: Path, trace: bool) -> dict[str, float]:
    argv = [sys.executable, __file__, "--measure", str(path)] + (["--trace"] if trace else [])
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--bots", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="build the stores in this folder and keep them")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.trace)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        print(f"{'games':>8} {'bots':>5} {'build s':>8} {'leaderboard s':>14} {'report s':>9} {'total s':>8} "
              f"{'maxRSS rise MiB':>16} {'py peak MiB':>12} {'db MiB':>7} {'page KiB':>9}")  # fmt: skip
        for games in args.games:
            path = base / f"g{games}" / "arena.sqlite"
            if path.exists():
                path.unlink()
            t0 = time.perf_counter()
            build(path, games, args.bots)
            built = time.perf_counter() - t0
            timed = _child(path, trace=False)
            traced = _child(path, trace=True)
            print(
                f"{games:>8} {timed['bots']:>5.0f} {built:>8.1f} {timed['leaderboard_s']:>14.2f} "
                f"{timed['report_s']:>9.2f} {timed['total_s']:>8.2f} {timed['rss_rise_mib']:>16.1f} "
                f"{traced['py_peak_mib']:>12.1f} {path.stat().st_size / 2**20:>7.1f} "
                f"{timed['page_kib']:>9.0f}"
            )
        print("report s includes a second leaderboard (write_report computes its own, as `arena run` does).")


if __name__ == "__main__":
    main()
