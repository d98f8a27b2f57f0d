"""A lab machine is who its certificate (or its connection) says, not what it claims: on a real `dask
scheduler` with arena's guard over TLS on 127.0.0.1, an honest machine with its own certificate (`arena
cluster-certs --machine honest`) and a rogue machine of two worker processes (`dask worker --nworkers 2`,
the class's shared certificate), each process naming itself another machine (ARENA_MACHINE).

The scheduler certifies both rogue processes as one machine (the IP they connect from): a forfeit one of
them forges is played again on the honest machine, never confirmed by its own second process, and the rogue
machine forges no more against that bot, both its processes; a bot that fails on both of its processes is
not charged with it (that is one machine), its games are played on the honest machine, and it is kept off
the rogue machine.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cluster import field, library_run
from test_cluster_faults import ROGUE
from test_cluster_lab import free_port, process, scheduler_args, wait_workers, worker_args
from test_tournament import GREEDY, RULES, db_file, records, write_bots

from arena.api import Tournament
from arena.lab import Cluster, guard, identity, membership, trust
from arena.lab.confirm import Confirm
from arena.lab.context import Context, Patience
from arena.match.clock import TimeControl
from arena.match.referee import Limits
from arena.tournament.backend import Conditions

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

# Both processes of the rogue machine forge greedy's forfeits (test_cluster_faults.ROGUE, on every worker),
# fail to set up bot 'fragile', and each names itself a machine of its own (ARENA_MACHINE) and claims to be
# the honest machine in its Dask `extra` (which the scheduler's guard replaces).
TWO_FACED = (
    ROGUE.split("def dask_setup")[0]
    + """real_bot = workers.Cache.bot


def bot(self, ship):
    if ship.name == "fragile":
        raise OSError(28, "No space left on device")
    return real_bot(self, ship)


def dask_setup(worker):
    import os

    os.environ["ARENA_MACHINE"] = f"rogue-{os.getpid()}"
    # and it tells the scheduler it is the honest machine, in the field where the guard says who it is
    worker.startup_information["EXTRA"] = lambda w: "certified honest"
    workers.Arena._games = forged
    workers.Cache.bot = bot
"""
).replace("EXTRA", trust.MACHINE_EXTRA)
ROGUE_MACHINE = "from 127.0.0.1"  # what the scheduler's guard certifies the shared certificate's workers as


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[tuple[str, Path]]:
    """The lab's scheduler address and certificates: a scheduler with arena's guard, the honest machine
    (its own certificate, one worker) and the rogue machine (the shared certificate, two worker processes)."""
    tmp_path = tmp_path_factory.mktemp("lab")
    mine = tmp_path / "certs"
    shutil.copytree(certs, mine)
    shutil.copytree(trust.authority(certs), trust.authority(mine))  # its key, apart
    trust.make_machine(mine, "honest")
    script = tmp_path / "two_faced.py"
    script.write_text(TWO_FACED, encoding="utf-8")
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    rogue = [*worker_args(address, mine), "--nworkers", "2", "--preload", str(script)]
    honest = [*worker_args(address, mine, "worker-honest"), "--name", "honest"]
    honest_env = {"ARENA_CACHE": str(tmp_path / "honest"), "ARENA_MACHINE": "honest"}
    with (
        process(scheduler_args(mine, port), logs / "scheduler.log"),
        process(rogue, logs / "rogue.log", {"ARENA_CACHE": str(tmp_path / "rogue")}),
        process(honest, logs / "honest.log", honest_env),
    ):  # fmt: skip
        wait_workers(address, mine, 3)
        yield address, mine


def test_a_forfeit_forged_on_a_machine_is_not_confirmed_by_its_second_process(
    tmp_path: Path, lab: tuple[str, Path]
) -> None:
    """Each is played again on the honest machine, none is confirmed by the rogue's own second process
    (which forges the same; without the guard's certified machine, its second process confirmed one to
    three of them in each of three tries), and greedy is kept off the rogue machine, both its processes
    (it forges against one bot only: that machine is not dropped, as one a bot fails on only is not)."""
    address, mine = lab
    back = Cluster(address, certs=mine)
    result = library_run(tmp_path, field(tmp_path / "bots"), 2, back)
    assert (result.scheduled, result.played) == (12, 12)
    stored = records(tmp_path)
    assert not [r for r in stored if r["faulty"] == "greedy"], "a forged forfeit was stored"
    assert back.confirm.disputes, "the rogue machine forged no forfeit: the test proves nothing"
    assert all(" said greedy forfeited (timeout: timed out before its first move); played again on "
               "honest (certified honest), it ended " in d and f"({ROGUE_MACHINE}) said" in d
               for d in back.confirm.disputes), back.confirm.disputes  # fmt: skip
    assert back.confirm.confirmed[ROGUE_MACHINE] == 0
    assert back.confirm.kept_off == {"greedy": {ROGUE_MACHINE}} and not back.dropped, back.dropped
    # one identity per machine, whatever its processes call themselves: in the records and the store's list
    assert {r["worker"] for r in stored} <= {"certified honest", ROGUE_MACHINE}, {r["worker"] for r in stored}
    with Tournament.open(db_file(tmp_path).parent) as cup:
        listed = json.loads(cup.store.meta()["workers"])
    assert set(listed) == {"certified honest", ROGUE_MACHINE}, set(listed)
    assert listed[ROGUE_MACHINE]["summary"].startswith("rogue-"), listed[ROGUE_MACHINE]  # its words, shown


def test_a_bot_that_fails_on_two_processes_of_one_machine_is_not_charged(
    tmp_path: Path, lab: tuple[str, Path]
) -> None:
    """Its games are played on the honest machine: the bot is kept off the rogue machine, which fails for
    it alone (a bot may recognise a machine), and nobody is charged."""
    address, mine = lab
    bots = write_bots(tmp_path / "bots", fragile=GREEDY, other=GREEDY)
    back = Cluster(address, certs=mine)
    result = library_run(tmp_path, bots, 3, back)
    assert result.scheduled == result.played == 6
    stored = records(tmp_path)
    assert [r for r in stored if r["faulty"] == "fragile"] == [], "the bot was charged"
    assert {r["worker"] for r in stored} == {"certified honest"}
    assert back.confirm.kept_off == {"fragile": {ROGUE_MACHINE}} and not back.dropped, back.dropped


def test_the_guard_tells_a_worker_which_machine_it_is_over_what_it_said() -> None:
    honest, shared = guard.Peer("worker", "honest", "1f"), guard.Peer("worker", "", "2f")
    assert guard.certified(honest, "tls://10.0.0.7:4000") == "certified honest"
    assert guard.certified(shared, "tls://10.0.0.7:4000") == "from 10.0.0.7"
    msg = {"op": "register-worker", "address": "tls://10.0.0.7:4001", "extra": {trust.MACHINE_EXTRA: "x"}}
    guard.stamp([msg, {"op": "heartbeat_worker"}], "from 10.0.0.7")
    assert msg["extra"] == {trust.MACHINE_EXTRA: "from 10.0.0.7"}


class Greeting:
    """A worker's answer to arena's greeting, as a finished Dask future hands it over."""

    status = "finished"

    def __init__(self, host: str, version: str) -> None:
        self.text = json.dumps({"host": host, "cores": 2, "version": version})

    def result(self, timeout: float) -> str:
        return self.text

    def release(self) -> None:
        pass


def test_a_dropped_machine_takes_its_other_processes_with_it_and_cannot_rejoin_under_another_name() -> None:
    """Membership, as the scheduler lists the workers: the rogue machine's second process goes when its first
    is dropped, and a third that joins later under yet another ARENA_MACHINE is dropped at its greeting; the
    honest machine plays on."""
    ours = identity.version()
    ctx = Context(
        Patience("tls://127.0.0.1:1"), None, ours, [], Conditions(RULES, Limits(TimeControl(200))), print,
        None, None, False, 1.0, {}, {}, {}, Confirm(),
    )  # fmt: skip
    members = membership.Membership(ctx, itertools.count(), lambda address: None)
    a, b, c, h = (f"tls://10.0.0.7:{port}" for port in (1, 2, 3, 4))
    members.certified.update(
        {a: "from 10.0.0.7", b: "from 10.0.0.7", c: "from 10.0.0.7", h: "certified honest"}
    )
    for address, host in ((a, "rogue-1"), (b, "rogue-2"), (h, "honest")):
        members.welcome(address, address, Greeting(host, ours))
    assert set(members.accepted) == {a, b, h}
    members.drop(a, members.known[a], "it forged")
    assert set(members.accepted) == {h}
    assert ctx.dropped["from 10.0.0.7"] == "it forged"
    assert ctx.named[f"rogue-2 ({b}, from 10.0.0.7)"] == "its machine was dropped from this run: it forged"
    members.welcome(c, c, Greeting("rogue-3", ours))
    assert set(members.accepted) == {h}
    assert ctx.named[f"rogue-3 ({c}, from 10.0.0.7)"] == "its machine was dropped from this run: it forged"
