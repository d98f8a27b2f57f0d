"""Replays: the marks read off the engine's boards, the reproduce lines, the terminal drawing, `arena replay`,
and the live page's writer."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.game.rules import SWAP, Kalah, Move, Position, Rules, parse_rules
from arena.match.bots import Bot, Where
from arena.match.clock import TimeControl
from arena.match.record import GameRecord
from arena.report import terminal
from arena.report.live import LivePage
from arena.report.replay import marks, replay
from arena.store import queries
from arena.store.writer import Store
from arena.tournament.schedule import Slot
from arena.tournament.settings import Settings


def _oracle(rules: Kalah, pos: Position, move: int) -> tuple[bool, int]:
    """Extra turn and seeds captured, by sowing seed by seed the textbook way (no laps, no shortcuts)."""
    n, side = rules.pits, pos.to_move
    board = list(pos.board)
    store, skip = side * (n + 1) + n, (1 - side) * (n + 1) + n
    i = side * (n + 1) + move - 1
    seeds, board[i] = board[i], 0
    while seeds:
        i = (i + 1) % len(board)
        if i != skip:
            board[i] += 1
            seeds -= 1
    if i == store and not (rules.no_first_extra and pos.turn == 0):
        return True, 0
    if side * (n + 1) <= i < store and board[i] == 1 and (board[2 * n - i] or rules.empty_capture):
        return False, board[2 * n - i] + 1
    return False, 0


def random_plies(rules: Rules, seed: int, games: int) -> Iterator[tuple[Position, Move, Position]]:
    """Every ply of `games` games of random legal moves (the same games for a seed): before, move, after."""
    rng = random.Random(seed)
    for _ in range(games):
        pos = rules.initial()
        while not pos.ended:
            move = rng.choice(rules.legal_moves(pos))
            after = rules.play(pos, move)
            yield pos, move, after
            pos = after


@pytest.mark.parametrize("spec", ["kalah", "kalah,pits=3,seeds=2,pie", "kalah,pits=4,seeds=9,empty-capture",
                                  "kalah,seeds=1,end=mover-empty", "mankalah"])  # fmt: skip
def test_marks_agree_with_a_seed_by_seed_sowing(spec):
    rules = parse_rules(spec)
    assert isinstance(rules, Kalah)
    seen = {"extra": 0, "capture": 0, "swap": 0}
    for pos, move, after in random_plies(rules, seed=5, games=150):
        ply = marks(rules, pos, move, after)
        if move == SWAP:
            assert ply.swap and not ply.extra and not ply.captured
            seen["swap"] += 1
        else:
            assert isinstance(move, int)
            extra, captured = _oracle(rules, pos, move)
            assert ply.extra == (extra and after.ended is None), (pos, move)
            # a capture that also ends the game by emptying a row is told only when seeds were opposite
            if captured and (after.ended is None or captured > 1):
                assert ply.captured == captured, (pos, move, after)
                assert len(ply.capture_pits) == (2 if captured > 1 else 1)  # the holes emptied
            elif not captured:
                assert ply.captured == 0 and not ply.capture_pits, (pos, move, after)
            seen["extra"] += extra
            seen["capture"] += bool(captured)
    assert seen["extra"] and seen["capture"] and (seen["swap"] or not rules.pie)


def test_relay_sowing_is_marked():
    rules = parse_rules("relay,pits=4,seeds=3")
    relays = captures = 0
    for pos, move, after in random_plies(rules, seed=2, games=100):
        ply = marks(rules, pos, move, after)
        assert not ply.extra  # relay has no extra turns
        relays += ply.relay
        captures += bool(ply.captured)
    assert relays > 10 and captures > 10


def _record(**kw: object) -> GameRecord:
    fields: dict[str, object] = dict(
        rules="kalah,pits=3,seeds=2,pie", south="alice", north="bob", moves=(3, SWAP, 2, 1), south_store=0,
        north_store=0, winner="bob", reason="normal", faulty=None, detail="", move_ms=(1.0, 2.0, 3.0, 4.0),
    )  # fmt: skip
    fields.update(kw)
    return GameRecord(**fields)  # type: ignore[arg-type]


def test_the_reproduce_lines_are_the_referees_after_a_swap():
    # protocol.md's pie example: Alice 3, Bob SWAP, Alice (now north) 2, then Alice times out on her next
    record = _record(moves=(3, SWAP, 2), faulty="alice", reason="timeout", detail="no reply within 500 ms",
                     winner="bob", move_ms=(1.0, 2.0, 3.0))  # fmt: skip
    game = replay(record, TimeControl(move_ms=1000))
    assert game.fault is not None and game.owners(3) == ("bob", "alice")
    assert game.fault.lines == (
        "NEWGAME 3 2 south kalah,pits=3,seeds=2,pie",
        "MOVE 1000 2 2 2 0 2 2 2 0",
        "MOVE 1000 3 2 2 0 2 2 0 1",
        "MOVE 1000 3 0 3 1 2 2 0 1",  # her 2 ended in her store: her move again, unanswered
    )
    assert (
        game.fault.command.startswith("printf 'NEWGAME 3 2 south")
        and "\\nMOVE 1000 3 0 3 1" in game.fault.command
    )


def test_terminal_board_follows_the_swap():
    rules = parse_rules("kalah,pits=3,seeds=2,pie")
    shown: list[str] = []
    watch = terminal.Watch(rules, "alice", "bob", shown.append)
    watch.start()
    pos = rules.initial()
    for move in (3, SWAP):
        pos = rules.play(pos, move)
        watch(pos, move)
    assert "South: alice  <- to move" in shown[0]
    assert shown[1].startswith("1. south (alice) plays 3") and "North: bob  <- to move" in shown[1]
    assert shown[2].startswith("2. north (bob) plays SWAP") and "South: bob" in shown[2]
    assert "North: alice  <- to move" in shown[2]


def _store(folder: Path) -> Store:
    store = Store(folder / "arena.sqlite")
    store.fix_settings(Settings("kalah,pits=3,seeds=2,pie", TimeControl(250, 1000), 1))
    bots = [Bot(n, ("true",), folder, folder / f"{n}.py", f"{n}-v1") for n in ("alice", "bob")]
    store.add_game(Slot(1, "a", bots[0], bots[1]), _record(faulty="alice", reason="crash", detail="exited",
                                                        moves=(3, SWAP, 2), move_ms=(1.0, 2.0, 3.0),
                                                        stderr={"alice": "oops <b>\n"}))  # fmt: skip
    store.set_current(bots)
    return store


def test_arena_replay_prints_a_stored_game(tmp_path):
    _store(tmp_path / "cup").close()
    argv = [sys.executable, "-m", "arena", "replay", "1", "--out", str(tmp_path), "--name", "cup"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    text = run.stdout
    assert "2. north (bob) plays SWAP" in text and "3. north (alice) plays 2: extra turn" in text
    assert "alice forfeited (crash) after move 3: exited" in text and "    oops <b>" in text
    assert "printf 'NEWGAME 3 2 south kalah,pits=3,seeds=2,pie\\nMOVE 250 2 2 2 0 2 2 2 0\\n" in text
    missing = subprocess.run([sys.executable, "-m", "arena", "replay", "9", "--out", str(tmp_path), "--name",
                              "cup"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert missing.returncode != 0 and "has no game 9" in missing.stderr


def test_the_live_page_is_rewritten_now_and_then_and_says_how_far(tmp_path, monkeypatch):
    store = _store(tmp_path)
    clock = [100.0]
    monkeypatch.setattr("arena.report.live.time.monotonic", lambda: clock[0])
    seen: list[tuple[int, int]] = []
    opened: list[Path] = []
    live = LivePage(store, tmp_path / "page", every=3.0, then=lambda d, t, r: seen.append((d, t)),
                    opened=opened.append)  # fmt: skip
    live(0, 10, None)
    page = tmp_path / "page" / "index.html"
    html = page.read_text()
    assert 'id="live" data-done="0" data-total="10"' in html and opened == [page.absolute()]
    stamp = (tmp_path / "page" / "live.js").read_text()
    clock[0] += 1.0
    live(1, 10, None)  # too soon: not rewritten
    assert page.read_text() == html
    clock[0] += 3.0
    live(4, 10, None)
    html = page.read_text()
    assert 'data-done="4" data-total="10"' in html and "about 6 s left" in html  # 4 games in 4 s
    assert (tmp_path / "page" / "live.js").read_text() != stamp  # the open page reloads itself
    assert seen == [(0, 10), (1, 10), (4, 10)] and len(opened) == 1
    assert not list((tmp_path / "page").glob(".*.part"))
    store.close()


def test_an_adaptive_runs_live_page_says_what_is_open_not_the_batchs_count(tmp_path):
    """An adaptive run plays batch after batch: '1 of 1 games played' was the batch's count while the run
    went on. Its page says the games played and the pairs still open, with how sure each is and about how
    many games would settle them (the terminal's words), and its score column, a score against the
    opponents the run chose, is not one to compare."""
    from arena.stats.settle import Rule

    store = Store(tmp_path / "arena.sqlite")
    store.fix_settings(Settings("kalah,pits=3,seeds=2,pie", TimeControl(250, 1000), 1))
    alice, bob = (Bot(n, ("true",), tmp_path, tmp_path / f"{n}.py", f"{n}-v1") for n in ("alice", "bob"))
    for k, winner in enumerate(("alice", "bob", "alice"), start=1):  # a pair the games cannot order yet
        store.add_game(Slot(k, "a", alice, bob), _record(winner=winner))
    store.set_current([alice, bob])
    store.set_stopping(Rule().to_dict())
    LivePage(store, tmp_path / "page")(1, 1, None)
    html = (tmp_path / "page" / "index.html").read_text()
    assert "1 of 1 games played" not in html and "<progress" not in html
    assert "1 game played" in html and "still open, 1 pair: " in html and "sure of the order)" in html
    assert re.search(r"about [\d,]+ more games to settle it \(a rough estimate\)", html)
    assert "so not comparable between bots" in html and "their scores do not compare" in html
    store.set_stopping(None)  # a run of rounds: its count and time left, and a score to compare
    LivePage(store, tmp_path / "page")(1, 2, None)
    html = (tmp_path / "page" / "index.html").read_text()
    assert "1 of 2 games played" in html and "still open, 1 pair" not in html and "not comparable" not in html
    store.close()


OOPS = """\
import sys
for line in sys.stdin:
    if line.startswith("MOVE"):
        board = [int(x) for x in line.split()[2:]]
        print("thinking", file=sys.stderr, flush=True)
        pick = board[99]  # an IndexError on the first move
"""


def _oops_tournament(tmp_path: Path, kind: str) -> Path:
    """A played tournament of greedy and an oops bot that raises on its first move: a file bots/oops.py, or
    a folder bots/oops with bot.toml's `command = "python3 bot.py"` (as `arena new` makes it)."""
    import shutil

    bots = tmp_path / "bots"
    bots.mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "bots" / "greedy.py", bots)
    if kind == "file":
        (bots / "oops.py").write_text(OOPS)
    else:
        (bots / "oops").mkdir()
        (bots / "oops" / "bot.toml").write_text('command = "python3 bot.py"\n')
        (bots / "oops" / "bot.py").write_text(OOPS)
    argv = [*ARENA, "run", "--rounds", "1", "--rules", "kalah,pits=3,seeds=2", "--quiet", "--no-sandbox"]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return tmp_path


ARENA = [sys.executable, "-m", "arena"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "runs", "own"),
    [("file", "| python3 -P bots/oops.py", "oops.py"), ("folder", "| python3 bot.py)", "/oops/bot.py")],
)
def test_one_short_reproduce_command_everywhere_and_tracebacks_start_at_the_bot(tmp_path, kind, runs, own):
    import json
    import re

    _oops_tournament(tmp_path, kind)
    shown = subprocess.run([*ARENA, "replay", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    # the terminal's command: the bot's own path and command, as a student types it
    (command,) = [line.strip() for line in shown.stdout.splitlines() if "printf " in line]
    assert command.endswith(runs) and "runpy" not in command and "YOUR-BOT" not in command, command
    assert "bot.toml" not in command and (kind == "file" or command.startswith("(cd bots/oops && printf "))
    # the page's is the same command
    block = (tmp_path / "reports" / "default" / "games" / "b0.js").read_text().splitlines()[1]
    data = json.loads(block[block.index(",") + 1 : -2])
    assert data["1"]["x"]["cmd"] == command
    # `arena check` runs the bot the same way
    check = subprocess.run([*ARENA, "check", "oops"], cwd=tmp_path, capture_output=True, text=True)
    assert f"{runs}\n" in check.stdout + "\n", check.stdout
    # the stored stderr and the command's run: the traceback from the bot's file on, no launcher frames
    stderr = data["1"]["x"]["stderr"]
    again = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    for text in (stderr, again.stderr):
        assert "IndexError" in text and "runpy" not in text and '"<string>"' not in text, text
        frames = re.findall(r'File "([^"]+)"', text)
        assert frames and all(f.endswith(own) for f in frames), text
    assert again.returncode == 1


def test_an_error_before_the_bots_first_frame_shows_no_launcher_frames(tmp_path):
    from arena.match.bots import load_bot

    bad = tmp_path / "bad.py"
    bad.write_text("import sys\ndef (\n")
    launched = subprocess.run(load_bot(bad).argv, input="", capture_output=True, text=True, timeout=30)
    python = [sys.executable, "-P", str(bad)]  # as `python3 -P bots/bad.py`
    own = subprocess.run(python, input="", capture_output=True, text=True, timeout=30)
    assert launched.returncode == own.returncode == 1
    assert launched.stderr == own.stderr and f'File "{bad}", line 2' in own.stderr, launched.stderr
    for source in (b"x = 1\x00\n", None):  # null bytes (random bytes named bot.py), a file gone since
        bot = load_bot(bad)
        if source is None:
            bad.unlink()
        else:
            bad.write_bytes(source)
        launched = subprocess.run(bot.argv, input="", capture_output=True, text=True, timeout=30)
        assert launched.returncode == 1 and "Error: " in launched.stderr, launched.stderr
        assert "File " not in launched.stderr and "Traceback" not in launched.stderr, launched.stderr


def test_a_store_from_before_commands_were_kept_learns_them_from_the_bots_it_sees(tmp_path):
    store = _store(tmp_path)
    store.db.execute("ALTER TABLE bots DROP COLUMN command")  # as a store of an older arena
    store.close()
    store = Store(tmp_path / "arena.sqlite")
    assert queries.bot_places(store)[1] == Where(tmp_path / "alice.py", None)
    store.bot_id(Bot("alice", ("./run", "fast"), tmp_path, tmp_path / "alice", "alice-v1"))
    assert queries.bot_places(store)[1] == Where(tmp_path / "alice.py", ("./run", "fast"))
    store.close()


def test_the_terminal_numbers_moves_as_the_page_and_the_game_list_do():
    # the bots' moves count 1, 2, 3 ... as the game list's "moves" column; an opening's plies apart
    assert [terminal.number(k, 2) for k in range(5)] == ["opening 1", "opening 2", "1", "2", "3"]
    assert [terminal.number(k, 0) for k in range(3)] == ["1", "2", "3"]
