"""Protocol v1 grammar: what a bot's answer means, and the lines the referee sends."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.game.rules import NORTH, SOUTH, SWAP, parse_rules
from arena.match.process import Fault
from arena.match.protocol import end_line, move_line, newgame_line, parse_move


@pytest.mark.parametrize(("line", "move"), [("3", 3), (" 3 ", 3), ("12", 12), ("SWAP", SWAP), ("0", 0)])
def test_well_formed_answers_parse(line, move):
    assert parse_move(line) == move


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("thinking...", ["'thinking...'", "stderr"]),
        ("", ["empty line"]),
        ("swap", ["spelled SWAP"]),
        ("3 4", ["'3 4'"]),
        ("-1", ["'-1'"]),
        ("+3", ["'+3'"]),
        ("3.0", ["'3.0'"]),
        ("\x00\x01", ["not plain ASCII"]),
        ("x" * 500, ["..."]),
    ],
)
def test_garbled_answers_say_what_was_wrong(line, words):
    with pytest.raises(Fault) as info:
        parse_move(line)
    assert info.value.reason == "garbled"
    for word in words:
        assert word in info.value.told()
    assert len(info.value.told()) < 200


@given(st.text(max_size=60))
def test_any_text_is_a_move_or_a_garbled_fault(line):
    try:
        move = parse_move(line)
    except Fault as fault:
        assert fault.reason == "garbled"
    else:
        assert move == SWAP or (isinstance(move, int) and move >= 0)


def test_lines_sent_to_bots():
    rules = parse_rules("kalah,pits=3,seeds=2,pie")
    pos = rules.play(rules.initial(), 1)  # south sows 2 seeds from pit 1
    assert newgame_line(rules, NORTH) == "NEWGAME 3 2 north kalah,pits=3,seeds=2,pie"
    assert move_line(pos, SOUTH, 500) == "MOVE 500 0 3 3 0 2 2 2 0"
    # North sees its own pits first, then its store, then South's pits and store.
    assert move_line(pos, NORTH, 500) == "MOVE 500 2 2 2 0 0 3 3 0"
    assert end_line("win", 40, 32, "normal") == "END win 40 32 normal"
