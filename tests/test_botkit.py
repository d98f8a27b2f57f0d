"""arena/botkit.py: protocol v1 from the bot's side, and the bundled bots built on it.

The loop is driven with in-memory streams and scripted referee lines: every Turn handed to the bot's
function is checked against the rules engine (the game's first turn, SWAP, a new game after END, missing
or bad NEWGAME lines). Then the bundled search bots, which use botkit for all their protocol handling, play
through arena's real referee as subprocesses under the rules whose first turn is special.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena import botkit
from arena.botkit import Turn, run
from arena.game.rules import NORTH, SIDE_NAMES, SOUTH, SWAP, Move, Position, Rules, parse_rules
from arena.match.bots import load_bot
from arena.match.clock import TimeControl
from arena.match.referee import Limits, Player, play_game

BOTS = Path(__file__).resolve().parent.parent / "bots"


class Flushed(io.StringIO):
    """An output stream that remembers what had been written at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.at_flush: list[str] = []

    def flush(self) -> None:
        self.at_flush.append(self.getvalue())


def drive(
    lines: list[str], answers: Callable[[Turn], Move] | list[Move] | None = None
) -> tuple[list[Turn], list[str], str]:
    """Run botkit's loop on `lines`: (the Turns the bot was handed, its output lines, its log).

    `answers`: a function, or the moves to play in order; by default the first legal move."""
    turns: list[Turn] = []
    scripted = list(answers) if isinstance(answers, list) else None

    def choose(turn: Turn) -> Move:
        turns.append(turn)
        if scripted is not None:
            return scripted.pop(0)
        if answers is not None:
            return answers(turn)  # type: ignore[operator]
        return turn.rules.legal_moves(turn.position)[0]

    out, log = Flushed(), io.StringIO()
    run(choose, io.StringIO("".join(line + "\n" for line in lines)), out, log)
    assert out.getvalue() == (out.at_flush[-1] if out.at_flush else ""), "answers are flushed as written"
    return turns, out.getvalue().splitlines(), log.getvalue()


def newgame(spec: str, side: int) -> str:
    rules = parse_rules(spec)
    return f"NEWGAME {rules.pits} {rules.seeds} {SIDE_NAMES[side]} {rules.spec}"


def move_line(pos: Position, side: int, ms: int = 1000) -> str:
    return f"MOVE {ms} " + " ".join(map(str, pos.view(side)))


def after(rules: Rules, moves: tuple[Move, ...]) -> Position:
    pos = rules.initial()
    for move in moves:
        pos = rules.play(pos, move)
    return pos


# from_view's first turn: what botkit relies on


@pytest.mark.parametrize("spec", ["kalah", "kalah,pie", "mankalah", "relay,pits=4,seeds=4,pie"])
def test_from_view_of_the_first_turn_is_the_start_of_the_game(spec: str) -> None:
    rules = parse_rules(spec)
    start = rules.initial()
    assert rules.from_view(start.view(SOUTH), False, first_turn=True) == start
    assert rules.from_view(start.view(SOUTH), False).turn != 0  # the old call means a later turn
    with pytest.raises(ValueError, match="SWAP"):
        rules.from_view(start.view(SOUTH), True, first_turn=True)


# The game's first turn, as South


def test_first_turn_under_pie_lasts_through_extra_turns_and_hands_the_opponent_swap() -> None:
    rules = parse_rules("kalah,pie")
    # pit 1 (6 seeds) ends in South's store: an extra turn, still the first turn; pit 2 then passes.
    extra = after(rules, (1,))
    passed = rules.play(extra, 2)
    reply = rules.play(passed, 3)  # North answers with a pit, not SWAP: South's second turn
    lines = [
        newgame("kalah,pie", SOUTH),
        move_line(rules.initial(), SOUTH),
        move_line(extra, SOUTH),
        move_line(reply, SOUTH),
        "QUIT",
    ]
    turns, out, log = drive(lines, [1, 2, 3])
    assert out == ["1", "2", "3"] and log == ""
    first, second, third = turns
    assert first.position == rules.initial()
    assert second.position == extra  # turn 0 still: the search knows SWAP may answer this turn
    assert rules.play(second.position, 2).can_swap, "the opponent's answer to the first turn may be SWAP"
    assert third.position.turn > 1 and not third.position.can_swap
    assert SWAP not in rules.legal_moves(third.position)
    assert all(turn.rules == rules for turn in turns)


def test_first_move_under_mankalah_earns_no_extra_turn() -> None:
    rules = parse_rules("mankalah")
    # pit 1 (7 seeds) ends in South's store, but the game's first move earns no extra turn (no-first-extra).
    opened = rules.play(rules.initial(), 1)
    assert opened.to_move == NORTH
    reply = rules.play(opened, 7)  # North answers with a pit
    lines = [newgame("mankalah", SOUTH), move_line(rules.initial(), SOUTH), move_line(reply, SOUTH), "QUIT"]
    turns, out, _ = drive(lines, [1, 2])
    assert out == ["1", "2"]
    assert turns[0].position == rules.initial()
    assert turns[0].rules.play(turns[0].position, 1).to_move == NORTH, "the bot's search sees no extra turn"
    assert turns[0].rules.play(turns[0].position, 1).can_swap, "and sees that North may answer with SWAP"
    assert turns[1].position.turn > 1 and not turns[1].position.can_swap
    # As North, the first MOVE offers SWAP (mankalah has the pie rule), the next does not.
    lines = [newgame("mankalah", NORTH), move_line(opened, NORTH), move_line(rules.play(reply, 2), NORTH)]
    turns, out, _ = drive(lines, [7, 1])
    assert [SWAP in rules.legal_moves(turn.position) for turn in turns] == [True, False]


def test_first_turn_under_plain_kalah_is_turn_0_too() -> None:
    rules = parse_rules("kalah,pits=4,seeds=3")
    extra = after(rules, (2,))  # 3 seeds from pit 2: pits 3, 4 and the store
    assert extra.to_move == SOUTH
    turns, out, _ = drive(
        [newgame(rules.spec, SOUTH), move_line(rules.initial(), SOUTH), move_line(extra, SOUTH)], [2, 1]
    )
    assert out == ["2", "1"]
    assert [turn.position.turn for turn in turns] == [0, 0]


# SWAP, as North


def test_swap_is_offered_exactly_on_norths_first_move_under_pie() -> None:
    rules = parse_rules("kalah,pie")
    opened = rules.play(rules.initial(), 3)  # South's first turn: pit 3 passes the move
    second = rules.play(rules.play(opened, 1), 6)  # North plays pit 1, South pit 6: North again
    lines = [newgame("kalah,pie", NORTH), move_line(opened, NORTH), move_line(second, NORTH), "QUIT"]
    turns, out, _ = drive(lines, [1, 1])
    assert out == ["1", "1"]
    assert SWAP in rules.legal_moves(turns[0].position)
    assert turns[0].position.can_swap and turns[0].position.board == opened.view(NORTH)
    assert SWAP not in rules.legal_moves(turns[1].position)


def test_no_swap_without_the_pie_rule() -> None:
    rules = parse_rules("kalah")
    opened = rules.play(rules.initial(), 3)
    turns, _, _ = drive([newgame("kalah", NORTH), move_line(opened, NORTH), "QUIT"])
    assert SWAP not in rules.legal_moves(turns[0].position) and turns[0].position.turn != 0


def test_after_our_swap_we_play_on_as_the_first_player() -> None:
    rules = parse_rules("kalah,pie")
    opened = rules.play(rules.initial(), 3)
    swapped = rules.play(opened, SWAP)  # we (north) now own South; the opponent, now North, moves
    back = rules.play(swapped, 1)  # ... and our turn comes: we move South's pits
    assert back.to_move == SOUTH
    lines = [newgame("kalah,pie", NORTH), move_line(opened, NORTH), move_line(back, SOUTH), "QUIT"]
    turns, out, _ = drive(lines, [SWAP, 1])
    assert out == ["SWAP", "1"]
    assert turns[1].position.board == back.view(SOUTH)
    assert turns[1].position.turn > 1 and SWAP not in rules.legal_moves(turns[1].position)


# A game that begins at an opening (plies from a tournament's book already played)


def plays_like(rules: Rules, seen: Position, real: Position) -> bool:
    """Whether the position a bot was handed (its side as South) plays like the game's real one: the same
    board from the mover's side, and every legal move leads to the same board, the same player to move (an
    extra turn or not) and the same SWAP offer."""
    mover = real.to_move

    def ours(pos: Position) -> tuple[tuple[int, ...], bool, bool]:
        return pos.view(mover), pos.to_move == mover, pos.can_swap

    if seen.to_move != SOUTH or seen.board != real.view(mover):
        return False
    if rules.legal_moves(seen) != rules.legal_moves(real):
        return False
    for move in rules.legal_moves(real):
        child = rules.play(seen, move)
        if (child.board, child.to_move == SOUTH, child.can_swap) != ours(rules.play(real, move)):
            return False
    return True


@pytest.mark.parametrize(
    ("spec", "opening"),
    [
        ("kalah,pie", (3, 1)),  # a SWAP could answer the first turn, but not this one
        ("kalah,pits=4,seeds=3,no-first-extra", (3, 3)),  # pits 1 and 2 end in the store: extra turns
        ("mankalah", (1, 2, 7, 6)),  # both: pit 7 (1 seed) earns an extra turn, no SWAP may follow
    ],
)
def test_a_first_move_as_south_past_the_start_is_not_the_games_first_turn(
    spec: str, opening: tuple[Move, ...]
) -> None:
    rules = parse_rules(spec)
    real = after(rules, opening)
    assert real.to_move == SOUTH and real.turn > 1
    # The same position handed over as turn 0 would play differently: that is what this guards against.
    assert not plays_like(rules, rules.from_view(real.view(SOUTH), False, first_turn=True), real)
    lines = [newgame(spec, SOUTH), move_line(real, SOUTH), "END loss 0 0 crash"]
    lines += [newgame(spec, SOUTH), move_line(rules.initial(), SOUTH), "QUIT"]  # the next game from the start
    turns, out, log = drive(lines)
    assert len(out) == 2 and log == ""
    opened, started = turns
    assert opened.position.turn != 0 and SWAP not in rules.legal_moves(opened.position)
    assert plays_like(rules, opened.position, real)
    assert started.position == rules.initial(), "a game from the start still has its first turn"


def test_norths_first_move_after_an_opening_under_pie_still_offers_swap() -> None:
    """Under the pie rule an opening is South's whole first turn (here with an extra turn in it): North's
    first MOVE is the swap decision, and only that one."""
    rules = parse_rules("kalah,pie")
    opening = after(rules, (1, 2))  # pit 1 ends in South's store, pit 2 passes the move
    assert opening.to_move == NORTH and opening.can_swap
    later = rules.play(rules.play(opening, 2), 3)
    assert later.to_move == NORTH
    lines = [newgame("kalah,pie", NORTH), move_line(opening, NORTH), move_line(later, NORTH), "QUIT"]
    turns, out, _ = drive(lines, [2, 1])
    assert out == ["2", "1"]
    assert SWAP in rules.legal_moves(turns[0].position) and plays_like(rules, turns[0].position, opening)
    assert SWAP not in rules.legal_moves(turns[1].position)


# Games in a row


def test_a_second_game_after_end_starts_afresh() -> None:
    pie = parse_rules("kalah,pits=4,seeds=3,pie")
    small = parse_rules("kalah,pits=3,seeds=2")
    opened = pie.play(pie.initial(), 1)
    extra = after(small, (2,))  # Kalah(3,2): 2 seeds from pit 2 end in the store
    assert extra.to_move == SOUTH
    lines = [
        newgame(pie.spec, NORTH),
        move_line(opened, NORTH),  # SWAP offered
        "END loss 0 0 crash",
        newgame(pie.spec, NORTH),
        move_line(opened, NORTH),  # offered again: a new game
        "END loss 0 0 crash",
        newgame(small.spec, SOUTH),
        move_line(small.initial(), SOUTH),  # the first turn, with an extra turn to come
        "END win 0 0 crash",  # ... cut short
        newgame(pie.spec, NORTH),
        move_line(opened, NORTH),  # not the old game's first turn: North's first MOVE, SWAP offered
        "END loss 0 0 crash",
        newgame(small.spec, SOUTH),
        move_line(small.initial(), SOUTH),
        "QUIT",
    ]
    turns, out, log = drive(lines, [1, 1, 2, 2, 2])
    assert out == ["1", "1", "2", "2", "2"] and log == ""
    assert [turn.rules for turn in turns] == [pie, pie, small, pie, small]
    assert [turn.position.can_swap for turn in turns] == [True, True, False, True, False]
    assert [turn.position.turn for turn in turns] == [1, 1, 0, 1, 0]


def test_a_move_without_newgame_is_plain_kalah_of_its_size() -> None:
    pie = parse_rules("kalah,pits=4,seeds=3,pie")
    opened = pie.play(pie.initial(), 1)
    lines = [
        move_line(opened, NORTH),  # no NEWGAME at all
        newgame(pie.spec, NORTH),
        "END loss 0 0 crash",
        move_line(opened, NORTH),  # after END the game is over: its pie rule is gone too
        newgame(pie.spec, NORTH),
        move_line(parse_rules("kalah,pits=5").initial(), NORTH),  # a board of another size than announced
        "QUIT",
    ]
    turns, out, _ = drive(lines)
    assert len(out) == 3
    plain4, plain5 = parse_rules("kalah,pits=4"), parse_rules("kalah,pits=5")
    assert [turn.rules for turn in turns] == [plain4, plain4, plain5]
    for turn in turns:
        assert turn.position.turn != 0 and SWAP not in turn.rules.legal_moves(turn.position)


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        ("NEWGAME 6 6 south kalah,bogus", "unknown rules, playing plain Kalah: unknown kalah option 'bogus'"),
        ("NEWGAME 6 6 south chess", "unknown rules, playing plain Kalah: unknown rules 'chess'"),
        ("NEWGAME 6 6 south", "NEWGAME without rules, playing plain Kalah"),
    ],
)
def test_bad_rules_in_newgame_are_logged_and_plain_kalah_is_played(line: str, logged: str) -> None:
    kalah = parse_rules("kalah")
    turns, out, log = drive([line, move_line(kalah.initial(), SOUTH), "QUIT"], [3])
    assert out == ["3"]
    assert len(log.splitlines()) == 1 and log.startswith(logged)
    assert turns[0].rules == kalah
    assert turns[0].position.turn == 0  # still South's first turn: that is a fact of the game, not its rules


def test_bad_rules_after_a_good_game_forget_the_old_rules() -> None:
    pie = parse_rules("kalah,pie")
    opened = pie.play(pie.initial(), 3)
    lines = [newgame("kalah,pie", NORTH), "END loss 0 0 crash", "NEWGAME 6 6 north kalah,pie,pie"]
    turns, _, log = drive([*lines, move_line(opened, NORTH), "QUIT"])
    assert "given twice" in log
    assert turns[0].rules == parse_rules("kalah") and not turns[0].position.can_swap


def test_only_move_is_answered_and_quit_ends_the_loop() -> None:
    kalah = parse_rules("kalah,pits=3,seeds=2")
    lines = [
        "",
        "HELLO from a later protocol",
        newgame(kalah.spec, SOUTH),
        "   ",
        move_line(kalah.initial(), SOUTH),
    ]
    lines += ["END win 1 0 normal", "QUIT", move_line(kalah.initial(), SOUTH)]
    turns, out, log = drive(lines)
    assert out == ["1"] and len(turns) == 1 and log == ""


def test_each_answer_is_flushed_before_the_next_line_is_read() -> None:
    kalah = parse_rules("kalah,pits=3,seeds=2")
    out = Flushed()
    seen: list[str] = []

    def lines() -> Iterator[str]:
        yield newgame(kalah.spec, NORTH) + "\n"
        for row in ("1 0 0", "0 1 0", "0 0 1"):  # the first legal pit is 1, then 2, then 3
            yield f"MOVE 1000 {row} 0 2 2 2 0\n"
            seen.append(out.at_flush[-1] if out.at_flush else "")  # read once the MOVE is dealt with

    run(lambda turn: turn.rules.legal_moves(turn.position)[0], lines(), out, io.StringIO())  # type: ignore[arg-type]
    assert seen == ["1\n", "1\n2\n", "1\n2\n3\n"]


# The clock


def test_turn_clock_starts_when_the_move_line_is_read() -> None:
    marks: list[float] = []

    def lines() -> Iterator[str]:
        yield "NEWGAME 3 2 south kalah,pits=3,seeds=2\n"
        time.sleep(0.05)  # the referee is slow to send the MOVE: that time is not the bot's
        marks.append(time.perf_counter())
        yield "MOVE 400 2 2 2 0 2 2 2 0\n"

    def choose(turn: Turn) -> Move:
        time.sleep(0.05)  # the bot's own time is
        marks.append(turn.received)
        marks.append(turn.budget(0.5))
        return 1

    run(choose, lines(), io.StringIO(), io.StringIO())  # type: ignore[arg-type]
    sent, received, left = marks
    assert sent <= received, "the referee's delay before the MOVE is not counted"
    assert left < 0.2 - 0.05 + 0.001, "the bot's time since the MOVE was read is counted"


def test_turn_budget_and_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = parse_rules("kalah")
    now = 1000.0  # a stopped clock: a busy machine's pause between two lines cannot move it
    monkeypatch.setattr(botkit, "time", SimpleNamespace(perf_counter=lambda: now))
    turn = Turn(rules, rules.initial(), 2000, now - 0.1)  # the MOVE line was read 0.1 s ago
    assert turn.deadline == pytest.approx(now + 1.9)
    assert turn.budget(0.25) == pytest.approx(0.4)
    assert turn.budget(0.25, cap=0.3) == pytest.approx(0.2)  # the cap counts from the MOVE too
    assert turn.budget(0.01) == pytest.approx(-0.08)  # already spent


# The bundled search bots, built on botkit, through arena's real referee


def bot_log_lines(text: str) -> tuple[list[str], bool]:
    """The lines of a bot's stderr tail, and whether it is whole (the referee keeps only the last 8 KiB)."""
    lines = [line for line in text.splitlines() if line.strip()]
    whole = len(text.encode()) < 8000
    return (lines if whole else lines[1:]), whole


ALPHABETA_LOG = re.compile(r"move (\d+|SWAP) depth \d+ value -?\d+ nodes \d+")
SOLVER_LOG = re.compile(r"move (\d+|SWAP) value [+-]?[\d.e+-]+ (exact|depth \d+) nodes \d+ ms \d+")


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["kalah", "kalah,pie", "mankalah"])
def test_bundled_search_bots_play_clean_games_through_the_referee(spec: str) -> None:
    rules = parse_rules(spec)
    alphabeta = Player(load_bot(BOTS / "alphabeta.py"))
    solver = Player(load_bot(BOTS / "solver.py"))
    # 100 ms a move, as the README's tournament, and a loaded machine's margin on top: the bots plan a
    # quarter of what MOVE offers, and beside a busy suite an answer once came after 200 ms
    limits = Limits(TimeControl(move_ms=100, startup_ms=5000), margin_ms=400)
    try:
        for south, north in ((alphabeta, solver), (solver, alphabeta)):  # one process each, two games
            record = play_game(rules, south, north, limits)
            assert record.faulty is None, f"{record.faulty}: {record.detail}\n{record.stderr}"
            assert record.reason == "normal"
            for player, pattern in ((alphabeta, ALPHABETA_LOG), (solver, SOLVER_LOG)):
                logged, whole = bot_log_lines(record.stderr.get(player.name, ""))
                assert all(pattern.fullmatch(line) for line in logged), logged[:5]
                assert len(logged) == record.moves_made[player.name] or not whole, "one log line a move"
    finally:
        alphabeta.close()
        solver.close()
