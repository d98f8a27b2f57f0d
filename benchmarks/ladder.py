"""The reference ladder: each step's stronger bot against the one below it, score and 95% confidence interval.

    python benchmarks/ladder.py [--games 100] [--move-time 1000]

On Kalah(6,6): random < greedy < alphabeta at depth 4 < alphabeta on its clock (the bundled alphabeta, given
`--depth N` or not). Then on Kalah(4,3), which the solver bot solves within its first moves: alphabeta at
depth 2 < solver, and solver against alphabeta on its clock, where there is little left to win: the clock
lets alphabeta see most games of that board to the end too. Every game goes through the real scheduler,
referee and bot processes, half of them with each bot as south. Most bots do not roll dice and would repeat
one game per side, so each bot's first move of a game is a random pit (a wrapper answers it and passes every
other line to the bot): an opening book, for independent games. Each step says how many distinct games it saw.
About five minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.game.rules import parse_rules  # noqa: E402
from arena.match.bots import Bot, load_bot  # noqa: E402
from arena.match.clock import TimeControl  # noqa: E402
from arena.match.record import GameRecord  # noqa: E402
from arena.match.referee import Limits  # noqa: E402
from arena.tournament.local import play_slots  # noqa: E402
from arena.tournament.schedule import Slot  # noqa: E402
from benchmarks.strength import score_interval  # noqa: E402

# The opening wrapper: `python -c OPENING <the bot's command>`. It answers each game's first MOVE itself with
# a random pit and passes every other line to the bot, so the bot never sees that MOVE.
OPENING = """
import random, subprocess, sys
bot = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
opening = False
for line in sys.stdin:
    words = line.split() or [""]
    if words[0] == "MOVE" and opening:
        board = [int(word) for word in words[2:]]
        print(random.choice([p + 1 for p in range(len(board) // 2 - 1) if board[p]]), flush=True)
        opening = False
        continue
    opening = opening or words[0] == "NEWGAME"
    bot.stdin.write(line)
    bot.stdin.flush()
    if words[0] == "MOVE":
        while (answer := bot.stdout.readline()).startswith("#"):
            pass
        print(answer, end="", flush=True)
    elif words[0] == "QUIT":
        break
bot.wait(5)
"""


@dataclass(frozen=True, slots=True)
class Rung:
    """A bundled bot, at a fixed search depth if `depth` is given."""

    name: str
    depth: int | None = None

    @property
    def label(self) -> str:
        return self.name if self.depth is None else f"{self.name}-d{self.depth}"

    def bot(self) -> Bot:
        """The bot, with a random first move in each game."""
        bot = load_bot(ROOT / "bots" / f"{self.name}.py")
        argv = bot.argv if self.depth is None else (*bot.argv, "--depth", str(self.depth))
        return dataclasses.replace(bot, name=self.label, argv=(sys.executable, "-P", "-c", OPENING, *argv))


STEPS: tuple[tuple[str, Rung, Rung], ...] = (  # (rules, weaker, stronger)
    ("kalah", Rung("random"), Rung("greedy")),
    ("kalah", Rung("greedy"), Rung("alphabeta", 4)),
    ("kalah", Rung("alphabeta", 4), Rung("alphabeta")),  # on the clock it searches far deeper than 4
    ("kalah,pits=4,seeds=3", Rung("alphabeta", 2), Rung("solver")),
    # On a board this small, clocked alphabeta also sees nearly every game to its end: expect about even.
    ("kalah,pits=4,seeds=3", Rung("alphabeta"), Rung("solver")),
)


@dataclass(frozen=True, slots=True)
class Result:
    points: float  # of the stronger bot; a draw counts half
    games: int
    distinct: int  # different move sequences among the games
    forfeits: tuple[int, int]  # games forfeited by the weaker and by the stronger bot


def match(weaker: Bot, stronger: Bot, games: int, spec: str, limits: Limits) -> Result:
    slots = [
        Slot(1, str(i), weaker, stronger) if i % 2 else Slot(1, str(i), stronger, weaker)
        for i in range(games)
    ]
    records: list[GameRecord] = []
    play_slots(slots, spec, limits, os.cpu_count() or 1, False, lambda slot, r: records.append(r))
    points = sum(1.0 if r.winner == stronger.name else 0.5 if r.winner is None else 0.0 for r in records)
    distinct = len({(r.south, r.moves) for r in records})
    forfeits = (
        sum(r.faulty == weaker.name for r in records),
        sum(r.faulty == stronger.name for r in records),
    )
    return Result(points, len(records), distinct, forfeits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--move-time", type=int, default=1000)
    args = parser.parse_args()
    limits = Limits(TimeControl(move_ms=args.move_time))
    print(f"{args.games} games per step, {args.move_time} ms per move")
    for spec, weaker, stronger in STEPS:
        result = match(weaker.bot(), stronger.bot(), args.games, parse_rules(spec).spec, limits)
        p, lo, hi = score_interval(result.points, result.games)
        print(
            f"{spec:<22} {stronger.label:>12} vs {weaker.label:<12} {100 * p:5.1f}% "
            f"(95% CI {100 * lo:5.1f}-{100 * hi:5.1f}%)  distinct games {result.distinct:>2}"
            f"  forfeits {result.forfeits[0]}/{result.forfeits[1]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
