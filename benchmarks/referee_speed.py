"""Per-move cost of the referee against a raw pipe round trip to the same bot, measured in one run.

The baseline is the least any referee can do: write the MOVE line to a blocking pipe and read the answer with
readline, no deadline, no checks. Arena adds the deadline poll, the stderr drain, parsing, the legality check
and the record. Both drive the bundled random bot through the same positions, so the bot's own cost cancels.

    python benchmarks/referee_speed.py [--games 300]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.bots import load_bot  # noqa: E402
from arena.confine import Confinement, Warden, capabilities  # noqa: E402
from arena.protocol import move_line, newgame_line  # noqa: E402
from arena.referee import Player, play_game  # noqa: E402
from arena.rules import parse_rules  # noqa: E402


def arena_games(games: int, confined: bool) -> tuple[float, int, list]:
    """Games through the referee; `confined` as in a tournament: sandbox, cgroups, paused opponents."""
    rules = parse_rules("kalah")
    bot = load_bot(ROOT / "bots" / "random.py")
    warden = None
    if confined:
        conf, caps = capabilities(Confinement(hidden=(str(ROOT / "bots"),)), want_sandbox=True)
        warden = Warden(conf)
        print("confinement:", "sandbox" if caps.sandbox else "no sandbox", "+ cgroups" * caps.cgroups)
    a, b = Player(bot, warden=warden), Player(bot, "random-2", warden=warden)
    play_game(rules, a, b)  # warm up: processes started
    records = []
    start = time.perf_counter()
    for _ in range(games):
        records.append(play_game(rules, a, b))
    elapsed = time.perf_counter() - start
    a.close()
    b.close()
    if warden:
        warden.close()
    return elapsed, sum(len(r.moves) for r in records), records


def raw_round_trips(records: list) -> tuple[float, int]:
    """Replay the same games' positions as bare MOVE lines over blocking pipes (one process per side)."""
    rules = parse_rules("kalah")
    bot = load_bot(ROOT / "bots" / "random.py")
    procs = [
        subprocess.Popen(bot.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        for _ in range(2)
    ]
    lines = []
    for record in records:
        pos = rules.initial()
        for move in record.moves:
            lines.append((pos.to_move, move_line(pos, pos.to_move, 1000)))
            pos = rules.play(pos, move)
    for side, p in enumerate(procs):
        p.stdin.write(newgame_line(rules, side) + "\n")
    start = time.perf_counter()
    for side, line in lines:
        p = procs[side]
        p.stdin.write(line + "\n")
        p.stdout.readline()
    elapsed = time.perf_counter() - start
    for p in procs:
        p.stdin.write("QUIT\n")
        p.stdin.close()
        p.wait()
    return elapsed, len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    args = parser.parse_args()
    bare_s, bare_moves, records = arena_games(args.games, confined=False)
    arena_s, arena_moves, _ = arena_games(args.games, confined=True)
    raw_s, raw_moves = raw_round_trips(records)
    per_bare = bare_s / bare_moves * 1e6
    per_arena = arena_s / arena_moves * 1e6
    per_raw = raw_s / raw_moves * 1e6
    print(f"games: {args.games} random vs random, {arena_moves} moves")
    print(f"raw pipe round trip (write + readline):  {per_raw:7.1f} us/move")
    print(f"arena referee, unconfined bots:   {per_bare:7.1f} us/move  ({per_bare / per_raw:.2f}x raw)")
    print(f"arena referee, confined as in run: {per_arena:7.1f} us/move  ({per_arena / per_raw:.2f}x raw)")
    print("target: within 1.5x of raw")
    print(f"one referee thread, confined:            {args.games / arena_s:7.1f} games/s")


if __name__ == "__main__":
    main()
