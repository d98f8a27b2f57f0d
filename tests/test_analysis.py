"""Where a game was lost (arena/game/analysis.py, arena/store/analyses.py, `arena analyse`), checked against
an independent brute force: plain minimax over every line with a memo of whole positions, no pruning, no
iterative deepening, no estimate, sharing nothing with the solver but the rules engine.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.game.analysis import Analysis, Budget, Mark, analyse, mark, positions
from arena.game.rules import SWAP, Move, Position, Rules, parse_rules
from arena.game.solver import Solver
from arena.match.record import GameRecord
from arena.report.analysed import mover
from arena.store.analyses import ANALYSES_FILE, Analyses, game_key, kept_or_analysed

ROOT = Path(__file__).resolve().parent.parent
ARENA = [sys.executable, "-m", "arena"]
ROOMY = Budget(position=60.0, game=600.0)  # every position of these small boards finishes long before


class BruteForce:
    """Every position's final margin for the player to move under best play by both, by walking every line
    to the end. Memoised by the whole position, stores included (the turn only as far as the rules look at
    it: the first turn, the pie rule's reply, later), so it holds for every rule set."""

    def __init__(self, rules: Rules, stores: bool = True) -> None:
        self.rules = rules
        self.memo: dict[object, int] = {}
        self.stores = stores  # False: plain Kalah, whose play never looks at the stores (a smaller memo)

    def value(self, pos: Position) -> int:
        if pos.ended is not None:
            return pos.store(pos.to_move) - pos.store(1 - pos.to_move)
        lead = pos.store(pos.to_move) - pos.store(1 - pos.to_move)
        n = pos.pits
        board = pos.board if self.stores else pos.board[:n] + pos.board[n + 1 : 2 * n + 1]
        key = (board, pos.to_move, min(pos.turn, 2), pos.can_swap)
        rest = self.memo.get(key)
        if rest is None:
            rest = max(self.move_value(pos, move) for move in self.rules.legal_moves(pos)) - lead
            self.memo[key] = rest
        return rest + lead

    def move_value(self, pos: Position, move: Move) -> int:
        """The margin for the player to move at `pos` when they play `move`, then both play best."""
        child = self.rules.play(pos, move)
        value = self.value(child)
        return value if child.to_move == pos.to_move and move != SWAP else -value


def random_game(rules: Rules, rng: random.Random, greedy: float = 0.5) -> list[Move]:
    """A game of moves chosen at random, or (with chance `greedy`) the one that banks most at once: the
    mix that gives best moves, small slips and thrown games."""
    pos, plies = rules.initial(), []
    while pos.ended is None:
        moves = rules.legal_moves(pos)
        if rng.random() < greedy:
            side = pos.to_move
            move = max(moves, key=lambda m: (rules.play(pos, m).store(side), rng.random()))
        else:
            move = rng.choice(moves)
        plies.append(move)
        pos = rules.play(pos, move)
    return plies


def expected_mark(before: int, after: int) -> Mark:
    if after == before:
        return Mark.BEST
    if before > 0 >= after:
        return Mark.WIN_TO_LOSS if after < 0 else Mark.WIN_TO_DRAW
    if before == 0 > after:
        return Mark.DRAW_TO_LOSS
    return Mark.SEEDS


def check_exact(
    rules: Rules,
    brute: BruteForce,
    plies: list[Move],
    analysis: Analysis,
    checked: Callable[[Position], bool],
) -> int:
    """Every position `checked` picks: its value, and the marks of the moves from it, as the brute force
    has them. Returns how many positions were checked."""
    game = positions(rules, plies)
    count = 0
    for k, pos in enumerate(game):
        if not checked(pos):
            continue
        value = analysis.values[k]
        assert value.exact and value.seeds == brute.value(pos), (k, pos, value)
        count += 1
        if k == len(plies):
            continue
        m = analysis.moves[k]
        assert m.exact and m.side == pos.to_move and m.move == plies[k]
        assert m.before == brute.value(pos) and m.after == brute.move_value(pos, plies[k]), (k, m)
        assert m.best_move is not None and brute.move_value(pos, m.best_move) == m.before, "best reaches it"
        assert m.mark is expected_mark(int(m.before), int(m.after)), (k, m)
        assert m.cost == m.before - m.after
    return count


SMALL = [
    "kalah,pits=3,seeds=3",
    "kalah,pits=3,seeds=3,pie",
    "kalah,pits=3,seeds=3,early",
    "kalah,pits=3,seeds=3,empty-capture,end=mover-empty",
    "kalah,pits=3,seeds=3,pie,no-first-extra",
    "relay,pits=3,seeds=3",
    "relay,pits=3,seeds=3,pie,chain",
]


@pytest.mark.parametrize("spec", SMALL)
def test_every_position_of_random_games_on_kalah_3_3_is_the_brute_forces(spec: str) -> None:
    """Kalah(3,3) under every option, relay too: every value exact and right, every mark the one the
    exact values give; across the games every kind of mark turns up."""
    rules = parse_rules(spec)
    brute = BruteForce(rules)
    rng = random.Random(spec)
    seen: set[Mark] = set()
    positions_checked = 0
    for _ in range(25):
        plies = random_game(rules, rng)
        analysis = analyse(rules, plies, 0, ROOMY)
        assert analysis.exact_positions() == len(plies) + 1
        positions_checked += check_exact(rules, brute, plies, analysis, lambda pos: True)
        seen |= {m.mark for m in analysis.moves}
    assert positions_checked >= 200
    assert {Mark.BEST, Mark.SEEDS} <= seen and seen & {Mark.WIN_TO_LOSS, Mark.WIN_TO_DRAW, Mark.DRAW_TO_LOSS}


def in_play(pos: Position) -> int:
    return sum(pos.board) - pos.store(0) - pos.store(1)


def test_every_late_position_of_random_games_on_kalah_4_3_is_the_brute_forces() -> None:
    """Kalah(4,3): one solver for all the games, as `arena analyse` of a tournament keeps none but shares the
    table within a game; every position with at most 14 seeds left in play checked (the brute force of
    the whole tree takes minutes), and the start is the table's value."""
    rules = parse_rules("kalah,pits=4,seeds=3")
    brute = BruteForce(rules, stores=False)
    rng = random.Random(43)
    checked = 0
    for _ in range(12):
        plies = random_game(rules, rng)
        analysis = analyse(rules, plies, 0, ROOMY)
        assert analysis.values[0].exact and analysis.values[0].seeds == 6
        checked += check_exact(rules, brute, plies, analysis, lambda pos: in_play(pos) <= 14)
    assert checked >= 80


@pytest.mark.slow  # the whole tree's brute force: about 15 s of one core
def test_every_position_of_kalah_4_3_is_the_brute_forces() -> None:
    """Kalah(4,3) whole: the brute force walks every line from the start (1.5 million positions by their
    pits), then the analysis is held to it at every position of random games, from the start to the end
    (every value exact and right, every mark), and the solver at a sample of all the positions the game can
    reach, each with stores some line could have left (plain Kalah's play never looks at them)."""
    rules = parse_rules("kalah,pits=4,seeds=3")
    brute = BruteForce(rules, stores=False)
    assert brute.value(rules.initial()) == 6, "the table's value"
    reachable = list(brute.memo)
    assert len(reachable) > 1_000_000
    rng = random.Random(4343)
    solver = Solver(rules)
    checked = 0
    for _ in range(10):
        plies = random_game(rules, rng)
        analysis = analyse(rules, plies, 0, ROOMY, solver=solver)
        assert analysis.exact_positions() == len(plies) + 1
        checked += check_exact(rules, brute, plies, analysis, lambda pos: True)
    assert checked >= 150
    for pits, to_move, turn, can_swap in rng.sample(reachable, 2000):
        banked = rules.total_seeds - sum(pits)
        south = rng.randint(0, banked)
        pos = Position(pits[:4] + (south,) + pits[4:] + (banked - south,), to_move, turn, None, can_swap)
        found = solver.search(pos)
        assert found.exact and found.value == brute.value(pos), (pos, found)


# The solver's table (tests/test_solver.py): the starts' perfect-play values, first player's margin.
TABLE = [
    ("kalah,pits=3,seeds=2", 4),
    ("kalah,pits=3,seeds=2,pie", 0),
    ("kalah,pits=2,seeds=5,pie", -2),
    ("kalah,pits=3,seeds=3", 2),
    ("kalah,pits=4,seeds=2", 6),
    ("kalah,pits=3,seeds=3,pie", -2),
    ("kalah,pits=4,seeds=3", 6),
]


@pytest.mark.parametrize(("spec", "value"), TABLE)
def test_the_start_of_an_analysed_game_has_the_tables_value(spec: str, value: int) -> None:
    rules = parse_rules(spec)
    analysis = analyse(rules, random_game(rules, random.Random(spec)), 0, ROOMY)
    start = analysis.values[0]
    assert (start.exact, start.seeds) == (True, value)
    first = analysis.moves[0]
    assert first.before == value and (first.mark is Mark.BEST) == (first.after == value)


@pytest.mark.parametrize("spec", ["kalah,pits=3,seeds=3", "kalah,pits=3,seeds=3,pie", "relay,pits=3,seeds=3"])
def test_an_estimate_is_never_labelled_exact(spec: str) -> None:
    """Searches cut off at 2 moves deep: the early positions stay estimates (with their depth, said in
    words), and every value called exact is the brute force's."""
    rules = parse_rules(spec)
    brute = BruteForce(rules)
    rng = random.Random(spec)
    estimates = exact = 0
    for _ in range(15):
        plies = random_game(rules, rng)
        analysis = analyse(rules, plies, 0, Budget(60.0, 600.0, depth=2))
        game = positions(rules, plies)
        for pos, value in zip(game, analysis.values, strict=True):
            if value.exact:
                assert value.seeds == brute.value(pos), (pos, value)
                exact += 1
            else:
                assert 1 <= value.depth <= 2 and "estimate" in value.words() and "exact" not in value.words()
                estimates += 1
        for m in analysis.moves:
            assert m.exact == (analysis.values[m.ply - 1].exact and analysis.values[m.ply].exact)
            if not m.exact:
                assert m.depth >= 1 and ("estimate" in m.words() or "as far as the search sees" in m.words())
        again = Analysis.from_dict(json.loads(json.dumps(analysis.to_dict())))
        assert again.to_dict() == analysis.to_dict() and again.moves == analysis.moves
        assert [(v.seeds, v.exact, v.depth) for v in again.values] == [
            (v.seeds, v.exact, v.depth) for v in analysis.values
        ], "kept and read back, an estimate stays one"
    assert estimates >= 30 and exact >= 30


def test_a_big_board_out_of_budget_is_estimated_and_kept_within_it() -> None:
    """Kalah(6,6): the opening cannot be solved in a few hundredths of a second; the game's budget holds
    (give or take the least a position gets) and the early values say they are estimates."""
    rules = parse_rules("kalah")
    plies = random_game(rules, random.Random(6))
    budget = Budget(position=0.05, game=1.0)
    analysis = analyse(rules, plies, 0, budget)
    assert not analysis.values[0].exact and analysis.values[0].depth >= 1
    assert analysis.values[-1].exact  # the end is counted, not searched
    assert analysis.seconds < budget.game + 0.1 * len(plies)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (4, 4, Mark.BEST),
        (4, 1, Mark.SEEDS),
        (-1, -5, Mark.SEEDS),
        (4, 0, Mark.WIN_TO_DRAW),
        (4, -2, Mark.WIN_TO_LOSS),
        (0, -2, Mark.DRAW_TO_LOSS),
        (2.5, -0.25, Mark.WIN_TO_LOSS),
    ],
)
def test_marks(before: float, after: float, expected: Mark) -> None:
    assert mark(before, after, best_played=False) is expected
    assert mark(before, after, best_played=True) is Mark.BEST


def test_the_turning_point_is_the_last_move_that_changed_the_result() -> None:
    rules = parse_rules("kalah,pits=3,seeds=3")
    rng = random.Random(7)
    named = 0
    for _ in range(30):
        plies = random_game(rules, rng, greedy=0.3)
        analysis = analyse(rules, plies, 2, ROOMY)
        turn = analysis.turning_point()
        changed = [m for m in analysis.moves[2:] if m.mark.changes_result]
        if changed:
            assert turn == changed[-1]
            words = analysis.turning_words()
            was, now = {Mark.WIN_TO_LOSS: ("won", "lost"), Mark.WIN_TO_DRAW: ("won", "drawn"),
                        Mark.DRAW_TO_LOSS: ("drawn", "lost")}[turn.mark]  # fmt: skip
            side = ("south", "north")[turn.side]
            assert words == (
                f"turning point: move {turn.ply - 2}, {side}: {round(turn.cost)} "
                f"seed{'s' * (turn.cost != 1)} lost, the game was {was} before it and {now} after"
            )
            named += 1
        elif turn is not None:
            assert turn.cost == max(m.cost for m in analysis.moves[2:]) > 0
            assert analysis.turning_words().startswith("no move changed the result; the costliest was")
        assert turn is None or not turn.opening, "the opening is not the bots' doing"
    assert named >= 10


def test_moves_after_a_swap_are_credited_to_the_bot_that_made_them() -> None:
    record = GameRecord(
        "kalah,pits=3,seeds=3,pie", "a", "b", (1, SWAP, 2, 3), 0, 0, None, "normal", None, "", ()
    )  # type: ignore[arg-type]
    assert [mover(record, ply, side) for ply, side in ((1, 0), (2, 1), (3, 1), (4, 0))] == [
        "a",
        "b",
        "a",
        "b",
    ]


def _record(rules: Rules, plies: list[Move]) -> GameRecord:
    return GameRecord(rules.spec, "a", "b", tuple(plies), 0, 0, None, "normal", None, "", ())  # type: ignore[arg-type]


def test_a_game_is_analysed_once_and_found_by_what_was_played(tmp_path: Path) -> None:
    rules = parse_rules("kalah,pits=3,seeds=3")
    rng = random.Random(1)
    one, other = _record(rules, random_game(rules, rng)), _record(rules, random_game(rules, rng))
    first, kept = kept_or_analysed(tmp_path, one, 5, ROOMY)
    assert not kept and (tmp_path / ANALYSES_FILE).is_file()
    again, kept = kept_or_analysed(tmp_path, one, 5, ROOMY)
    assert kept and again == first
    fresh, kept = kept_or_analysed(tmp_path, one, 5, ROOMY, again=True)
    assert not kept and [v.seeds for v in fresh.values] == [v.seeds for v in first.values]
    assert not kept_or_analysed(tmp_path, other, 6, ROOMY)[1], "another game is not the first's analysis"
    with Analyses(tmp_path) as analyses:
        found = analyses.of_games([(5, game_key(rules.spec, one.plies)), (7, game_key(rules.spec, (1,)))])
    assert list(found) == [5] and found[5] == fresh, "the later analysis replaced the first"
    with Analyses(tmp_path) as analyses:  # one kept by another version, in another form: analysed anew
        analyses.db.execute("UPDATE analyses SET analysis = '{\"values\": 3}' WHERE game = 5")
    again, kept = kept_or_analysed(tmp_path, one, 5, ROOMY)
    assert not kept and again.to_dict()["values"][0][:2] == fresh.to_dict()["values"][0][:2]


# `arena analyse`, as a student runs it


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARENA, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_arena_analyse_a_replay_file_then_a_stored_game(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    for bot in ("greedy.py", "random.py"):
        shutil.copy(ROOT / "bots" / bot, bots)
    played = arena("play", "greedy", "random", "--rules", "kalah,pits=4,seeds=3", "--json", "--games", "2",
                   "--no-sandbox", cwd=tmp_path)  # fmt: skip
    assert played.returncode == 0, played.stderr
    (tmp_path / "games.jsonl").write_text(played.stdout)
    # budgets roomy enough for Kalah(4,3) to solve from the start on a loaded machine
    shown = arena(
        "analyse", "games.jsonl", "--time-per-position", "60", "--time-per-game", "600", cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("game: greedy (south) vs random (north)") == 1
    assert shown.stdout.count("turning point: ") + shown.stdout.count("no move ") == 2
    assert "positions exact" in shown.stdout and "analysing:" in shown.stderr
    again = arena("analyse", "games.jsonl", "--json", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == ""
    results = [json.loads(line) for line in again.stdout.splitlines()]
    assert len(results) == 2 and all(r["values"][0][1] for r in results), "Kalah(4,3) solves from the start"

    run = arena(
        "run", "--rounds", "1", "--rules", "kalah,pits=3,seeds=3", "--quiet", "--no-sandbox", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    stored = arena("analyse", "1", cwd=tmp_path)
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("game 1: ") and "(south) vs" in stored.stdout
    assert (tmp_path / "reports" / "default" / ANALYSES_FILE).is_file()
    kept = arena("analyse", "1", cwd=tmp_path)
    assert "analysed before" in kept.stdout and kept.stderr == ""


def test_arena_analyse_bad_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text("not json\n")
    for args in (["bad.jsonl"], ["nothere.jsonl"], ["9", "--name", "none"], ["1", "--depth", "0"]):
        run = arena("analyse", *args, cwd=tmp_path)
        assert run.returncode in (1, 2) and run.stderr.count("\n") == 1, (args, run.stderr)
        assert run.stderr.startswith("arena: error: "), run.stderr
