"""How long the leaderboard and the HTML report take on big stores, how big the page is, and how soon a
browser draws it.

    .venv/bin/python benchmarks/report_speed.py [--games 1000 10000 100000] [--bots 20] [--keep DIR]
        [--baseline REV]

Builds a store per size with synthetic games among ~20 bots (random legal games of Kalah(6,6) played through
the rules engine, ~2% forfeits with stderr; stored straight into SQLite in one transaction: no bots run),
then measures, each in a fresh process so the figures are its own: `ratings.leaderboard` and
`report.write_report` (what `arena run` does after a tournament; the first write replays every game into
games/bNNN.js, a second one finds them unchanged, as the live page's rewrites do), wall seconds, and peak
memory: the rise of the process's max RSS over what it held before, and the peak of Python allocations under
tracemalloc. Then the sizes: index.html, games/list.js and all of games/. Then headless Chromium (Selenium,
Debian's chromium-driver) opens the page from disk, and the page's own performance marks give the time until
the leaderboard is drawn ("leaderboard") and until the game list has loaded ("games-ready"), and the time to
open a replay (#game-N until its board is drawn). Prints figures; asserts nothing.

--baseline REV also writes the report with arena as it was at git revision REV (exported beside the stores),
on a copy of the same store, just before the current code does, and prints the ratios: a before/after
measured in one run, under the same load (printed with each).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.game.rules import parse_rules  # noqa: E402
from arena.match.bots import Bot  # noqa: E402
from arena.match.clock import TimeControl  # noqa: E402
from arena.match.record import GameRecord  # noqa: E402
from arena.report import page as report  # noqa: E402
from arena.stats import ratings  # noqa: E402
from arena.store import writer as st  # noqa: E402
from arena.store.writer import Settings, Store, now  # noqa: E402

REASONS = ("timeout", "crash", "illegal", "garbled")


def _games(field: list[Bot], count: int, seed: int) -> Iterator[tuple[int, Bot, Bot, GameRecord]]:
    """`count` random legal games in round-robin rounds; ~2% end in a forfeit with a stderr tail."""
    rng = random.Random(seed)
    rules = parse_rules("kalah")
    made, rnd = 0, 0
    while made < count:
        rnd += 1
        for south in field:
            for north in field:
                if south is north or made >= count:
                    continue
                made += 1
                pos, moves = rules.initial(), []
                stop = rng.randint(5, 40) if rng.random() < 0.02 else None
                while not pos.ended and len(moves) != stop:
                    move = rng.choice(rules.legal_moves(pos))
                    moves.append(move)
                    pos = rules.play(pos, move)
                owners = {0: south.name, 1: north.name}
                if stop is not None and not pos.ended:
                    faulty = owners[pos.to_move]
                    winner = owners[1 - pos.to_move]
                    reason = rng.choice(REASONS)
                    detail = f"{reason}: synthetic fault at move {len(moves) + 1}"
                    stderr = {faulty: "".join(f"debug line {k} <tag> & more\n" for k in range(30))}
                else:
                    faulty, reason, detail, stderr = None, "normal", "", {}
                    outcome = rules.result(pos) if pos.ended else None
                    winner = owners[outcome.winner] if outcome and outcome.winner is not None else None
                ms = tuple(round(rng.uniform(0.1, 30.0), 2) for _ in moves)
                record = GameRecord(
                    "kalah", south.name, north.name, tuple(moves), pos.store(0), pos.store(1), winner, reason,
                    faulty, detail, ms, {south.name: sum(ms[0::2]), north.name: sum(ms[1::2])},
                    {south.name: (len(moves) + 1) // 2, north.name: len(moves) // 2}, stderr,
                )  # fmt: skip
                yield rnd, south, north, record


def build(path: Path, games: int, bots: int, seed: int = 1) -> None:
    """A store at `path` with `bots` current bots (plus one retired version) and `games` games."""
    with Store(path) as store:
        store.fix_settings(Settings("kalah", TimeControl(1000, 10_000), seed))
        field = [
            Bot(f"bot{k:02d}", ("true",), ROOT, ROOT / f"bot{k:02d}.py", f"{k:016x}") for k in range(bots)
        ]
        store.bot_id(Bot("bot00", ("true",), ROOT, ROOT / "bot00.py", "old-version"))  # retired, no games
        store.set_current(field)
        stamp = now()
        store.db.execute("BEGIN")
        for k, (rnd, south, north, record) in enumerate(_games(field, games, seed)):
            row = st._game_row(None, rnd, f"{k:09d}", store.bot_id(south), store.bot_id(north), record, stamp)
            store.db.execute(st._INSERT, row)
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
        first: list[float] = []  # when index.html first exists: a big store's page comes before its replays
        page_file = path.parent / report.PAGE
        page_file.unlink(missing_ok=True)

        def watch() -> None:
            while not first and not page_file.exists():
                time.sleep(0.01)
            first.append(time.perf_counter())

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        page = report.write_report(store, path.parent)
        t2 = time.perf_counter()
        watcher.join(1.0)
        peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else math.nan
        tracemalloc.stop()
        t3 = time.perf_counter()
        report.write_report(store, path.parent)  # again: the replays are unchanged, as on a live rewrite
        t4 = time.perf_counter()
        games = page.parent / "games"
        return {
            "leaderboard_s": t1 - t0,
            "report_s": t2 - t1,
            "first_page_s": (first[0] if first else t2) - t1,
            "again_s": t4 - t3,
            "total_s": t2 - t0,
            "list_kib": (games / "list.js").stat().st_size / 1024,
            "games_mib": sum(f.stat().st_size for f in games.iterdir()) / 2**20,
            "rss_before_mib": before,
            "rss_rise_mib": _maxrss_mib() - before,
            "py_peak_mib": peak,
            "bots": len(board),
            "page_kib": page.stat().st_size / 1024,
        }


def browse(page: Path, game: int, runs: int = 3) -> dict[str, float]:
    """Median ms until the leaderboard is drawn, until the game list is loaded, and to open game `game`, in
    headless Chromium opening the page from disk (a new browser each run: nothing cached)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    marks: dict[str, list[float]] = {"leaderboard_ms": [], "games_ready_ms": [], "open_game_ms": []}
    for _ in range(runs):
        options = Options()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
            options.add_argument(arg)
        driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
        try:
            driver.get(page.as_uri())
            end = time.monotonic() + 120
            while time.monotonic() < end:
                got = driver.execute_script(
                    "const m = n => (performance.getEntriesByName(n)[0] || {}).startTime;"
                    "return [m('leaderboard'), m('games-ready')];"
                )
                if got[0] is not None and got[1] is not None:
                    break
                time.sleep(0.05)
            marks["leaderboard_ms"].append(got[0])
            marks["games_ready_ms"].append(got[1])
            t0 = time.perf_counter()
            driver.execute_script(f"location.hash = '#game-{game}'")
            while not driver.execute_script(
                "return document.getElementById('ply-counter').textContent.startsWith('start')"
            ):
                time.sleep(0.01)
            marks["open_game_ms"].append((time.perf_counter() - t0) * 1000)
        finally:
            driver.quit()
    return {k: statistics.median(v) for k, v in marks.items()}


def _child(path: Path, trace: bool, tree: Path = ROOT) -> dict[str, float]:
    """`measure` in a fresh process, with the arena of `tree` (this one, or a baseline's export)."""
    script = tree / "benchmarks" / Path(__file__).name
    argv = [sys.executable, str(script), "--measure", str(path)] + (["--trace"] if trace else [])
    load, cpu = os.getloadavg()[0], _children_cpu()
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    used = _children_cpu() - cpu  # its own and its workers': what a loaded machine's wall time hides
    return {**json.loads(out.splitlines()[-1]), "load": (load + os.getloadavg()[0]) / 2, "cpu_s": used}


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _export(rev: str, into: Path) -> Path:
    """arena and its benchmarks as they were at git revision `rev`, in a folder of `into`."""
    tree = into / f"baseline-{rev}"
    if not tree.exists():
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "arena", "benchmarks"],
                                 check=True, capture_output=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def _before(path: Path, games: int, tree: Path) -> dict[str, float]:
    """The baseline's figures, on a copy of the store at `path` in a folder of its own."""
    copy = path.parent.with_name(f"g{games}-{tree.name}") / path.name
    shutil.rmtree(copy.parent, ignore_errors=True)
    copy.parent.mkdir(parents=True)
    shutil.copy(path, copy)
    return _child(copy, trace=False, tree=tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--bots", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="build the stores in this folder and keep them")
    parser.add_argument("--baseline", metavar="REV", help="also time arena at git revision REV, same store")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.trace)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        print(
            f"{'games':>8} {'build s':>8} {'leaderboard s':>14} {'page s':>7} {'report s':>9} {'again s':>8} "
            f"{'maxRSS rise MiB':>16} {'py peak MiB':>12} {'db MiB':>7} {'page KiB':>9} {'list KiB':>9} "
            f"{'games/ MiB':>11} {'drawn ms':>9} {'list ms':>8} {'open ms':>8}"
        )
        for games in args.games:
            path = base / f"g{games}" / "arena.sqlite"
            if path.exists():
                path.unlink()
            t0 = time.perf_counter()
            build(path, games, args.bots)
            built = time.perf_counter() - t0
            before = _before(path, games, _export(args.baseline, base)) if args.baseline else None
            timed = _child(path, trace=False)
            traced = _child(path, trace=True)
            seen = browse(path.parent / "index.html", games // 2)
            print(
                f"{games:>8} {built:>8.1f} {timed['leaderboard_s']:>14.2f} {timed['first_page_s']:>7.2f} "
                f"{timed['report_s']:>9.2f} "
                f"{timed['again_s']:>8.2f} {timed['rss_rise_mib']:>16.1f} {traced['py_peak_mib']:>12.1f} "
                f"{path.stat().st_size / 2**20:>7.1f} {timed['page_kib']:>9.0f} {timed['list_kib']:>9.0f} "
                f"{timed['games_mib']:>11.1f} {seen['leaderboard_ms']:>9.0f} {seen['games_ready_ms']:>8.0f} "
                f"{seen['open_game_ms']:>8.0f}",
                flush=True,
            )
            if before is not None:
                _compare(args.baseline, before, timed)
        print(
            "page s: until the first write's index.html is up (a big store's replays follow it); "
            "report s: the first write (every game replayed into games/bNNN.js; it includes a second "
            "leaderboard, as arena run's does); again s: the same page written again, replays unchanged "
            "(a live rewrite); drawn ms: until the leaderboard is drawn in headless Chromium, list ms: until "
            "games/list.js is loaded, open ms: from #game-N to its board (medians of 3 fresh browsers)."
        )


def _compare(rev: str, before: dict[str, float], after: dict[str, float]) -> None:
    """The baseline's times beside this tree's, and how many times faster this one is."""
    replays = {k: v["report_s"] - v["first_page_s"] for k, v in (("before", before), ("after", after))}
    rows = [("page s", "first_page_s"), ("report s", "report_s"), ("again s", "again_s"), ("cpu s", "cpu_s")]
    for label, key in rows:
        print(f"{'':>8} {label:>13}: {rev} {before[key]:8.2f}, now {after[key]:8.2f}, "
              f"{before[key] / after[key]:5.2f} times as fast")  # fmt: skip
    if min(replays.values()) > 0.5:  # a small store's page comes after its replays, not before
        print(f"{'':>8} {'replays s':>13}: {rev} {replays['before']:8.2f}, now {replays['after']:8.2f}, "
              f"{replays['before'] / replays['after']:5.2f} times as fast (report s - page s: the replay "
              "files after the page is up)")  # fmt: skip
    print(f"{'':>8} {'load average':>13}: {before['load']:.1f} while {rev} wrote, {after['load']:.1f} now "
          "(cpu s: processor time of the leaderboard and both writes, workers included)")  # fmt: skip


if __name__ == "__main__":
    main()
