"""Fuzzing the referee with a bot that answers arbitrary bytes: nothing escapes, every game ends recorded."""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.match.bots import load_bot
from arena.match.clock import TimeControl
from arena.match.referee import Limits, Player, play_game

ROOT = Path(__file__).resolve().parent.parent
REASONS = {"normal", "early", "timeout", "crash", "illegal", "garbled"}
FUZZER = """
import os, sys
answers = {answers!r}
for line in sys.stdin.buffer:
    if line.startswith(b"MOVE"):
        data = answers.pop(0) if answers else b"1\\n"
        os.write(1, data)
    elif line.startswith(b"QUIT"):
        break
"""
# Answers: real moves, SWAP, and arbitrary bytes (with or without line ends, \\r, NULs, huge runs).
ANSWER = st.one_of(
    st.integers(0, 9).map(lambda n: f"{n}\n".encode()),
    st.just(b"SWAP\n"),
    st.just(b"# thinking\n"),
    st.binary(max_size=64),
    st.binary(max_size=16).map(lambda b: b + b"\n"),
    st.integers(1, 3000).map(lambda n: b"7" * n),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers=st.lists(ANSWER, max_size=12), spec=st.sampled_from(["kalah,pits=3,seeds=2", "kalah,pie"]))
def test_arbitrary_answers_end_in_a_recorded_reason(answers, spec):
    rules = parse_rules(spec)
    with tempfile.TemporaryDirectory() as tmp:
        bot = Path(tmp) / "fuzz.py"
        bot.write_text(FUZZER.format(answers=answers))
        fuzz, other = Player(load_bot(bot)), Player(load_bot(ROOT / "bots" / "random.py"))
        try:
            record = play_game(rules, fuzz, other, Limits(TimeControl(move_ms=200, startup_ms=800)))
        finally:
            fuzz.close()
            other.close()
    assert record.reason in REASONS
    assert record.faulty in (None, "fuzz", "random")
    if record.faulty:
        assert record.detail and record.winner != record.faulty
    pos = rules.initial()
    for move in record.moves:
        pos = rules.play(pos, move if move == SWAP else int(move))
    assert (pos.store(SOUTH), pos.store(NORTH)) == (record.south_store, record.north_store)
