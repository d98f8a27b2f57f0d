"""What the KGP relay costs a move: the spec agent of the tests (tests/kgp_agent.py: two moves and a yield
for every state, at once) against a v1 bot that answers at once, both confined as `arena run` confines
them, each playing games against the same quick v1 opponent; figures are the milliseconds a move took as
the referee measured it (what the agent's clock is charged), and their ratio, in one run on this machine.

    python benchmarks/kgp_overhead.py [--games 6] [--move-ms 500]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from arena.game.rules import parse_rules
from arena.match.bots import load_bot
from arena.match.clock import Limits, TimeControl
from arena.match.referee import Player, play_game
from arena.sandbox import Confinement, Warden, capabilities

ROOT = Path(__file__).resolve().parent.parent
QUICK = """import sys
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "MOVE":
        board = [int(w) for w in words[2:]]
        print(next(p for p in range(1, len(board) // 2) if board[p - 1]), flush=True)
    elif words and words[0] == "QUIT":
        break
"""


def move_times(
    bot_path: Path, opponent_path: Path, games: int, limits: Limits, warden: Warden
) -> list[float]:
    """The milliseconds of each of the bot's moves but a process's first (its startup) over `games` games."""
    rules = parse_rules("kalah,pits=6,seeds=4")
    me = Player(load_bot(bot_path), warden=warden)
    other = Player(load_bot(opponent_path), "opponent", warden=warden)
    times: list[float] = []
    try:
        for game in range(games):
            south, north = (me, other) if game % 2 == 0 else (other, me)
            record = play_game(rules, south, north, limits)
            assert record.faulty is None, record.detail
            pos, mine = rules.initial(), []
            for ply in record.plies:
                mine.append((south if pos.to_move == 0 else north) is me)
                pos = rules.play(pos, ply)
            times += [ms for ms, own in zip(record.move_ms, mine, strict=True) if own]
    finally:
        me.close()
        other.close()
    return times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--move-ms", type=int, default=500)
    args = parser.parse_args()
    conf, _ = capabilities(Confinement(), want_sandbox=True)
    if not conf.sandbox:
        raise SystemExit("no sandbox here: a KGP agent's private loopback is the sandbox's")
    limits = Limits(TimeControl(move_ms=args.move_ms, startup_ms=5000))
    warden = Warden(conf)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "quick.py").write_text(QUICK)
        (base / "opponent.py").write_text(QUICK)
        agent = base / "agent"
        agent.mkdir()
        shutil.copy(ROOT / "tests" / "kgp_agent.py", agent / "kgp_agent.py")
        (agent / "bot.toml").write_text('command = "python3 kgp_agent.py localhost 2671"\nprotocol = "kgp"\n')
        try:
            v1 = move_times(base / "quick.py", base / "opponent.py", args.games, limits, warden)
            kgp = move_times(agent, base / "opponent.py", args.games, limits, warden)
        finally:
            warden.close()
    for name, times in (("v1 bot, one answer", v1), ("KGP agent via relay", kgp)):
        print(
            f"{name:<22} moves {len(times):>4}  median {statistics.median(times):6.1f} ms  "
            f"p90 {statistics.quantiles(times, n=10)[-1]:6.1f} ms  max {max(times):6.1f} ms"
        )
    print(f"median ratio KGP/v1: {statistics.median(kgp) / statistics.median(v1):.1f}x")


if __name__ == "__main__":
    main()
