"""Relay Kalah (source 003, spec `relay`): hand-worked moves, greedy's own simulation of them, and the bundled
bots playing it through the referee and a whole `arena run`.

Boards are absolute: South's pits 1..4, South's store, North's pits 1..4, North's store.
"""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_ends_as_recorded

from arena.game.rules import NORTH, SOUTH, Position, Rules, parse_rules
from arena.match.bots import load_bot
from arena.match.clock import TimeControl
from arena.match.referee import Limits, Player, play_game

ROOT = Path(__file__).resolve().parent.parent
RELAY = parse_rules("relay,pits=4,seeds=3")
CHAIN = parse_rules("relay,pits=4,seeds=3,chain")


def after(rules: Rules, board: list[int], pit: int, side: int = SOUTH) -> Position:
    assert sum(board) == 24, "a board of relay,pits=4,seeds=3 holds 24 seeds"
    return rules.play(Position(tuple(board), side, 2), pit)


def test_a_relay_series_ending_in_a_capture_with_the_preceding_pit() -> None:
    # South's pit 4 (7 seeds): store, North's 1-4 (2 each), South's 1, South's 2 (4 -> 5): the last seed
    # lands in an own pit that was not empty, after seeds went to North: lift its 5 and sow on: South's 3,
    # 4, store, North's 1 (3), North's 2 (3). North's 2 now holds 3: captured, with North's 1 before it (3);
    # North's 3 and 4 (2 each) come after it and stay.
    pos = after(RELAY, [0, 4, 0, 7, 0, 1, 1, 1, 1, 9], 4)
    assert pos.board == (1, 0, 1, 1, 8, 0, 0, 2, 2, 9)
    assert (pos.to_move, pos.ended) == (NORTH, None)


def test_the_same_move_for_north() -> None:
    pos = after(RELAY, [1, 1, 1, 1, 9, 0, 4, 0, 7, 0], 4, NORTH)
    assert pos.board == (0, 0, 2, 2, 9, 1, 0, 1, 1, 8)
    assert pos.to_move == SOUTH


def test_a_relay_needs_seeds_sown_into_the_opponents_row_by_that_sowing() -> None:
    # pit 4 (6): store, North's 1-4, South's 1 (1 -> 2): relay from South's 1 (2): South's 2, South's 3
    # (1 -> 2). That pit was not empty either, but this second sowing stayed in South's row: the move ends.
    assert after(RELAY, [1, 0, 1, 6, 0, 1, 1, 1, 1, 12], 4).board == (0, 1, 2, 0, 1, 2, 2, 2, 2, 12)
    # one seed into an own non-empty pit, nothing sown into North's row: no relay
    assert after(RELAY, [1, 1, 0, 0, 9, 1, 1, 1, 1, 9], 1).board == (0, 2, 0, 0, 9, 1, 1, 1, 1, 9)


def test_chain_captures_on_back_along_the_row() -> None:
    # pit 4 (5): store, North's 1-4 become 2 each, the last in North's 4: it and North's 3 are captured.
    board = [1, 0, 0, 5, 2, 1, 1, 1, 1, 12]
    plain = after(RELAY, board, 4)
    assert plain.board == (1, 0, 0, 0, 7, 2, 2, 0, 0, 12) and plain.ended is None
    # with chain, North's 2 and 1 go too. North, to move, has no seeds: the game ends, South banks its 1.
    chained = after(CHAIN, board, 4)
    assert chained.board == (0, 0, 0, 0, 12, 0, 0, 0, 0, 12) and chained.ended == "normal"
    assert CHAIN.result(chained).winner is None  # 12-12


def test_a_capture_needs_2_or_3_in_the_last_pit() -> None:
    # the last seed makes North's 4 hold 4: nothing is captured, even though North's 3 holds 2
    assert after(RELAY, [0, 0, 0, 5, 6, 1, 1, 1, 3, 7], 4).board == (0, 0, 0, 0, 7, 2, 2, 2, 4, 7)
    # North's 4 holds 3, North's 3 holds 1 (not 2 or 3): only North's 4 is captured
    assert after(RELAY, [0, 0, 0, 5, 7, 1, 1, 0, 2, 8], 4).board == (0, 0, 0, 0, 11, 2, 2, 1, 0, 8)


def test_no_extra_turn_and_no_capture_from_the_own_row() -> None:
    # the last seed in South's store: in Kalah South would move again; here North moves
    assert after(RELAY, [0, 0, 0, 1, 10, 1, 1, 1, 1, 9], 4).to_move == NORTH
    # the last seed in South's empty pit 2, facing 2 seeds: Kalah would capture; here it just stays
    assert after(RELAY, [1, 0, 0, 0, 9, 0, 2, 2, 2, 8], 1).board == (0, 1, 0, 0, 9, 0, 2, 2, 2, 8)


def test_the_game_ends_at_more_than_half_of_the_seeds() -> None:
    # South's store reaches 13 of 24: over at once, and the seeds in North's row are not banked
    pos = after(RELAY, [0, 0, 0, 1, 12, 1, 1, 1, 1, 7], 4)
    assert pos.board == (0, 0, 0, 0, 13, 1, 1, 1, 1, 7) and pos.ended == "normal"
    assert RELAY.result(pos).winner == SOUTH
    # exactly half is not more than half: play goes on
    assert after(RELAY, [0, 0, 0, 1, 11, 1, 1, 1, 1, 8], 4).ended is None


def test_the_game_ends_when_the_player_to_move_has_no_seeds() -> None:
    # South sows its last seeds, one into North's row; North can move, so the game goes on
    assert after(RELAY, [0, 0, 0, 2, 11, 0, 0, 0, 0, 11], 4).ended is None
    # South's last seed lands in its store, North is to move with an empty row: over, South banks its row
    pos = after(RELAY, [2, 0, 0, 1, 10, 0, 0, 0, 0, 11], 4)
    assert pos.board == (0, 0, 0, 0, 13, 0, 0, 0, 0, 11) and pos.ended == "normal"


def random_board(rng: random.Random, n: int, counts: list[int], options: str = "") -> tuple[Rules, list[int]]:
    """A board of `n` pits a side with pit counts from `counts`, and relay rules whose seed total it holds
    (the end at more than half counts the rules' seeds): what the pits lack goes to the stores."""
    board = [rng.choice(counts) for _ in range(2 * n + 2)]
    board[rng.randrange(n)] += 1
    board[n] = board[2 * n + 1] = 0
    seeds = -(-sum(board) // (2 * n))
    rest = 2 * n * seeds - sum(board)
    board[n] = rng.randint(0, rest)
    board[2 * n + 1] = rest - board[n]
    return parse_rules(f"relay,pits={n},seeds={seeds}{options}"), board


def reference_relay(board: list[int], pit: int) -> tuple[list[int], int, int]:
    """South's relay sowing written out with no guard against repetition (captures and the end left out):
    the board, the hole of the last seed and how many relays it made. It ends because every relay has put
    a seed into the mover's own store, which no sowing takes out: a series is shorter than the seeds."""
    board, n = list(board), len(board) // 2 - 1
    i, relays = pit - 1, 0
    while True:
        seeds, board[i], reached, banked = board[i], 0, False, board[n]
        while seeds:
            i = (i + 1) % len(board)
            if i != 2 * n + 1:
                board[i] += 1
                seeds -= 1
                reached = reached or n < i < 2 * n + 1
        if not (i < n and board[i] > 1 and reached):
            return board, i, relays
        relays += 1
        assert board[n] > banked, "a relay without a seed for the mover's store"


def test_every_relay_series_ends_and_the_engine_needs_no_guard() -> None:
    """The engine stops a series that comes back to a board it has been at; that cannot happen (the own
    store grows with every relay), so its moves match a sowing without that guard, long series included."""
    rng = random.Random(5)
    longest = compared = 0
    for _ in range(3000):
        n = rng.randint(1, 6)
        rules, board = random_board(rng, n, [0, 1, 1, 2, 3, 5, 2 * n + 1, 4 * n + 3])
        pit = next(p for p in range(1, n + 1) if board[p - 1])
        sown, last, relays = reference_relay(board, pit)
        longest = max(longest, relays)
        pos = rules.play(Position(tuple(board), SOUTH, 2), pit)
        if pos.ended is None and not (n < last < 2 * n + 1 and sown[last] in (2, 3)):  # no end, no capture
            assert pos.board == tuple(sown), (board, sown, pos)
            compared += 1
    assert longest >= 3 and compared >= 1000


def load_greedy():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("greedy_bot", ROOT / "bots" / "greedy.py")
    greedy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(greedy)
    return greedy


@pytest.mark.parametrize("options", ["", ",chain"])
def test_greedy_simulates_relay_like_the_rules_engine(options: str) -> None:
    """greedy.py writes the relay rules out itself (it is a template without arena): check it against the
    engine on random boards, from South's side (the MOVE view is South's board)."""
    greedy = load_greedy()
    rng = random.Random(options)
    for _ in range(2000):
        n = rng.randint(1, 6)
        rules, board = random_board(rng, n, [0, 0, 1, 1, 2, 3, 4, 2 * n + 1, 4 * n], options)
        pos = Position(tuple(board), SOUTH, 2)
        for pit in rules.legal_moves(pos):
            played = rules.play(pos, pit)
            assert greedy.sow(board, pit, greedy.Rules(rules.spec)) == (
                list(played.board),
                False,
                played.ended is not None,
            ), (rules.spec, board, pit)


def test_greedy_knows_the_first_move_earns_no_extra_turn_under_no_first_extra() -> None:
    greedy = load_greedy()
    for spec in ("kalah,pits=4,seeds=3,no-first-extra", "mankalah"):
        rules = parse_rules(spec)
        start = rules.initial()
        for pit in rules.legal_moves(start):
            played = rules.play(start, pit)
            simulated = greedy.sow(list(start.board), pit, greedy.Rules(spec), first_move=True)
            assert simulated == (list(played.board), played.to_move == SOUTH, False), (spec, pit)
    # later moves earn it as usual: Kalah(4,3) pit 2 ends in the store
    rules = greedy.Rules("kalah,pits=4,seeds=3,no-first-extra")
    assert greedy.sow([3, 3, 3, 3, 0, 3, 3, 3, 3, 0], 2, rules)[1] is True


def test_greedy_takes_the_relay_capture() -> None:
    greedy = load_greedy()
    # pit 4 banks 2 and captures North's 2 and 1 (3 each) after a relay; pit 2 banks 1 and captures 2
    board = [0, 4, 0, 7, 0, 1, 1, 1, 1, 9]
    assert greedy.best_move(board, greedy.Rules("relay,pits=4,seeds=3")) == (8, 4)


BUNDLED = ("random", "greedy", "alphabeta", "solver")


@pytest.mark.slow
def test_the_bundled_bots_play_relay_through_the_referee() -> None:
    rules = parse_rules("relay,pits=4,seeds=3")
    players = {name: Player(load_bot(ROOT / "bots" / f"{name}.py")) for name in BUNDLED}
    limits = Limits(TimeControl(move_ms=200))
    try:
        for south in BUNDLED:
            for north in BUNDLED:
                if south == north:
                    continue
                record = play_game(rules, players[south], players[north], limits)
                assert record.faulty is None, (record.reason, record.detail, record.stderr)
                assert record.reason == "normal" and record.rules == "relay,pits=4,seeds=3"
                assert_ends_as_recorded(record)
    finally:
        for player in players.values():
            player.close()


@pytest.mark.slow
def test_arena_run_plays_a_relay_tournament(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    for name in BUNDLED:
        shutil.copy(ROOT / "bots" / f"{name}.py", bots / f"{name}.py")
    # The search bots plan a quarter of the move time: 500 ms leaves a loaded machine's margin (at 200 ms
    # a search answered after 328 ms beside a busy suite).
    run = subprocess.run(
        [sys.executable, "-m", "arena", "run", "--rules", "relay,pits=4,seeds=3", "--rounds", "1"]
        + ["--move-time", "500", "--bots", str(bots), "--out", str(tmp_path / "reports"), "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "index.html" in run.stdout
    export = subprocess.run(
        [sys.executable, "-m", "arena", "export", "--out", str(tmp_path / "reports")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    records = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(records) == 12  # 4 bots, every ordered pair once
    assert all(r["rules"] == "relay,pits=4,seeds=3" and r["faulty"] is None for r in records), [
        (r["south"], r["north"], r["reason"], r["detail"]) for r in records if r["faulty"]
    ]
