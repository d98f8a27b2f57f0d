"""Tournament throughput: random vs random through the scheduler on all cores, against one referee thread.

    python benchmarks/throughput.py [--games 2000] [--jobs N]

Prints games/s for the scheduler (worker processes reusing bot processes), for the same with --fresh (a new
process per game, as a baseline for what reuse saves), and for a single in-process referee as the baseline.
With gcc present it also plays protocol.md's C bot against itself: a bot that costs almost nothing, so the
figure shows what the referee and scheduler themselves can do.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.bots import Bot, load_bot  # noqa: E402
from arena.referee import Limits, Player, play_game  # noqa: E402
from arena.rules import parse_rules  # noqa: E402
from arena.scheduler import play_slots  # noqa: E402
from arena.store import Slot  # noqa: E402


def scheduler_rate(a: Bot, b: Bot, games: int, jobs: int, fresh: bool) -> float:
    slots = [Slot(1, str(i), a, b) if i % 2 else Slot(1, str(i), b, a) for i in range(games)]
    done = 0

    def count(slot, record) -> None:  # type: ignore[no-untyped-def]
        nonlocal done
        done += 1

    start = time.perf_counter()
    play_slots(slots, "kalah", Limits(), jobs, fresh, count)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    a = load_bot(ROOT / "bots" / "random.py")
    b = Bot("random-2", a.argv, a.cwd, a.path, a.digest)
    single = single_thread_rate(a, b, args.games // 4)
    reuse = scheduler_rate(a, b, args.games, args.jobs, fresh=False)
    fresh = scheduler_rate(a, b, max(20, args.games // 20), args.jobs, fresh=True)
    print(f"cores: {os.cpu_count()}, jobs: {args.jobs}, random vs random, kalah")
    print(f"one referee in-process (baseline):   {single:8.1f} games/s")
    print(f"arena scheduler, processes reused:   {reuse:8.1f} games/s  ({reuse / single:.2f}x the baseline)")
    print(
        f"arena scheduler, --fresh processes:  {fresh:8.1f} games/s  (reuse is {reuse / fresh:.0f}x faster)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cbot = c_bot(Path(tmp))
        if cbot is not None:
            other = Bot("cbot-2", cbot.argv, cbot.cwd, cbot.path, cbot.digest)
            c_rate = scheduler_rate(cbot, other, args.games, args.jobs, fresh=False)
            print(f"arena scheduler, protocol.md's C bot:  {c_rate:8.1f} games/s (the referee's own limit)")


if __name__ == "__main__":
    main()
