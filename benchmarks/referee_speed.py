"""Per-move cost of the referee against a raw pipe round trip to the same bot, measured in one run.

The baseline is the least any referee can do: write the MOVE line to a blocking pipe and read the answer with
readline, no deadline, no checks. Arena adds the deadline poll, the stderr drain, parsing, the rules engine,
the legality check, the record and (confined, as `arena run` plays) the end-of-game limit check of the
cgroups, pausing and the sandbox. All three drive the bundled random bot through the same kind of positions
(the raw replay sends exactly the positions the confined referee just played), so the bot's own cost cancels.

The machine may be shared and noisy, so the three are interleaved: `--batches` times, a batch of games of
each (in a rotating order), and the figures are medians over the batches; each ratio is the median of the
per-batch ratios, against the raw figure of the same batch.

    python benchmarks/referee_speed.py [--games 300] [--batches 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.game.rules import Rules, parse_rules  # noqa: E402
from arena.match.bots import load_bot  # noqa: E402
from arena.match.protocol import move_line, newgame_line  # noqa: E402
from arena.match.referee import Player, play_game  # noqa: E402
from arena.sandbox import Confinement, Warden, capabilities  # noqa: E402

BOT = ROOT / "bots" / "random.py"


class ArenaPair:
    """Two referee players of the random bot; `warden` confines them as in a tournament: sandbox, cgroups,
    paused opponents."""

    def __init__(self, rules: Rules, warden: Warden | None) -> None:
        bot = load_bot(BOT)
        self.rules = rules
        self.players = Player(bot, warden=warden), Player(bot, "random-2", warden=warden)
        play_game(rules, *self.players)  # warm up: processes started

    def batch(self, games: int) -> tuple[float, int, list]:
        records = []
        start = time.perf_counter()
        for _ in range(games):
            records.append(play_game(self.rules, *self.players))
        return time.perf_counter() - start, sum(len(r.moves) for r in records), records

    def close(self) -> None:
        for p in self.players:
            p.close()


class RawPair:
    """The same bot twice over bare blocking pipes (one process per side): write a MOVE, readline."""

    def __init__(self, rules: Rules) -> None:
        bot = load_bot(BOT)
        self.rules = rules
        self.procs = [
            subprocess.Popen(bot.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
            for _ in range(2)
        ]
        for side, p in enumerate(self.procs):
            p.stdin.write(newgame_line(rules, side) + "\n")

    def batch(self, records: list) -> tuple[float, int]:
        """Replay the positions of `records` as MOVE lines; only the round trips are timed."""
        lines = []
        for record in records:
            pos = self.rules.initial()
            for move in record.moves:
                lines.append((self.procs[pos.to_move], move_line(pos, pos.to_move, 1000) + "\n"))
                pos = self.rules.play(pos, move)
        start = time.perf_counter()
        for p, line in lines:
            p.stdin.write(line)
            p.stdout.readline()
        return time.perf_counter() - start, len(lines)

    def close(self) -> None:
        for p in self.procs:
            p.stdin.write("QUIT\n")
            p.stdin.close()
            p.wait()


def pause_cost(pair: ArenaPair, times: int = 200) -> float:
    """Microseconds for one pause and resume of a live bot process, as the referee does them."""
    player = pair.players[0]
    proc = player.start().proc
    start = time.perf_counter()
    for _ in range(times):
        proc.pause()
        proc.resume()
    return (time.perf_counter() - start) / times * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300, help="games of each kind in all")
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args()
    per_batch = max(1, args.games // args.batches)
    rules = parse_rules("kalah")
    conf, caps = capabilities(Confinement(), want_sandbox=True)
    warden = Warden(conf)
    print("confinement:", "sandbox" if caps.sandbox else "no sandbox", "+ cgroups" * caps.cgroups)
    for note in caps.notes:
        print("  note:", note)
    bare, confined, raw = ArenaPair(rules, None), ArenaPair(rules, warden), RawPair(rules)
    us: dict[str, list[float]] = {"raw": [], "bare": [], "confined": []}
    moves = 0
    pauses: dict[str, float] = {}
    try:
        for b in range(args.batches):
            order = ["bare", "confined"] if b % 2 == 0 else ["confined", "bare"]
            for kind in order:
                seconds, n, records = (bare if kind == "bare" else confined).batch(per_batch)
                us[kind].append(seconds / n * 1e6)
                moves += n
                if kind == "confined":
                    confined_records = records
            seconds, n = raw.batch(confined_records)
            us["raw"].append(seconds / n * 1e6)
        pauses = {"freezer": pause_cost(confined), "SIGSTOP": pause_cost(bare)}
    finally:
        bare.close()
        confined.close()
        raw.close()
        warden.close()

    def ratio(kind: str) -> float:
        return statistics.median(a / r for a, r in zip(us[kind], us["raw"], strict=True))

    med = {kind: statistics.median(v) for kind, v in us.items()}
    spread = {kind: f"{min(v):.1f}..{max(v):.1f}" for kind, v in us.items()}
    print(
        f"{args.batches} batches of {per_batch} games of each kind, random vs random, kalah; "
        f"{moves} referee moves; medians over batches (min..max)"
    )
    print(f"raw pipe round trip (write + readline):  {med['raw']:6.1f} us/move  ({spread['raw']})")
    print(
        f"arena referee, unconfined bots:          {med['bare']:6.1f} us/move  ({spread['bare']})  "
        f"{ratio('bare'):.2f}x raw"
    )
    print(
        f"arena referee, confined as in arena run: {med['confined']:6.1f} us/move  ({spread['confined']})  "
        f"{ratio('confined'):.2f}x raw"
    )
    print("target: confined within 1.5x of raw")
    print(
        f"pausing a bot and resuming it: {pauses['freezer']:.1f} us with the cgroup freezer (confined), "
        f"{pauses['SIGSTOP']:.1f} us with SIGSTOP/SIGCONT (unconfined); paid twice a game (between games) "
        "and once a move only when the opponent thinks over 5 ms"
    )
    per_game = moves / (2 * args.batches * per_batch)
    print(f"one referee thread, confined: {1e6 / (med['confined'] * per_game):.1f} games/s")


if __name__ == "__main__":
    main()
