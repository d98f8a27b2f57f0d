"""The referee's decisions against a scripted wire (tests/scripted.py): the exact lines each bot is sent,
and how every answer, silence, late answer and exit is judged, with no process and no sleep. The same
decisions against real processes are tests/test_referee.py's."""

from __future__ import annotations

import pytest
from scripted import Clock, Exit, Script, Think, fake_time, seat

from arena.game.rules import parse_rules
from arena.match.clock import TimeControl
from arena.match.record import Reason
from arena.match.referee import Limits, play_game

RULES = parse_rules("kalah,pits=2,seeds=2")
PIE = parse_rules("kalah,pits=2,seeds=2,pie")
LIMITS = Limits(TimeControl(move_ms=200, startup_ms=1000), margin_ms=50)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return fake_time(monkeypatch)


def test_a_game_is_the_lines_protocol_md_gives_and_ends_with_end_to_both(clock: Clock) -> None:
    south = (
        Script()
        .expect("NEWGAME 2 2 south kalah,pits=2,seeds=2")
        .expect("MOVE 200 2 2 0 2 2 0", Think(30), "2")
        .expect("MOVE 200 3 0 1 0 3 1", "# thinking aloud is a comment", "1")
        .expect("MOVE 200 0 1 2 0 4 1", "2")
        .expect("END loss 3 5 normal")
    )
    north = (
        Script()
        .expect("NEWGAME 2 2 north kalah,pits=2,seeds=2")
        .expect("MOVE 200 3 2 0 2 0 1", "1")
        .expect("MOVE 200 1 3 1 0 1 2", Think(120), "1")
        .expect("END win 5 3 normal")
    )
    record = play_game(RULES, seat(clock, "ann", south), seat(clock, "bob", north), LIMITS)
    assert (record.winner, record.reason, record.faulty) == ("bob", Reason.NORMAL, None)
    assert record.moves == (2, 1, 1, 1, 2) and (record.south_store, record.north_store) == (3, 5)
    assert record.move_ms[0] == pytest.approx(30) and record.move_ms[3] == pytest.approx(120)
    assert south.done() and north.done()


def opening_of(name: str, side: str = "south") -> Script:
    return Script().expect(f"NEWGAME 2 2 {side} kalah,pits=2,seeds=2")


@pytest.mark.parametrize(
    ("answer", "reason", "detail"),
    [
        ("7", Reason.ILLEGAL, "played a pit out of range 1..2 (pits are numbered 1..n"),
        ("hello", Reason.GARBLED, "answered what is not a move; print only the move on stdout"),
        (Exit(), Reason.CRASH, "exited"),
    ],
)
def test_a_bad_answer_forfeits_at_once_and_only_the_opponent_hears_end(
    clock: Clock, answer: str | Exit, reason: Reason, detail: str
) -> None:
    south = opening_of("ann").expect("MOVE 200 2 2 0 2 2 0", answer)
    north = opening_of("bob", "north").expect("END win 0 0 " + reason)
    ann = seat(clock, "ann", south)
    record = play_game(RULES, ann, seat(clock, "bob", north), LIMITS)
    assert (record.winner, record.faulty, record.reason) == ("bob", "ann", reason)
    assert record.detail.startswith(detail), record.detail
    assert south.killed and not ann.running  # a faulty process never plays on
    assert north.done()


def test_silence_is_a_timeout_judged_at_the_deadline_with_the_allowance_on_the_first_move(
    clock: Clock,
) -> None:
    south = opening_of("ann").expect("MOVE 200 2 2 0 2 2 0")  # and nothing
    north = opening_of("bob", "north").expect("END win 0 0 timeout")
    start = clock.now
    record = play_game(RULES, seat(clock, "ann", south), seat(clock, "bob", north), LIMITS)
    assert (record.faulty, record.reason) == ("ann", Reason.TIMEOUT)
    assert record.detail.startswith("no reply within 200 ms, nor in 200 ms more")
    assert "(its first move, with 1000 ms startup allowance on top)" in record.detail
    waited = clock.now - start
    assert waited == pytest.approx((200 + 50 + 1000 + 200) / 1000)  # move, margin, startup, the look past


def test_an_answer_after_the_deadline_is_a_timeout_that_says_how_late(clock: Clock) -> None:
    south = (
        opening_of("ann")
        .expect("MOVE 200 2 2 0 2 2 0", Think(900), "2")  # within its startup allowance
        .expect("MOVE 200 3 0 1 0 3 1", Think(300), "1")  # past 200 ms and the 50 ms margin
    )
    north = opening_of("bob", "north").expect("MOVE 200 3 2 0 2 0 1", "1").expect("END win 1 1 timeout")
    record = play_game(RULES, seat(clock, "ann", south), seat(clock, "bob", north), LIMITS)
    assert (record.faulty, record.reason) == ("ann", Reason.TIMEOUT)
    assert record.detail == "no reply within 200 ms: it answered only after 300 ms"
    assert record.said == "its answer: '1'"  # the bot's own bytes, apart: the server shows them to few


def test_the_time_bank_shrinks_each_offer_and_its_end_is_a_timeout(clock: Clock) -> None:
    bank = Limits(TimeControl(move_ms=200, startup_ms=0, bank_ms=300), margin_ms=50)
    south = (
        opening_of("ann")
        .expect("MOVE 200 2 2 0 2 2 0", Think(125), "2")  # 175 ms left in the bank
        .expect("MOVE 175 3 0 1 0 3 1", Think(125), "1")  # 50 left
        .expect("MOVE 50 0 1 2 0 4 1", Think(125), "2")  # past 50 ms and the 50 ms margin
    )
    north = (
        opening_of("bob", "north")
        .expect("MOVE 200 3 2 0 2 0 1", "1")
        .expect("MOVE 200 1 3 1 0 1 2", "1")
        .expect("END win 1 2 timeout")
    )
    record = play_game(RULES, seat(clock, "ann", south), seat(clock, "bob", north), bank)
    assert (record.faulty, record.reason) == ("ann", Reason.TIMEOUT)
    assert record.detail == (
        "no reply within 50 ms: it answered only after 125 ms: its time bank of 300 ms for the game ran out"
    )
    assert record.said == "its answer: '2'"


def test_north_may_swap_under_the_pie_rule_and_south_may_not(clock: Clock) -> None:
    south = Script().expect("NEWGAME 2 2 south kalah,pits=2,seeds=2,pie").expect("MOVE 200 2 2 0 2 2 0", "1")
    south.expect("MOVE 200 0 3 1 2 2 0", "SWAP")
    north = Script().expect("NEWGAME 2 2 north kalah,pits=2,seeds=2,pie").expect("END win 0 1 illegal")
    record = play_game(PIE, seat(clock, "ann", south), seat(clock, "bob", north), LIMITS)
    assert (record.faulty, record.reason) == ("ann", Reason.ILLEGAL)  # an extra turn is not the pie's turn

    south = Script().expect("NEWGAME 2 2 south kalah,pits=2,seeds=2,pie").expect("MOVE 200 2 2 0 2 2 0", "2")
    south.expect("MOVE 200 3 2 0 2 0 1", "7")  # after the swap it owns North's side, and sees it so
    north = (
        Script().expect("NEWGAME 2 2 north kalah,pits=2,seeds=2,pie").expect("MOVE 200 3 2 0 2 0 1", "SWAP")
    )
    north.expect("END win 1 0 illegal")  # now South: its store is the 1 that South's first move banked
    record = play_game(PIE, seat(clock, "cat", south), seat(clock, "dog", north), LIMITS)
    assert record.moves == (2, "SWAP") and record.swapped
    assert (record.winner, record.faulty, record.store_of("dog"), record.store_of("cat")) == (
        "dog",
        "cat",
        1,
        0,
    )


def test_a_line_written_unasked_is_garbled_at_the_next_question(clock: Clock) -> None:
    south = opening_of("ann").expect("MOVE 200 2 2 0 2 2 0", "2", "1")  # one line too many
    north = opening_of("bob", "north").expect("MOVE 200 3 2 0 2 0 1", "1").expect("END win 1 1 garbled")
    record = play_game(RULES, seat(clock, "ann", south), seat(clock, "bob", north), LIMITS)
    assert (record.faulty, record.reason) == ("ann", Reason.GARBLED)
    assert (
        record.detail.startswith("wrote a line when no move was asked for") and record.said == "the line: '1'"
    )
