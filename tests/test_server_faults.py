"""A game's fault line on a real `arena serve`: another student reads the reason a bot forfeited, never a
byte that bot wrote (a crash's last stderr line, a garbled answer's quote of its stdout); its author and the
teacher read everything. Two students whose bots pass their checks and then fault on the ladder."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.server_kit import Server, need_extra

need_extra()
pytest.importorskip("requests", reason="the tests' HTTP client is not installed: pip install requests")

from tests.test_server_e2e import make_class, until  # noqa: E402 (after the skips: it needs requests)

pytestmark = pytest.mark.slow

# Plays its first legal pit; from its process's 4th game on (the check plays 3 in one process, the ladder
# keeps a process for many), it faults at its first move with its secret.
BOT = """\
import sys
games = 0
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "NEWGAME":
        games += 1
    elif w and w[0] == "MOVE":
        if games >= 4:
            {fault}
        b = [int(x) for x in w[2:]]
        print(next(p for p in range(1, len(b) // 2) if b[p - 1]), flush=True)
    elif w and w[0] == "QUIT":
        break
"""
CRASH_SECRET, GARBLE_SECRET = "ALICE-STDERR-7Q4", "BOB-STDOUT-3Z9"
FAULTS = {
    "alice": ("crash", f'print("{CRASH_SECRET}", file=sys.stderr, flush=True); sys.exit(3)'),
    "bob": ("garbled", f'print("{GARBLE_SECRET}", flush=True); continue'),
}


def _faulted(root: Path) -> dict[str, int] | None:
    """The id of a ladder game each student's bot forfeited as meant, once both have one."""
    path = root / "ladder" / "arena.sqlite"
    if not path.exists():
        return None
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'games'").fetchone()[0]:
            return None  # the store is being made: its file comes before its tables
        rows = db.execute(
            "SELECT f.name, g.reason, max(g.id) FROM games g JOIN bots f ON f.id = g.faulty_id "
            "GROUP BY f.name, g.reason"
        ).fetchall()
    found = {name: int(game) for name, reason, game in rows if FAULTS.get(name, ("",))[0] == reason}
    return found if len(found) == len(FAULTS) else None


def test_a_fault_line_shows_the_bots_words_to_its_author_and_the_teacher_alone(server: Server) -> None:
    people = make_class(server, server.start(), list(FAULTS))
    for name, (_, fault) in FAULTS.items():
        people[name].upload(f"{name}.py", BOT.format(fault=fault).encode())
    games = until(
        "a crash of alice's and a garbled answer of bob's on the ladder",
        lambda: _faulted(server.class_dir),
        300,
    )

    def page(who: str, game: int) -> str:
        answer = people[who].http.get(f"{server.url}/games/{game}", timeout=30)
        assert answer.status_code == 200, answer.text[-2000:]
        return str(answer.text)

    crash, garble = games["alice"], games["bob"]
    assert CRASH_SECRET not in page("bob", crash)
    assert "alice forfeited: crash: exited with code 3" in page("bob", crash)
    assert GARBLE_SECRET not in page("alice", garble)
    assert "bob forfeited: garbled: answered what is not a move" in page("alice", garble)
    assert f"last stderr line: {CRASH_SECRET}" in page("alice", crash)
    assert f"its answer: &#x27;{GARBLE_SECRET}&#x27;" in page("bob", garble)
    for game, secret in ((crash, CRASH_SECRET), (garble, GARBLE_SECRET)):
        assert secret in page("teach", game)
