"""Tests of the rules engine (arena/game/rules.py).

Besides hand-checked positions, the engine is compared against `naive_play`, a deliberately simple reference
written here from the rules brief: it sows one seed at a time round a list of holes in sowing order, so it
shares no code (and no lap arithmetic) with the engine. The small exhaustive solvers at the end are built on
both implementations and must agree.
"""

from __future__ import annotations

import random
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.game.rules import (
    END_RULES,
    MAX_PITS,
    MAX_SEEDS,
    NORTH,
    SOUTH,
    SWAP,
    IllegalMove,
    Kalah,
    Outcome,
    Position,
    RulesError,
    board_text,
    parse_rules,
)

# ---------------------------------------------------------------------------------------------------------
# Helpers: the reference implementation
# ---------------------------------------------------------------------------------------------------------


def drawn(north_store: int, top: str, bottom: str, south_store: int) -> tuple[int, ...]:
    """The absolute board from a drawing as in source 000: North's row on top, its pits labelled
    "6 5 4 3 2 1" left to right (so the drawing shows North's row reversed), South's row below, 1..6."""
    north_drawn = [int(x) for x in top.split()]
    south = [int(x) for x in bottom.split()]
    assert len(north_drawn) == len(south)
    return (*south, south_store, *reversed(north_drawn), north_store)


def ring(n: int, side: int) -> list[int]:
    """Absolute indices of the holes `side` sows into, in sowing order starting from its own pit 1:
    own pits 1..n, own store, opponent's pits 1..n. The opponent's store is simply not in the list."""
    own = side * (n + 1)
    opp = (1 - side) * (n + 1)
    return [own + k for k in range(n)] + [own + n] + [opp + k for k in range(n)]


def naive_sow(board: tuple[int, ...], side: int, pit: int) -> tuple[list[int], int, int]:
    """Sow one seed at a time. Returns (board, index of the last hole, seeds that hole held just before)."""
    n = len(board) // 2 - 1
    holes = ring(n, side)
    b = list(board)
    k = pit - 1
    hand = b[holes[k]]
    b[holes[k]] = 0
    before = -1
    while hand:
        k = (k + 1) % len(holes)
        before = b[holes[k]]
        b[holes[k]] += 1
        hand -= 1
    return b, holes[k], before


Board = tuple[int, ...]


def naive_play(
    rules: Kalah, board: Board, side: int, pit: int, first_turn: bool = False
) -> tuple[Board, int, str | None]:
    """The reference move: (board after, side to move next, ended reason or None). `first_turn`: South's
    first turn, after which, under the pie rule, no early finish may pre-empt the second player's swap."""
    n = rules.pits
    b, last, before = naive_sow(board, side, pit)
    own_store = side * (n + 1) + n
    own_pits = [side * (n + 1) + k for k in range(n)]
    opp_pits = [(1 - side) * (n + 1) + k for k in range(n)]
    if last == own_store:
        nxt = side
    else:
        nxt = 1 - side
        if last in own_pits and before == 0:
            number = own_pits.index(last) + 1  # own pit `number` faces the opponent's pit n + 1 - number
            opposite = opp_pits[n - number]
            if b[opposite] > 0 or rules.empty_capture:
                b[own_store] += b[opposite] + b[last]
                b[opposite] = 0
                b[last] = 0
    rows_empty = [sum(b[s * (n + 1) + k] for k in range(n)) == 0 for s in (SOUTH, NORTH)]
    over = (rows_empty[SOUTH] or rows_empty[NORTH]) if rules.end == "any-empty" else rows_empty[nxt]
    if over:
        for s in (SOUTH, NORTH):
            for k in range(n):
                b[s * (n + 1) + n] += b[s * (n + 1) + k]
                b[s * (n + 1) + k] = 0
        return tuple(b), nxt, "normal"
    stores = (b[n], b[2 * n + 1])
    swap_pending = rules.pie and first_turn and nxt != side
    if rules.early and not swap_pending and max(stores) > rules.pits * rules.seeds:
        return tuple(b), nxt, "early"
    return tuple(b), nxt, None


def seed_total(pos: Position) -> int:
    return sum(pos.board)


# ---------------------------------------------------------------------------------------------------------
# Source 000: the worked example, every board shown there
# ---------------------------------------------------------------------------------------------------------


def test_seed_000_worked_example() -> None:
    rules = Kalah()
    assert rules.spec == "kalah"
    p0 = rules.initial()
    # "Калах A: пуст ... 6 6 6 6 6 6 / 6 6 6 6 6 6"
    assert p0.board == drawn(0, "6 6 6 6 6 6", "6 6 6 6 6 6", 0)
    assert p0.board == (6, 6, 6, 6, 6, 6, 0, 6, 6, 6, 6, 6, 6, 0)
    assert (p0.to_move, p0.turn, p0.ended) == (SOUTH, 0, None)
    assert seed_total(p0) == 72

    # "B ходит: 1": six seeds from pit 1 reach pits 2..6 and the store: extra turn.
    p1 = rules.play(p0, 1)
    assert p1.board == drawn(0, "6 6 6 6 6 6", "0 7 7 7 7 7", 1)
    assert p1.board == (0, 7, 7, 7, 7, 7, 1, 6, 6, 6, 6, 6, 6, 0)
    assert (p1.to_move, p1.turn, p1.ended) == (SOUTH, 0, None)

    # "B ходит: 2": seven seeds: pits 3..6, store, A's pits 1 and 2 (drawn rightmost). Turn passes.
    p2 = rules.play(p1, 2)
    assert p2.board == drawn(0, "6 6 6 6 7 7", "0 0 8 8 8 8", 2)
    assert p2.board == (0, 0, 8, 8, 8, 8, 2, 7, 7, 6, 6, 6, 6, 0)
    assert (p2.to_move, p2.turn, p2.ended) == (NORTH, 1, None)

    # "A ходит: 1": seven seeds: A's pits 2..6, A's store, B's pit 1. Turn passes.
    p3 = rules.play(p2, 1)
    assert p3.board == drawn(1, "7 7 7 7 8 0", "1 0 8 8 8 8", 2)
    assert p3.board == (1, 0, 8, 8, 8, 8, 2, 0, 8, 7, 7, 7, 7, 1)
    assert (p3.to_move, p3.turn, p3.ended) == (SOUTH, 2, None)

    # "B ходит: 1": the one seed lands in B's empty pit 2 (the intermediate board of the source) ...
    sown, last, before = naive_sow(p3.board, SOUTH, 1)
    assert tuple(sown) == drawn(1, "7 7 7 7 8 0", "0 1 8 8 8 8", 2)
    assert (last, before) == (1, 0)
    # ... facing A's pit 5 with 7 seeds: 7 + 1 = 8 go to B's store, 2 + 8 = 10 ("Ням-ням!").
    p4 = rules.play(p3, 1)
    assert p4.board == drawn(1, "7 0 7 7 8 0", "0 0 8 8 8 8", 10)
    assert p4.board == (0, 0, 8, 8, 8, 8, 10, 0, 8, 7, 7, 0, 7, 1)
    assert p4.store(SOUTH) - p3.store(SOUTH) == 8
    assert p4.store(SOUTH) == 10
    assert (p4.to_move, p4.turn, p4.ended) == (NORTH, 3, None)
    for p in (p1, p2, p3, p4):
        assert seed_total(p) == 72


def test_board_text_draws_like_source_000() -> None:
    pos = Position(drawn(1, "7 0 7 7 8 0", "0 0 8 8 8 8", 10), NORTH, 3)
    lines = board_text(pos, "B", "A").splitlines()
    assert lines[0] == "A store: 1"
    assert lines[1].split() == "6 5 4 3 2 1".split()
    assert lines[2].split() == "7 0 7 7 8 0".split()
    assert lines[3].split() == "0 0 8 8 8 8".split()
    assert lines[4].split() == "1 2 3 4 5 6".split()
    assert lines[5] == "B store: 10"


def test_position_accessors() -> None:
    pos = Position((1, 2, 3, 4, 5, 6, 7, 8), NORTH, 5)
    assert pos.pits == 3
    assert pos.row(SOUTH) == (1, 2, 3)
    assert pos.row(NORTH) == (5, 6, 7)
    assert (pos.store(SOUTH), pos.store(NORTH)) == (4, 8)
    assert pos.view(SOUTH) == pos.board
    assert pos.view(NORTH) == (5, 6, 7, 8, 1, 2, 3, 4)


# ---------------------------------------------------------------------------------------------------------
# Spec parsing
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "canonical", "fields"),
    [
        ("kalah", "kalah", {}),
        ("kalah,pits=6,seeds=6", "kalah", {}),
        ("kalah,end=any-empty", "kalah", {}),
        ("kalah,pits=7,seeds=7,pie", "kalah,pits=7,seeds=7,pie", {"pits": 7, "seeds": 7, "pie": True}),
        ("kalah,pie,seeds=7,pits=7", "kalah,pits=7,seeds=7,pie", {"pits": 7, "seeds": 7, "pie": True}),
        (
            "kalah,early,end=mover-empty,empty-capture,pie,seeds=3,pits=4",
            "kalah,pits=4,seeds=3,pie,empty-capture,end=mover-empty,early",
            {"pits": 4, "seeds": 3, "pie": True, "empty_capture": True, "end": "mover-empty", "early": True},
        ),
        ("kalah,empty-capture", "kalah,empty-capture", {"empty_capture": True}),
        ("kalah,seeds=4", "kalah,seeds=4", {"seeds": 4}),
        ("kalah,pits=1,seeds=1", "kalah,pits=1,seeds=1", {"pits": 1, "seeds": 1}),
        (f"kalah,pits={MAX_PITS},seeds={MAX_SEEDS}", f"kalah,pits={MAX_PITS},seeds={MAX_SEEDS}", {}),
        ("kalah,pits=07", "kalah,pits=7", {"pits": 7}),
    ],
)
def test_parse_canonical(spec: str, canonical: str, fields: dict[str, object]) -> None:
    rules = parse_rules(spec)
    assert rules.spec == canonical
    for name, value in fields.items():
        assert getattr(rules, name) == value
    assert parse_rules(rules.spec) == rules
    assert parse_rules(canonical).spec == canonical


rules_strategy = st.builds(
    Kalah,
    pits=st.integers(1, 8),
    seeds=st.integers(1, 8),
    pie=st.booleans(),
    empty_capture=st.booleans(),
    end=st.sampled_from(END_RULES),
    early=st.booleans(),
)


@given(rules_strategy)
def test_spec_round_trip(rules: Kalah) -> None:
    spec = rules.spec
    assert parse_rules(spec) == rules
    assert parse_rules(spec).spec == spec
    # Any order of the options gives the same rules and the same canonical spec.
    name, *options = spec.split(",")
    shuffled = ",".join([name, *reversed(options)])
    assert parse_rules(shuffled) == rules
    assert parse_rules(shuffled).spec == spec


def test_spec_defaults_are_omitted() -> None:
    assert Kalah().spec == "kalah"
    explicit = Kalah(pits=6, seeds=6, pie=False, empty_capture=False, end="any-empty", early=False)
    assert explicit.spec == "kalah"
    assert Kalah(seeds=5).spec == "kalah,seeds=5"
    assert Kalah(end="mover-empty").spec == "kalah,end=mover-empty"
    assert Kalah(early=True, pie=True).spec == "kalah,pie,early"


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("", ["empty"]),
        ("kalah,pits=7, pie", ["spaces"]),
        (" kalah", ["spaces"]),
        ("kalah\t", ["spaces"]),
        ("oware", ["'oware'"]),
        ("Kalah", ["'Kalah'"]),
        ("kalah,swap", ["'swap'"]),
        ("kalah,Pie", ["'Pie'"]),
        ("kalah,", ["''"]),
        ("kalah,,pie", ["''"]),
        ("kalah,stones=4", ["'stones=4'"]),
        ("kalah,pits=six", ["pits=", "'six'"]),
        ("kalah,pits=-1", ["pits=", "'-1'"]),
        ("kalah,pits=+4", ["pits=", "'+4'"]),
        ("kalah,pits=4.0", ["pits=", "'4.0'"]),
        ("kalah,seeds=", ["seeds=", "''"]),
        ("kalah,seeds=٣", ["seeds="]),  # a non-ASCII digit
        ("kalah,seeds=²", ["seeds="]),
        ("kalah,pie=1", ["'pie'", "'pie=1'"]),
        ("kalah,pie=", ["'pie'"]),
        ("kalah,early=yes", ["'early'"]),
        ("kalah,empty-capture=true", ["'empty-capture'"]),
        ("kalah,pits", ["'pits'"]),
        ("kalah,seeds", ["'seeds'"]),
        ("kalah,end", ["'end'"]),
        ("kalah,pie,pie", ["'pie'", "twice"]),
        ("kalah,pits=6,pits=6", ["'pits'", "twice"]),
        ("kalah,seeds=4,pits=5,seeds=3", ["'seeds'", "twice"]),
        ("kalah,end=any-empty,end=mover-empty", ["'end'", "twice"]),
        ("kalah,pits=0", ["pits=0", "range"]),
        (f"kalah,pits={MAX_PITS + 1}", [f"pits={MAX_PITS + 1}", "range"]),
        ("kalah,seeds=0", ["seeds=0", "range"]),
        (f"kalah,seeds={MAX_SEEDS + 1}", [f"seeds={MAX_SEEDS + 1}", "range"]),
        ("kalah,pits=99999999999999999999999", ["pits=99999999999999999999999"]),
        ("kalah,end=sudden-death", ["end=sudden-death"]),
        ("kalah,end=", ["end="]),
        ("kalah,end=Any-Empty", ["end=Any-Empty"]),
    ],
)
def test_parse_errors_name_the_option(spec: str, names: list[str]) -> None:
    with pytest.raises(RulesError) as excinfo:
        parse_rules(spec)
    message = str(excinfo.value)
    for name in names:
        assert name in message, (spec, message)


def test_rules_error_is_a_value_error() -> None:
    assert issubclass(RulesError, ValueError)
    with pytest.raises(ValueError):
        parse_rules("kalah,nonsense")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"pits": 0}, "pits=0"),
        ({"pits": MAX_PITS + 1}, "pits="),
        ({"seeds": 0}, "seeds=0"),
        ({"seeds": -3}, "seeds=-3"),
        ({"end": "never"}, "end=never"),
    ],
)
def test_constructor_validates(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(RulesError, match=name):
        Kalah(**kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# Pie rule and illegal moves
# ---------------------------------------------------------------------------------------------------------


def test_pie_swap_only_on_the_second_players_first_turn() -> None:
    rules = Kalah(pie=True)
    p0 = rules.initial()
    assert SWAP not in rules.legal_moves(p0)
    with pytest.raises(IllegalMove, match="second player's first move"):
        rules.play(p0, SWAP)
    # South's first turn has an extra move (pit 1 ends in the store): still South's turn, no SWAP yet.
    p1 = rules.play(p0, 1)
    assert (p1.to_move, p1.turn) == (SOUTH, 0)
    assert SWAP not in rules.legal_moves(p1)
    with pytest.raises(IllegalMove):
        rules.play(p1, SWAP)
    # The first turn is over: North may swap.
    p2 = rules.play(p1, 2)
    assert (p2.to_move, p2.turn) == (NORTH, 1)
    assert rules.legal_moves(p2) == (1, 2, 3, 4, 5, 6, SWAP)
    swapped = rules.play(p2, SWAP)
    assert swapped.board == p2.board
    assert swapped.to_move == NORTH  # the first player, now owning North, moves next
    assert swapped.turn == 2
    assert swapped.ended is None
    assert SWAP not in rules.legal_moves(swapped)
    assert rules.legal_moves(swapped) == (1, 2, 3, 4, 5, 6)
    with pytest.raises(IllegalMove):
        rules.play(swapped, SWAP)
    # The game goes on from the swapped position exactly as from the unswapped one.
    assert rules.play(swapped, 1).board == rules.play(p2, 1).board
    # Not swapping on turn 1 forfeits the right.
    p3 = rules.play(p2, 1)
    assert p3.turn == 2
    assert SWAP not in rules.legal_moves(p3)
    with pytest.raises(IllegalMove):
        rules.play(p3, SWAP)


def test_swap_without_pie_is_illegal() -> None:
    rules = Kalah()
    p2 = rules.play(rules.play(rules.initial(), 1), 2)
    assert p2.turn == 1
    assert SWAP not in rules.legal_moves(p2)
    with pytest.raises(IllegalMove, match="pie"):
        rules.play(p2, SWAP)


def test_pie_after_a_single_move_first_turn() -> None:
    rules = Kalah(pie=True)
    p1 = rules.play(rules.initial(), 3)  # 6 seeds from pit 3 end in North's pit 2: the turn passes
    assert (p1.to_move, p1.turn) == (NORTH, 1)
    assert SWAP in rules.legal_moves(p1)


@pytest.mark.parametrize(
    ("rules", "line"),
    [
        # South 6 reaches North pit 3; North 2 (5 seeds) ends in North's store.
        (Kalah(seeds=4, pie=True), [6, 2]),
        (Kalah(pits=4, seeds=2, pie=True), [4, 3]),
    ],
    ids=["kalah,seeds=4,pie", "kalah,pits=4,seeds=2,pie"],
)
def test_no_swap_after_the_second_player_has_moved(rules: Kalah, line: list[int]) -> None:
    # The brief: the second player may, *instead of moving*, swap. Once North has sown, its extra turn is
    # part of a game it chose to play as North; a SWAP now would give it a move and the other side too.
    pos = rules.play(rules.initial(), line[0])
    assert (pos.to_move, pos.turn) == (NORTH, 1)
    assert SWAP in rules.legal_moves(pos)
    pos = rules.play(pos, line[1])
    assert (pos.to_move, pos.turn, pos.ended) == (NORTH, 1, None)  # North's extra turn
    assert SWAP not in rules.legal_moves(pos)  # got: SWAP listed
    with pytest.raises(IllegalMove):
        rules.play(pos, SWAP)  # got: accepted


def test_illegal_move_messages() -> None:
    rules = Kalah()
    pos = rules.play(rules.initial(), 3)  # North to move, all of North's pits full
    assert pos.to_move == NORTH
    south_empty = rules.play(pos, 1)  # South's pit 3 is still empty
    assert south_empty.to_move == SOUTH and south_empty.row(SOUTH)[2] == 0
    with pytest.raises(IllegalMove, match="pit 3 is empty"):
        rules.play(south_empty, 3)
    for bad in (0, 7, -1, 100):
        with pytest.raises(IllegalMove, match=f"pit {bad} is out of range"):
            rules.play(south_empty, bad)
    for bad in ("1", 1.0, None, True):
        with pytest.raises(IllegalMove, match="not a pit number"):
            rules.play(south_empty, bad)  # type: ignore[arg-type]
    over = Position((0, 0, 0, 5, 0, 0, 0, 7), SOUTH, 9, "normal")
    with pytest.raises(IllegalMove, match="over"):
        Kalah(pits=3).play(over, 1)
    assert Kalah(pits=3).legal_moves(over) == ()
    assert issubclass(IllegalMove, ValueError)


# ---------------------------------------------------------------------------------------------------------
# Captures
# ---------------------------------------------------------------------------------------------------------


def test_standard_vs_empty_capture_when_opposite_is_empty() -> None:
    # South pit 1 holds one seed; it lands in South's empty pit 2, which faces North's pit 5, empty.
    board = (1, 0, 3, 3, 3, 3, 0, 3, 3, 3, 3, 0, 3, 0)
    pos = Position(board, SOUTH, 4)
    standard = Kalah().play(pos, 1)
    assert standard.board == (0, 1, 3, 3, 3, 3, 0, 3, 3, 3, 3, 0, 3, 0)
    assert (standard.to_move, standard.turn) == (NORTH, 5)
    empty = Kalah(empty_capture=True).play(pos, 1)
    assert empty.board == (0, 0, 3, 3, 3, 3, 1, 3, 3, 3, 3, 0, 3, 0)
    assert (empty.to_move, empty.turn) == (NORTH, 5)


def test_capture_with_opposite_full_is_the_same_in_both_rules() -> None:
    # North pit 2 (one seed) -> North pit 3, empty, facing South pit 4 (5 seeds): 6 to North's store.
    board = (2, 2, 2, 5, 2, 2, 0, 4, 1, 0, 4, 4, 4, 3)
    pos = Position(board, NORTH, 7)
    expected = (2, 2, 2, 0, 2, 2, 0, 4, 0, 0, 4, 4, 4, 9)
    for rules in (Kalah(), Kalah(empty_capture=True)):
        after = rules.play(pos, 2)
        assert after.board == expected
        assert (after.to_move, after.turn) == (SOUTH, 8)


def test_no_capture_in_the_opponents_row() -> None:
    # South pit 5 (3 seeds): South pit 6, South store, North pit 1 (empty; faces South pit 6, now full).
    board = (1, 1, 1, 1, 3, 4, 0, 0, 2, 2, 2, 2, 2, 0)
    pos = Position(board, SOUTH, 2)
    for rules in (Kalah(), Kalah(empty_capture=True)):
        after = rules.play(pos, 5)
        assert after.board == (1, 1, 1, 1, 0, 5, 1, 1, 2, 2, 2, 2, 2, 0)
        assert after.to_move == NORTH


def test_no_capture_when_landing_pit_was_full() -> None:
    board = (1, 2, 3, 3, 3, 3, 0, 3, 3, 3, 3, 3, 3, 0)
    after = Kalah(empty_capture=True).play(Position(board, SOUTH, 2), 1)
    assert after.board == (0, 3, 3, 3, 3, 3, 0, 3, 3, 3, 3, 3, 3, 0)


# ---------------------------------------------------------------------------------------------------------
# Laps
# ---------------------------------------------------------------------------------------------------------


def test_lap_of_13_sows_the_origin_and_captures_there() -> None:
    # 13 seeds from South pit 1 on Kalah(6,*): one seed in each of the 13 holes other than North's store,
    # the last one in the emptied pit 1. That pit was empty, North pit 6 opposite now holds 1: capture 2.
    board = (13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5)
    after = Kalah().play(Position(board, SOUTH, 4), 1)
    assert after.board == (0, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 0, 5)
    assert after.to_move == NORTH
    assert naive_play(Kalah(), board, SOUTH, 1) == (after.board, NORTH, None)


def test_lap_of_14_ends_in_pit_2_without_capture() -> None:
    board = (14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5)
    after = Kalah().play(Position(board, SOUTH, 4), 1)
    assert after.board == (1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5)
    assert after.to_move == NORTH


def test_north_lap_skips_south_store_only() -> None:
    # North pit 3 with 15 seeds: 13 holes get one each (South's store is skipped, North's origin is not),
    # two more go to North pits 4 and 5.
    board = (2, 2, 2, 2, 2, 2, 7, 1, 1, 15, 1, 1, 1, 4)
    after = Kalah().play(Position(board, NORTH, 3), 3)
    assert after.board == (3, 3, 3, 3, 3, 3, 7, 2, 2, 1, 3, 3, 2, 5)
    assert after.to_move == SOUTH
    assert after.store(SOUTH) == 7  # the opponent's store never gets a seed


def test_double_lap_ends_in_origin_without_capture() -> None:
    # 26 = 2 * 13: two seeds in every hole but North's store, the last one in the origin (then holding 2).
    board = (0, 0, 26, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    after = Kalah(empty_capture=True).play(Position(board, SOUTH, 2), 3)
    assert after.board == (2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0)
    assert after.to_move == NORTH


@pytest.mark.parametrize("seeds", range(1, 60))
@pytest.mark.parametrize("pit", [1, 3, 6])
@pytest.mark.parametrize("side", [SOUTH, NORTH])
def test_big_pits_match_naive_sowing(seeds: int, pit: int, side: int) -> None:
    rules = Kalah()
    rng = random.Random(seeds * 100 + pit * 10 + side)
    board = [rng.randint(0, 3) for _ in range(14)]
    board[side * 7 + pit - 1] = seeds
    board[(1 - side) * 7 + rng.randint(0, 5)] += 1  # keep the opponent's row non-empty
    pos = Position(tuple(board), side, 2)
    after = rules.play(pos, pit)
    assert (after.board, after.to_move, after.ended) == naive_play(rules, pos.board, side, pit)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(rules_strategy, st.integers(0, 1), st.data())
def test_engine_matches_naive_on_random_positions(rules: Kalah, side: int, data: st.DataObject) -> None:
    n = rules.pits
    limit = 3 * (2 * n + 1)  # enough for several laps
    rows = [data.draw(st.lists(st.integers(0, limit), min_size=n, max_size=n)) for _ in (SOUTH, NORTH)]
    stores = data.draw(st.lists(st.integers(0, 3 * rules.total_seeds), min_size=2, max_size=2))
    if not any(rows[side]):
        rows[side][data.draw(st.integers(0, n - 1))] = data.draw(st.integers(1, limit))
    board = (*rows[SOUTH], stores[SOUTH], *rows[NORTH], stores[NORTH])
    pos = Position(board, side, 5)
    pit = data.draw(st.sampled_from([p for p in range(1, n + 1) if rows[side][p - 1]]))
    after = rules.play(pos, pit)
    assert (after.board, after.to_move, after.ended) == naive_play(rules, board, side, pit)
    assert after.turn == pos.turn + (after.to_move != side)
    assert sum(after.board) == sum(board)


# ---------------------------------------------------------------------------------------------------------
# End rules and the result
# ---------------------------------------------------------------------------------------------------------


def test_any_empty_ends_when_the_movers_row_empties_and_banks_own_seeds() -> None:
    # Kalah(3,*): South pit 3 (2 seeds) -> South store, North pit 1. South's row is now empty.
    board = (0, 0, 2, 0, 1, 1, 1, 0)
    pos = Position(board, SOUTH, 6)
    rules = Kalah(pits=3)
    after = rules.play(pos, 3)
    assert after.ended == "normal"
    assert after.board == (0, 0, 0, 1, 0, 0, 0, 4)  # North banks its own 2 + 1 + 1
    assert rules.is_over(after)
    assert rules.legal_moves(after) == ()
    assert rules.result(after) == Outcome(1, 4, NORTH, "normal")


def test_any_empty_ends_when_the_opponents_row_empties() -> None:
    # South pit 1 (1 seed) -> South pit 2 (empty), capturing North pit 2, North's last seeds.
    board = (1, 0, 5, 0, 0, 2, 0, 0)
    pos = Position(board, SOUTH, 6)
    after = Kalah(pits=3).play(pos, 1)
    assert after.ended == "normal"
    assert after.board == (0, 0, 0, 8, 0, 0, 0, 0)  # 3 captured, then South banks its own 5
    assert Kalah(pits=3).result(after) == Outcome(8, 0, SOUTH, "normal")
    # mover-empty: North is to move and has no seeds, so this ends too.
    after2 = Kalah(pits=3, end="mover-empty").play(pos, 1)
    assert after2.ended == "normal"
    assert after2.board == (0, 0, 0, 8, 0, 0, 0, 0)


def test_mover_empty_plays_on_while_the_mover_has_seeds() -> None:
    board = (0, 0, 2, 0, 1, 1, 1, 0)
    rules = Kalah(pits=3, end="mover-empty")
    after = rules.play(Position(board, SOUTH, 6), 3)
    assert after.ended is None
    assert after.board == (0, 0, 0, 1, 2, 1, 1, 0)
    assert after.to_move == NORTH
    assert rules.legal_moves(after) == (1, 2, 3)
    # North pit 3 -> North store: extra turn; North still has seeds, South has none: still on.
    again = rules.play(after, 3)
    assert (again.board, again.to_move, again.ended) == ((0, 0, 0, 1, 2, 1, 0, 1), NORTH, None)
    # North pit 1 (2 seeds) -> pits 2, 3 (pit 3 was empty but faces South's empty pit 1: no capture);
    # the turn passes to South, who has nothing: the end, North banks its 3.
    last = rules.play(again, 1)
    assert last.ended == "normal"
    assert last.board == (0, 0, 0, 1, 0, 0, 0, 4)
    assert rules.result(last) == Outcome(1, 4, NORTH, "normal")


def test_mover_empty_ends_on_an_extra_turn_with_an_empty_row() -> None:
    board = (0, 0, 1, 0, 2, 2, 2, 0)
    for end in END_RULES:
        after = Kalah(pits=3, end=end).play(Position(board, SOUTH, 6), 3)
        assert after.ended == "normal", end
        assert after.to_move == SOUTH
        assert after.board == (0, 0, 0, 1, 0, 0, 0, 6)


def test_early_finish() -> None:
    # Kalah(6,6): 72 seeds, so "more than half" is 37 or more.
    board = (1, 0, 0, 0, 1, 1, 35, 5, 5, 5, 5, 5, 5, 4)
    assert sum(board) == 72
    early = Kalah(early=True)
    pos = Position(board, SOUTH, 10)
    # Pit 6 -> store: 36 is exactly half, not more: play on (extra turn).
    half = early.play(pos, 6)
    assert (half.store(SOUTH), half.ended, half.to_move) == (36, None, SOUTH)
    # Pit 5 -> pit 6, empty, facing North pit 1 (5 seeds): 36 + 6 = 42 > 36.
    won = early.play(half, 5)
    assert won.ended == "early"
    assert won.board == (1, 0, 0, 0, 0, 0, 42, 0, 5, 5, 5, 5, 5, 4)
    assert early.is_over(won)
    assert early.legal_moves(won) == ()
    assert early.result(won) == Outcome(42, 4, SOUTH, "early")
    with pytest.raises(IllegalMove):
        early.play(won, 1)
    # Off by default: the same moves play on.
    default = Kalah()
    on = default.play(default.play(pos, 6), 5)
    assert on.board == won.board and on.ended is None
    assert not default.is_over(on)


def test_early_finish_for_north() -> None:
    rules = Kalah(pits=2, seeds=2, early=True)  # 8 seeds: more than half is 5
    board = (1, 1, 0, 1, 1, 4)  # South pits 1-2, South store, North pits 1-2, North store
    after = rules.play(Position(board, NORTH, 3), 2)  # North pit 2 -> North store: 5
    assert after.ended == "early"
    assert rules.result(after) == Outcome(0, 5, NORTH, "early")


def test_result_draw_and_not_over() -> None:
    rules = Kalah()
    with pytest.raises(ValueError):
        rules.result(rules.initial())
    draw = Position((0,) * 6 + (36,) + (0,) * 6 + (36,), NORTH, 30, "normal")
    assert rules.result(draw) == Outcome(36, 36, None, "normal")
    south = Position((0,) * 6 + (40,) + (0,) * 6 + (32,), NORTH, 30, "normal")
    assert rules.result(south).winner == SOUTH


def test_draw_reached_by_play() -> None:
    # Kalah(1,1): South's only move banks its seed (extra turn) and empties South's row; North banks its own.
    for end in END_RULES:
        rules = Kalah(pits=1, seeds=1, end=end)
        after = rules.play(rules.initial(), 1)
        assert after.board == (0, 1, 0, 1)
        assert rules.result(after) == Outcome(1, 1, None, "normal")


# ---------------------------------------------------------------------------------------------------------
# Properties over random games
# ---------------------------------------------------------------------------------------------------------


def potential(pos: Position) -> int:
    """Sum over both rows of seeds * pit number. A move whose seeds stay in the mover's row (no store
    reached, no capture) moves them to higher pit numbers, so this grows; every other move feeds a store."""
    n = pos.pits
    return sum((k + 1) * (pos.row(SOUTH)[k] + pos.row(NORTH)[k]) for k in range(n))


def move_bound(rules: Kalah) -> int:
    """Stores only grow, by at most total_seeds in all, and between two store changes the potential
    (0..total*n) grows at every move; plus one SWAP."""
    total = rules.total_seeds
    return (total + 1) * (total * rules.pits + 1) + 1


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rules_strategy, st.randoms(use_true_random=False))
def test_random_games(rules: Kalah, rng: random.Random) -> None:
    pos = rules.initial()
    total = rules.total_seeds
    assert sum(pos.board) == total
    moves = 0
    bound = move_bound(rules)
    north_has_moved = False
    while True:
        legal = rules.legal_moves(pos)
        assert (legal == ()) == rules.is_over(pos) == (pos.ended is not None)
        if not legal:
            break
        pits = [m for m in legal if m != SWAP]
        # Exactly the non-empty pits of the side to move are legal; SWAP exactly on turn 1 with pie.
        assert pits == [p for p in range(1, rules.pits + 1) if pos.row(pos.to_move)[p - 1]]
        if SWAP in legal:
            assert rules.pie and pos.turn == 1 and pos.to_move == NORTH
        if rules.pie and pos.turn == 1 and not north_has_moved:
            assert SWAP in legal
        # (That SWAP is gone after North's first sowing: test_no_swap_after_the_second_player_has_moved.)
        # The view a bot gets gives the same legal pits.
        seen = rules.from_view(pos.view(pos.to_move), can_swap=SWAP in legal)
        assert rules.legal_moves(seen) == legal
        assert seen.view(SOUTH) == pos.view(pos.to_move)
        move = rng.choice(legal)
        north_has_moved = north_has_moved or pos.to_move == NORTH
        after = rules.play(pos, move)
        moves += 1
        assert moves <= bound
        assert sum(after.board) == total
        assert all(x >= 0 for x in after.board)
        for side in (SOUTH, NORTH):
            assert after.store(side) >= pos.store(side)
        if move == SWAP:
            assert (after.board, after.to_move, after.turn) == (pos.board, pos.to_move, pos.turn + 1)
        else:
            stores_before = pos.store(SOUTH) + pos.store(NORTH)
            stores_after = after.store(SOUTH) + after.store(NORTH)
            assert stores_after > stores_before or potential(after) > potential(pos)
            assert after.turn == pos.turn + (after.to_move != pos.to_move)
            reference = naive_play(rules, pos.board, pos.to_move, move, first_turn=pos.turn == 0)
            assert (after.board, after.to_move, after.ended) == reference
        pos = after
    outcome = rules.result(pos)
    assert outcome.south_store == pos.store(SOUTH) and outcome.north_store == pos.store(NORTH)
    if pos.ended == "normal":
        assert pos.row(SOUTH) == (0,) * rules.pits and pos.row(NORTH) == (0,) * rules.pits
        assert outcome.south_store + outcome.north_store == total
    else:
        assert pos.ended == "early" and rules.early
        assert 2 * max(outcome.south_store, outcome.north_store) > total
    if outcome.winner is None:
        assert outcome.south_store == outcome.north_store
    else:
        assert outcome.south_store != outcome.north_store
        assert outcome.winner == (SOUTH if outcome.south_store > outcome.north_store else NORTH)


@given(rules_strategy, st.data())
def test_from_view_layout(rules: Kalah, data: st.DataObject) -> None:
    n = rules.pits
    board = tuple(data.draw(st.lists(st.integers(0, 9), min_size=2 * n + 2, max_size=2 * n + 2)))
    for side in (SOUTH, NORTH):
        pos = Position(board, side, 4)
        seen = rules.from_view(pos.view(side), can_swap=False)
        assert (seen.to_move, seen.ended) == (SOUTH, None)
        assert seen.row(SOUTH) == pos.row(side)
        assert seen.row(NORTH) == pos.row(1 - side)
        assert seen.store(SOUTH) == pos.store(side)
        assert seen.store(NORTH) == pos.store(1 - side)
        legal_pits = tuple(p for p in range(1, n + 1) if board[side * (n + 1) + p - 1])
        assert rules.legal_moves(seen) == legal_pits
    with pytest.raises(ValueError):
        rules.from_view(board[:-1], can_swap=False)


# ---------------------------------------------------------------------------------------------------------
# Exhaustive search on tiny boards
# ---------------------------------------------------------------------------------------------------------


def engine_value(rules: Kalah) -> int:
    """First player's margin under best play, by negamax over the engine. The player changes exactly when
    `turn` grows (a passed turn, or SWAP: after it the same side moves but the other player owns it)."""

    @cache
    def value(pos: Position) -> int:  # for the player to move: own side's store minus the other's
        if rules.is_over(pos):
            return pos.store(pos.to_move) - pos.store(1 - pos.to_move)
        best = None
        for move in rules.legal_moves(pos):
            child = rules.play(pos, move)
            v = value(child) if child.turn == pos.turn else -value(child)
            best = v if best is None else max(best, v)
        assert best is not None
        return best

    return value(rules.initial())


def naive_value(rules: Kalah) -> int:
    """The same value from the naive reference, with the pie rule handled differently: South's whole first
    turn leads to some position X with North to move. Without a swap North plays on and gets u(X); with
    one the first player plays North from X and gets u(X). So the second player gets |u(X)| and the first
    player, choosing X, gets max over X of -|u(X)| (or the final margin if the first turn ended the game)."""
    n = rules.pits

    @cache
    def u(board: tuple[int, ...], side: int) -> int:  # no pie from here: side-to-move's margin
        best = None
        for pit in range(1, n + 1):
            if board[side * (n + 1) + pit - 1] == 0:
                continue
            nb, nxt, ended = naive_play(rules, board, side, pit)
            if ended:
                v = nb[side * (n + 1) + n] - nb[(1 - side) * (n + 1) + n]
            else:
                v = u(nb, nxt) if nxt == side else -u(nb, nxt)
            best = v if best is None else max(best, v)
        assert best is not None
        return best

    start = rules.initial().board
    if not rules.pie:
        return u(start, SOUTH)

    def first_turn(board: tuple[int, ...]) -> int:  # South to move in the first turn
        best = None
        for pit in range(1, n + 1):
            if board[pit - 1] == 0:
                continue
            nb, nxt, ended = naive_play(rules, board, SOUTH, pit, first_turn=True)
            if ended:
                v = nb[n] - nb[2 * n + 1]
            elif nxt == SOUTH:
                v = first_turn(nb)
            else:
                v = -abs(u(nb, NORTH))
            best = v if best is None else max(best, v)
        assert best is not None
        return best

    return first_turn(start)


TINY = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (3, 2), (2, 3), (4, 1)]
OPTIONS = [
    {},
    {"empty_capture": True},
    {"end": "mover-empty"},
    {"pie": True},
    {"pie": True, "empty_capture": True, "end": "mover-empty"},
    {"empty_capture": True, "end": "mover-empty"},
]


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "standard")
@pytest.mark.parametrize(("pits", "seeds"), TINY)
def test_tiny_boards_solved_twice(pits: int, seeds: int, options: dict[str, object]) -> None:
    rules = Kalah(pits=pits, seeds=seeds, **options)  # type: ignore[arg-type]
    v = engine_value(rules)
    assert v == naive_value(rules)
    assert v == engine_value(rules)  # stable (no hidden state in the engine)
    total = rules.total_seeds
    assert isinstance(v, int)
    assert -total <= v <= total
    assert v % 2 == 0  # the stores end up holding the even total 2*n*s between them
    if rules.pie:
        # The second player can always choose the better side of X, so the first player's value is at
        # most 0, unless the first turn can end the game outright; and never more than without the pie.
        plain = engine_value(Kalah(pits=pits, seeds=seeds, empty_capture=rules.empty_capture, end=rules.end))
        assert v <= plain
        if v > 0:
            assert first_turn_can_end(rules)
    # Early finish stops the game once the winner is certain, so it can change the margin but not the sign:
    # every continuation of an early-finished game ends with the same side ahead, and the sign of a
    # negamax value is the negamax of the signs. (With the pie rule the side's owner is not certain before
    # the swap decision: see test_early_finish_does_not_preempt_the_swap.)
    if not rules.pie:
        with_early = engine_value(Kalah(pits=pits, seeds=seeds, early=True, **options))  # type: ignore[arg-type]
        assert sign(with_early) == sign(v)


def sign(x: int) -> int:
    return (x > 0) - (x < 0)


def test_early_finish_does_not_preempt_the_swap() -> None:
    # Kalah(2,1), mover-empty: South 2 (store, extra turn), South 1 (capture 1+1): South's store holds 3
    # of the 4 seeds. North has a seed, so the game goes on, and with the pie rule North's owner may SWAP
    # and take South's 3. "More than half" makes South's *side* certain to win, but not South's player:
    # an early finish here hands the game to the first player, who loses it with best play (-2 below).
    rules = Kalah(pits=2, seeds=1, pie=True, end="mover-empty", early=True)
    pos = rules.play(rules.play(rules.initial(), 2), 1)
    assert pos.board == (0, 0, 3, 0, 1, 0)
    assert (pos.to_move, pos.turn) == (NORTH, 1)
    assert engine_value(Kalah(pits=2, seeds=1, pie=True, end="mover-empty")) == -2
    assert pos.ended is None  # got: "early"
    assert SWAP in rules.legal_moves(pos)
    assert sign(engine_value(rules)) == -1  # got: +3


def first_turn_can_end(rules: Kalah) -> bool:
    todo = [rules.initial()]
    while todo:
        pos = todo.pop()
        for move in rules.legal_moves(pos):
            child = rules.play(pos, move)
            if child.ended:
                return True
            if child.to_move == SOUTH:
                todo.append(child)
    return False


# Hand-derived values (South first, "margin" = South's store minus North's at the end, best play).
#
# Kalah(1,1): board (1,0 | 1,0). South's one seed goes to the store: extra turn with an empty row, so the
#   game ends under either end rule and North banks its seed. 1-1: value 0, with every option.
# Kalah(1,2): South's 2 seeds: store, North's pit -> (0,1 | 3,0). any-empty: ends, North banks 3: 1-3 = -2.
#   mover-empty: North moves its 3: North store, South pit, back into North's emptied pit (the origin is not
#   skipped), which was empty and faces South's 1 seed: capture 1+1 -> (0,1 | 0,3); South to move has
#   nothing: 1-3 = -2. Empty capture changes nothing (the opposite pit is full). Pie: South's only first
#   turn ends the game (any-empty) -> -2; with mover-empty X = (0,1 | 3,0), u(X) = +2 for North, so the
#   second player takes North (no swap) and the first player gets -2.
# Kalah(1,3): South's 3 seeds: store, North's pit, South's emptied pit (origin not skipped), where the last
#   seed lands in an empty own pit facing North's 4: capture 5 -> (0,6 | 0,0). Over under either end rule
#   (both rows empty), and within the first turn, so the pie cannot matter: +6 with every option.
# Kalah(2,1): board (1,1,0 | 1,1,0) (South pits 1,2, store | North pits 1,2, store).
#   South 2 -> store, extra turn -> (1,0,1 | 1,1,0); South 1 -> pit 2, empty, facing North pit 1 (1 seed):
#   capture 2 -> (0,0,3 | 0,1,0). any-empty: South's row is empty, North banks 1: 3-1 = +2.
#   mover-empty: North to move has a seed: North 2 -> store, extra turn, North's row is empty: 3-1 = +2.
#   South 1 first -> (0,2,0 | 1,1,0), North to move; North 1 -> (0,2,0 | 0,2,0), then South's only move
#   2 -> store and North pit 1 -> South's row is empty, North has 3: 1-3 = -2 under any-empty; under
#   mover-empty North then has (1,2) and South nothing... North moves 1 -> (0,0,1 | 0,3,0), South to move
#   with nothing: 1-3 = -2. So South 1 first is at most -2 and the value is +2 without pie, whatever the
#   capture rule (the capture above has the opposite pit full).
#   Pie, any-empty: the +2 line ends the game within South's first turn, so there is nothing to swap: +2.
#   Pie, mover-empty: X = (0,0,3 | 0,1,0) has u(X) = -2 for North (North's forced 2 ends it 3-1), and
#   X' = (0,2,0 | 1,1,0) has u(X') = +2; the second player gets |u| = 2 either way: the value is -2.
HAND_VALUES = [
    ((1, 1), {}, 0),
    ((1, 1), {"end": "mover-empty"}, 0),
    ((1, 1), {"pie": True}, 0),
    ((1, 1), {"empty_capture": True, "end": "mover-empty", "pie": True}, 0),
    ((1, 2), {}, -2),
    ((1, 2), {"end": "mover-empty"}, -2),
    ((1, 2), {"empty_capture": True}, -2),
    ((1, 2), {"pie": True}, -2),
    ((1, 2), {"pie": True, "end": "mover-empty"}, -2),
    ((1, 3), {}, 6),
    ((1, 3), {"end": "mover-empty"}, 6),
    ((1, 3), {"pie": True, "empty_capture": True}, 6),
    ((2, 1), {}, 2),
    ((2, 1), {"empty_capture": True}, 2),
    ((2, 1), {"end": "mover-empty"}, 2),
    ((2, 1), {"empty_capture": True, "end": "mover-empty"}, 2),
    ((2, 1), {"pie": True}, 2),
    ((2, 1), {"pie": True, "empty_capture": True}, 2),
    ((2, 1), {"pie": True, "end": "mover-empty"}, -2),
]


@pytest.mark.parametrize(("size", "options", "value"), HAND_VALUES)
def test_hand_derived_values(size: tuple[int, int], options: dict[str, object], value: int) -> None:
    rules = Kalah(pits=size[0], seeds=size[1], **options)  # type: ignore[arg-type]
    assert engine_value(rules) == value
    assert naive_value(rules) == value


def test_kalah_2_1_lines_by_hand() -> None:
    rules = Kalah(pits=2, seeds=1)
    p = rules.play(rules.initial(), 2)
    assert (p.board, p.to_move) == ((1, 0, 1, 1, 1, 0), SOUTH)
    p = rules.play(p, 1)
    assert (p.board, p.ended) == ((0, 0, 3, 0, 0, 1), "normal")
    mover = Kalah(pits=2, seeds=1, end="mover-empty")
    q = mover.play(mover.play(mover.initial(), 2), 1)
    assert (q.board, q.to_move, q.ended) == ((0, 0, 3, 0, 1, 0), NORTH, None)
    q = mover.play(q, 2)
    assert (q.board, q.to_move, q.ended) == ((0, 0, 3, 0, 0, 1), NORTH, "normal")


def test_kalah_1_2_mover_empty_origin_capture() -> None:
    rules = Kalah(pits=1, seeds=2, end="mover-empty")
    p = rules.play(rules.initial(), 1)
    assert (p.board, p.to_move, p.ended) == ((0, 1, 3, 0), NORTH, None)
    p = rules.play(p, 1)
    assert (p.board, p.to_move, p.ended) == ((0, 1, 0, 3), SOUTH, "normal")


# ---------------------------------------------------------------------------------------------------------
# Trace: what a move did, step by step (the replay's seed-by-seed animation plays these)
# ---------------------------------------------------------------------------------------------------------


def apply_steps(
    board: tuple[int, ...], side: int, steps: tuple[tuple[str, int, int], ...]
) -> tuple[int, ...]:
    """The board after moving seeds as the steps say, deciding nothing (what the page's script does)."""
    b, hand, n = list(board), 0, len(board) // 2 - 1
    for kind, hole, seeds in steps:
        assert seeds > 0 and b[hole] >= (seeds if kind != "sow" else 0), (kind, hole, seeds, b)
        if kind == "lift":
            assert b[hole] == seeds and hand == 0
            hand, b[hole] = seeds, 0
        elif kind == "sow":
            hand -= 1
            b[hole] += 1
        elif kind == "capture":
            assert b[hole] == seeds
            b[hole] = 0
            b[side * (n + 1) + n] += seeds
        else:
            assert kind == "sweep" and b[hole] == seeds and hole % (n + 1) != n
            b[hole] = 0
            b[(hole // (n + 1)) * (n + 1) + n] += seeds
    assert hand == 0
    return tuple(b)


@pytest.mark.parametrize(
    "spec",
    ["kalah", "kalah,pits=4,seeds=3,pie", "kalah,empty-capture,end=mover-empty", "mankalah", "kalah,seeds=20",
     "relay", "relay,chain,pie", "relay,pits=4,seeds=4"],
)  # fmt: skip
def test_a_trace_is_play_step_by_step(spec: str) -> None:
    rules = parse_rules(spec)
    rng = random.Random(spec)
    seen = {"capture": 0, "sweep": 0, "extra": 0, "relay": 0}
    for _ in range(60):
        pos = rules.initial()
        while not pos.ended:
            move = rng.choice(rules.legal_moves(pos))
            trace = rules.trace(pos, move)
            assert trace.after == rules.play(pos, move)
            if move == SWAP:
                assert trace.steps == ()
            else:
                pit = pos.to_move * (pos.pits + 1) + int(move) - 1
                assert trace.steps[0] == ("lift", pit, pos.board[pit])
                assert apply_steps(pos.board, pos.to_move, trace.steps) == trace.after.board
            assert trace.extra == (
                not trace.after.ended and move != SWAP and trace.after.to_move == pos.to_move
            )
            after_sowing = trace.after.store(pos.to_move) - pos.store(pos.to_move)
            assert trace.banked <= after_sowing or trace.swept
            seen["capture"] += bool(trace.captured)
            seen["sweep"] += trace.swept
            seen["extra"] += trace.extra
            seen["relay"] += trace.relay
            pos = trace.after
    assert seen["capture"] and seen["sweep"]  # the test met what it is about
    assert (seen["relay"] > 0) == spec.startswith("relay") and (seen["extra"] > 0) == spec.startswith(
        ("kalah", "mankalah")
    )


def test_a_trace_sows_laps_seed_by_seed_from_the_next_hole():
    rules = Kalah()
    board = [0] * 14
    board[2] = 15  # pit 3 of South: one lap of 13 holes (North's store skipped) and two more
    board[9] = 1
    trace = rules.trace(Position(tuple(board), SOUTH, 2), 3)
    sown = [hole for kind, hole, _ in trace.steps if kind == "sow"]
    assert sown == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 1, 2, 3, 4]
    assert 13 not in sown
