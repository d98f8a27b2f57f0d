"""What the class server's bot pages cost the ladder's worker: its snapshot (the standings rated, the report's
leaderboard and matrix drawn) with and without every bot's page (arena.report.face.bot_page_data: the
rating history, faults, margins and charts of each bot, kept as bots.json), on synthetic stores.

    .venv/bin/python benchmarks/bot_pages.py [--games 10000 100000] [--bots 30] [--runs 3]

Stores as benchmarks/report_speed.py builds them (random legal games, ~2% forfeits). For each size, the
snapshot is written in turn `--runs` times each, in one process: without the pages (as a scrimmage's: every
game rated, nothing kept; the snapshot before the ladder kept its ratings); with them, the ladder's kept
ratings (arena/server/standings/rated.py) of use, as while a field's games come in schedule order; and with
them and the kept ratings removed first, as after a new version or an adaptive batch whose games fall
before those rated. Prints the median wall time of each, their ratios, what the pages
add to a playing ladder's worker (drawn every ladder.PAGES_S, its snapshot every worker.SNAPSHOT_S),
bots.json's size and one bot page's draw time (what a page view costs the web process). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.api import Tournament  # noqa: E402
from arena.match.clock import TimeControl  # noqa: E402
from arena.report import face  # noqa: E402
from arena.report.botpages import Links  # noqa: E402
from arena.server.standings import ladder, rated  # noqa: E402
from arena.server.worker import SNAPSHOT_S  # noqa: E402
from arena.tournament.settings import Settings  # noqa: E402
from benchmarks.report_speed import build  # noqa: E402


def measure(folder: Path, runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"without": [], "with": [], "again": []}
    with Tournament(folder, Settings("kalah", TimeControl(1000, 10_000), 1)) as cup:
        for _ in range(runs):
            for kind, pages in (("without", ""), ("with", "ladder"), ("again", "ladder")):
                if kind == "again":  # the kept ratings of no use: every game rated again
                    (folder / rated.RATED).unlink()
                began = time.perf_counter()
                ladder.write_snapshot(cup, "benchmark", True, pages)
                times[kind].append(time.perf_counter() - began)
    data = json.loads((folder / ladder.BOTS).read_text())
    name = next(iter(data))
    links = Links("/ladder", "the ladder", str, str, lambda a, b: b, lambda a, b: "")
    drawn = []
    for _ in range(20):
        began = time.perf_counter()
        found = ladder.bot(folder, name)
        assert found is not None
        face.bot_page(found["page"], face.Viewer(), links)
        drawn.append(time.perf_counter() - began)
    return {
        "without": statistics.median(times["without"]),
        "with": statistics.median(times["with"]),
        "again": statistics.median(times["again"]),
        "bytes": (folder / ladder.BOTS).stat().st_size,
        "page": statistics.median(drawn),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--bots", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arena-botpages-") as tmp:
        for games in args.games:
            folder = Path(tmp) / f"g{games}"
            folder.mkdir()
            build(folder / "arena.sqlite", games, args.bots)
            m = measure(folder, args.runs)
            added = m["with"] - m["without"]
            busy = m["without"] / SNAPSHOT_S  # the worker's share of time spent on snapshots before
            print(
                f"{games} games, {args.bots} bots: snapshot {m['without']:.2f} s without the bot pages, "
                f"{m['with']:.2f} s with them ({m['with'] / m['without']:.2f}x); while playing, drawn every "
                f"{ladder.PAGES_S:.0f} s: {added:.2f} s of every {ladder.PAGES_S:.0f} s "
                f"({100 * added / ladder.PAGES_S:.1f}% of the worker's time, beside snapshots' "
                f"{100 * min(busy, 1):.0f}%); bots.json {m['bytes'] / 1024:.0f} KiB; one bot page read and "
                f"drawn in {1000 * m['page']:.1f} ms; with the pages and every game rated again "
                f"{m['again']:.2f} s ({m['again'] / m['without']:.2f}x)",
                flush=True,
            )


if __name__ == "__main__":
    main()
