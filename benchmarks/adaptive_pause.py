"""Where an adaptive run's workers wait: the pause between batches, and each batch's tail.

    python benchmarks/adaptive_pause.py [--rules kalah,pits=4,seeds=3] [--move-time 2000] [--jobs N]
                                        [--bots N]

An adaptive run plays a batch to its end, then plans the next from every game so far: meanwhile no worker
plays. The wall time per game beside a round robin's (benchmarks/adaptive_overhead.py) moves with the other
work on the machine by more than this costs; this measures it inside one run instead, as shares of that run.
It runs `arena run` until settled, as a user types it (with its progress), on issue 30's 16 bots of graded
strength (adaptive_overhead.field; `--bots N`: the first N of them, as there), in this process with the
back end's `play` and the schedule's `next` timed. It prints the batches, the wall time, the pause between
batches (from one batch's last game to the next batch's first) as a share of the wall time, the part of it in
`next`, and the workers' idle time (the pause, and each batch's tail, where a worker has no game left to take)
as a share of their time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from adaptive_overhead import SPREAD, field

from arena.cli.main import main as arena
from arena.tournament.adaptive import Adaptive
from arena.tournament.local import Local


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="kalah,pits=4,seeds=3")
    parser.add_argument("--move-time", default="2000")
    parser.add_argument("--jobs", default=str(os.cpu_count() or 1))
    parser.add_argument("--bots", type=int, default=len(SPREAD), help=f"the first N of {', '.join(SPREAD)}")
    args = parser.parse_args()
    seen = {"batches": 0, "idle": 0.0, "pause": 0.0, "next": 0.0}
    freed: list[float] = []  # when each worker found no game left in this batch
    marks: dict[str, float] = {}
    play, plan = Local.play, Adaptive.next

    def timed_play(self, slots, conditions, on_game, *more, **named):  # type: ignore[no-untyped-def]
        now = time.monotonic()
        marks.setdefault("start", now)
        seen["idle"] += sum(now - t for t in freed)
        seen["pause"] += now - marks.get("end", now)
        freed.clear()
        got = 0

        def counted(slot, record):  # type: ignore[no-untyped-def]
            nonlocal got
            got += 1
            on_game(slot, record)
            if len(slots) - got < self.jobs:  # nothing left to send: this worker waits from now
                freed.append(time.monotonic())

        play(self, slots, conditions, counted, *more, **named)
        seen["batches"] += 1
        marks["end"] = time.monotonic()

    def timed_next(self, results):  # type: ignore[no-untyped-def]
        start = time.monotonic()
        try:
            return plan(self, results)
        finally:
            seen["next"] += time.monotonic() - start

    Local.play, Adaptive.next = timed_play, timed_next  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        field(base / "bots", args.bots)
        command = ["run", "--bots", str(base / "bots"), "--out", str(base / "reports"), "--name", "pause"]
        command += ["--rules", args.rules, "--move-time", args.move_time, "--jobs", args.jobs]
        err, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115 (the progress, not shown)
        sys.argv = ["arena", *command]
        try:
            arena()
        except SystemExit as e:
            if e.code:
                raise
        finally:
            sys.stderr.close()
            sys.stderr = err
    wall = marks["end"] - marks["start"]
    jobs = int(args.jobs)
    print(
        f"{args.bots} bots, {args.rules}, --move-time {args.move_time}, --jobs {jobs}: "
        f"{seen['batches']} batches"
    )
    print(f"  wall time from the first batch to the last game: {wall:.1f} s")
    print(
        f"  pause between batches: {seen['pause']:.1f} s = {seen['pause'] / wall:.1%} of the wall time "
        f"(the schedule's next: {seen['next']:.1f} s)"
    )
    share = seen["idle"] / (jobs * wall)
    print(f"  workers idle: {seen['idle']:.1f} of {jobs * wall:.1f} worker-s = {share:.1%}")


if __name__ == "__main__":
    main()
