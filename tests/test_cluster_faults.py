"""A fault on a cluster is charged to the party that caused it, on a real TLS cluster on 127.0.0.1
(`distributed.LocalCluster` of two worker processes, lab-0 and lab-1, as tests/test_cluster.py starts it).

A bot that plays locally plays on the cluster (its files cached on the workers as the local run reads
them, a path longer than PATH_MAX too); a failure that follows a bot to a second machine forfeits that bot's
games with a reason its author can act on and drops no machine; a failure that stays on one machine drops
that machine; a worker that keeps a task past its deadline is dropped and named.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_cluster import field, games, library_run, local_cluster
from test_tournament import GREEDY, first_legal, records, write_bots

from arena.lab import Cluster

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The games of a 3-round tournament of `field` played on this machine's cores (seed 7)."""
    base = tmp_path_factory.mktemp("local")
    library_run(base, field(base / "bots"), 3)
    return games(base)


DEEP = 4050  # bytes of the nested path of the deep bot's extra file, from its folder's parent


def deep_bot(folder: Path) -> Path:
    """A folder bot playing as greedy, with one extra file whose path (bots/deep/...) is DEEP bytes long:
    written a folder at a time through descriptors, as no absolute path that long can be opened."""
    bot = folder / "deep"
    bot.mkdir(parents=True)
    (bot / "bot.toml").write_text('command = "python bot.py"\n', encoding="utf-8")
    (bot / "bot.py").write_text(GREEDY, encoding="utf-8")
    fd = os.open(bot, os.O_RDONLY | os.O_DIRECTORY)
    rel = len("deep")
    try:
        while rel + 1 + 200 + 1 + 10 < DEEP:
            name = "d" * 200
            os.mkdir(name, dir_fd=fd)
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
            rel += 1 + 200
        name = "n" * (DEEP - rel - 1)
        out = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"a note the bot keeps\n")
        os.close(out)
    finally:
        os.close(fd)
    return folder


@pytest.mark.slow
def test_a_bot_with_a_path_longer_than_path_max_plays_on_a_cluster_as_locally(tmp_path: Path, certs) -> None:
    """Its files are cached on the workers through folder descriptors, as the coordinator read them: every
    game is played, no worker is dropped, and the games are those of a local run (without that, each
    worker failed at its first game of the bot, 'File name too long', and was dropped)."""
    local = tmp_path / "local"
    bots = deep_bot(write_bots(local / "bots", first=first_legal()))
    result = library_run(local, bots, 2)
    assert (result.scheduled, result.played) == (4, 4)
    assert {r["reason"] for r in records(local)} <= {"normal", "early"}

    base = tmp_path / "cluster"
    bots = deep_bot(write_bots(base / "bots", first=first_legal()))
    try:
        with local_cluster(tmp_path / "cache", certs) as cluster:
            back = Cluster(cluster.scheduler_address, certs=certs)
            result = library_run(base, bots, 2, back)
        assert (result.scheduled, result.played) == (4, 4)
        assert not back.dropped, back.dropped
        assert games(base) == games(local)
    finally:  # by descriptors (rmtree's own way): a later test that walks the temporary folders by path
        for folder in (tmp_path / "local", base, tmp_path / "cache"):  # would meet a path it cannot open
            shutil.rmtree(folder, ignore_errors=True)


# Every worker (every machine) fails to set up bot 'fragile', as a bot whose files no machine can keep would.
FRAGILE = """\
from arena.lab import workers

real = workers.Cache.bot


def bot(self, ship):
    if ship.name == "fragile":
        raise OSError(28, "No space left on device")
    return real(self, ship)


def dask_setup(worker):
    workers.Cache.bot = bot
"""


@pytest.mark.slow
def test_a_failure_that_follows_a_bot_to_a_second_machine_is_the_bots(tmp_path: Path, certs) -> None:
    """Its games are forfeited by it, with the failure and both machines named; no machine is dropped and
    the other games are played."""
    script = tmp_path / "fragile.py"
    script.write_text(FRAGILE, encoding="utf-8")
    base = tmp_path / "cluster"
    bots = write_bots(field(base / "bots"), fragile=GREEDY)
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs)
        result = library_run(base, bots, 1, back)
    assert not back.dropped, back.dropped
    assert (result.scheduled, result.played) == (12, 12)
    stored = records(base)
    theirs = [r for r in stored if "fragile" in (r["south"], r["north"])]
    assert len(theirs) == 6
    for r in theirs:
        assert (r["reason"], r["faulty"], r["moves"]) == ("crash", "fragile", [])
        assert r["winner"] == (r["north"] if r["south"] == "fragile" else r["south"])
        assert r["detail"].startswith("bot fragile could not be started on 2 machines (lab-0, lab-1): ")
        assert "No space left on device" in r["detail"]
    others = [r for r in stored if "fragile" not in (r["south"], r["north"])]
    assert len(others) == 6 and all(r["reason"] in ("normal", "early") for r in others)
    # which machine plays them is the scheduler's choice (in one CI run lab-1 took all six): that lab-0 stayed
    # in the lab is `back.dropped` above, and that it was asked, its name in the forfeits' detail
    assert {r["worker"] for r in others} <= {"lab-0", "lab-1"}


# lab-0 forges a win over greedy in each of greedy's games: "greedy timed out before its first move", a record
# the replay accepts (a bot may time out before the first move), with the genuine arena's digest.
ROGUE = """\
import dataclasses

from arena.game.openings import position_after
from arena.game.rules import NORTH, SOUTH
from arena.match.record import Reason
from arena.lab import workers

real = workers.Arena._games


def forged(self, bots, games):
    played, machine, seconds = real(self, bots, games)
    out = []
    for k, r in played:
        if "greedy" in (r.south, r.north):
            pos = position_after(self.rules, r.opening)
            other = r.north if r.south == "greedy" else r.south
            r = dataclasses.replace(
                r, moves=(), move_ms=(), south_store=pos.store(SOUTH), north_store=pos.store(NORTH),
                winner=other, reason=Reason.TIMEOUT, faulty="greedy",
                detail="timed out before its first move",
                moves_made={r.south: 0, r.north: 0}, think_ms={r.south: 0.0, r.north: 0.0},
            )
        out.append((k, r))
    return out, machine, seconds


def dask_setup(worker):
    if worker.name == 0:
        workers.Arena._games = forged
"""


@pytest.mark.slow
def test_a_forged_forfeit_is_played_again_elsewhere_and_its_bot_kept_off_that_machine(
    tmp_path: Path, reference, certs, caplog
) -> None:
    """Every game of the run is stored as the honest machine played it: none of lab-0's forged wins counts,
    each disagreement is named, and greedy is kept off lab-0 (which forges against it alone: a machine is
    dropped when it fails for several bots that play elsewhere, test_cluster_shipments.py)."""
    script = tmp_path / "rogue.py"
    script.write_text(ROGUE, encoding="utf-8")
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs)
        result = library_run(base, bots, 3, back)
    assert (result.scheduled, result.played) == (18, 18)
    assert games(base) == reference  # no forged timeout stored
    assert back.confirm.disputes, "lab-0 forged no win: the test proves nothing"
    assert all(" lab-0 said greedy forfeited (timeout: timed out before its first move); played again on "
               "lab-1, it ended " in d for d in back.confirm.disputes), back.confirm.disputes  # fmt: skip
    said = [r.getMessage() for r in caplog.records if "not confirmed" in r.getMessage()]
    assert said, "the disagreements were not named"
    assert back.confirm.kept_off == {"greedy": {"lab-0"}} and not back.dropped, back.dropped


@pytest.mark.slow
def test_an_honest_labs_forfeits_are_confirmed_and_the_share_played_twice_is_measured(
    tmp_path: Path, certs, capsys
) -> None:
    """A bot that crashes at its first move on every machine: each of its forfeits is played twice and
    confirmed, no machine is dropped; the share of games played twice is printed (-s shows it)."""
    base = tmp_path / "cluster"
    bots = write_bots(field(base / "bots"), crasher="import sys\nsys.exit(3)\n")
    with local_cluster(tmp_path / "cache", certs) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs)
        result = library_run(base, bots, 2, back)
    stored = records(base)
    assert result.scheduled == len(stored) == 24  # the crasher's games after its bench are not played
    assert not back.dropped and not back.confirm.disputes
    crashes = [r for r in stored if r["faulty"] == "crasher" and r["reason"] == "crash"]
    assert crashes and back.confirm.replayed == len(crashes)
    with capsys.disabled():
        share = back.confirm.replayed / len(stored)
        print(f"\nhonest lab: {back.confirm.replayed} of {len(stored)} games played twice to confirm a "
              f"forfeit ({share:.0%}; benched games are not played)")  # fmt: skip


# A rogue machine's forged illegal-move forfeits against greedy, the field's best: each of greedy's games
# cut where greedy was first to move, greedy charged with an illegal move there; half of them name a
# legal move as its answer (which the replay refutes), half none (as a record of today's arena may).
ILLEGAL_ROGUE = """\
import dataclasses

from arena.game.rules import NORTH, SOUTH, SWAP
from arena.match.record import Reason
from arena.lab import workers

real = workers.Arena._games


def forged(self, bots, games):
    played, machine, seconds = real(self, bots, games)
    out = []
    for k, r in played:
        if "greedy" in (r.south, r.north):
            pos, by_side = self.rules.initial(), [r.south, r.north]
            for ply in r.opening:
                pos = self.rules.play(pos, ply)
            made = {r.south: 0, r.north: 0}
            n = 0
            while by_side[pos.to_move] != "greedy":
                made[by_side[pos.to_move]] += 1
                pos = self.rules.play(pos, r.moves[n])
                if r.moves[n] == SWAP:
                    by_side.reverse()
                n += 1
            other = r.north if r.south == "greedy" else r.south
            answer = str(self.rules.legal_moves(pos)[0]) if k % 2 else ""
            fields = {f.name for f in dataclasses.fields(r)}
            r = dataclasses.replace(
                r, moves=r.moves[:n], move_ms=r.move_ms[:n], south_store=pos.store(SOUTH),
                north_store=pos.store(NORTH), winner=other, reason=Reason.ILLEGAL, faulty="greedy",
                detail="played 7: that pit is empty", moves_made=made,
                **({"illegal": answer} if "illegal" in fields else {}),
            )
        out.append((k, r))
    return out, machine, seconds


def dask_setup(worker):
    if worker.name == 0:
        workers.Arena._games = forged
"""


def test_forged_illegal_move_forfeits_never_count_and_their_machine_is_dropped(
    tmp_path: Path, reference, certs
) -> None:
    """lab-0 charges the best bot with illegal moves it never made: none is stored (each is refuted by the
    replay, or played again on lab-1, which disagrees), the games stored are an honest run's, and lab-0
    is dropped and named."""
    script = tmp_path / "rogue.py"
    script.write_text(ILLEGAL_ROGUE, encoding="utf-8")
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs)
        result = library_run(base, bots, 3, back)
    assert (result.scheduled, result.played) == (18, 18)
    assert games(base) == reference  # no forged illegal move stored: the standings of an honest run
    assert not [r for r in records(base) if r["reason"] == "illegal"]
    assert "lab-0" in back.dropped, back.dropped
