"""What one bot that hangs at start costs a tournament: `arena run` of ten bots, one of which never answers,
against the same run without it, timed in one go on this machine.

Benching (`--bench-after`, default 3) should keep the difference near the few startup allowances that bench
the hanging bot (divided over the jobs), where every one of its games used to cost a full allowance.
`--compare` also times the run with benching off (`--bench-after 0`), which takes minutes.

    python benchmarks/benching.py [--rounds 2] [--startup-ms 10000] [--compare]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUICK = """import sys
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        board = [int(w) for w in words[2:]]
        print(next(p for p in range(1, len(board) // 2) if board[p - 1]), flush=True)
    elif words and words[0] == "QUIT":
        break
"""
HANG = "import time\ntime.sleep(3600)\n"


def tournament(base: Path, hanging: bool, args: argparse.Namespace, bench_after: int) -> float:
    """Wall seconds of the whole `arena run` command (start-up, games, store, report)."""
    bots = base / "bots"
    bots.mkdir(parents=True)
    for i in range(1, 10):
        (bots / f"quick{i}.py").write_text(QUICK, encoding="utf-8")
    if hanging:
        (bots / "hang.py").write_text(HANG, encoding="utf-8")
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(base / "reports")]
    argv += ["--rounds", str(args.rounds), "--move-time", "100", "--startup-ms", str(args.startup_ms)]
    argv += ["--jobs", str(args.jobs), "--bench-after", str(bench_after), "--quiet"]
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--startup-ms", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--bench-after", type=int, default=3)
    parser.add_argument("--compare", action="store_true", help="also time the run with benching off")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        clean = tournament(base / "clean", False, args, args.bench_after)
        hang = tournament(base / "hang", True, args, args.bench_after)
        allowance = args.startup_ms / 1000
        # The jobs play the hanging bot's first games side by side: its allowances run out in waves.
        budget = math.ceil(args.bench_after / args.jobs) * allowance
        print(f"10 bots, {args.rounds} rounds, --startup-ms {args.startup_ms}, --jobs {args.jobs}")
        print(f"  9 quick bots alone:              {clean:7.1f} s")
        print(f"  with a bot that hangs at start:  {hang:7.1f} s (+{hang - clean:.1f} s)")
        print(
            f"  the allowances that bench it:    {args.bench_after} games of {allowance:g} s on "
            f"{args.jobs} jobs = {budget:.1f} s; extra / that = {(hang - clean) / budget:.2f}"
        )
        if args.compare:
            off = tournament(base / "off", True, args, 0)
            games = 2 * 9 * args.rounds
            cost = games * allowance / args.jobs
            print(
                f"  benching off (--bench-after 0):  {off:7.1f} s (+{off - clean:.1f} s; {games} games of "
                f"the hanging bot x {allowance:g} s / {args.jobs} jobs = {cost:.0f} s)"
            )


if __name__ == "__main__":
    main()
