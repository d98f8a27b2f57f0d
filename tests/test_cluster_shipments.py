"""Faults charged to whoever caused them, on a real guarded TLS lab (`dask scheduler` and `dask worker` with
their nannies, the guard preloaded, as docs/lab.md starts them, on 127.0.0.1), each machine with its own
certificate (`arena cluster-certs --machine`):

- a rogue machine (its own certificate, signed by the class, never revoked) serves garbled copies of the
  bots it holds through `get_data`: the honest machines that fetch them charge it, never themselves, and
  the run ends with an honest run's games, the rogue named;
- a bot that recognises one machine and crashes only there is kept off it: its games there are played
  elsewhere, nobody is charged; a bot that crashes everywhere is charged, no machine dropped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_cluster_lab
from test_cluster import games, library_run
from test_cluster_lab import WORKER, client, free_port, give, process, scheduler_args, tls, worker_args
from test_tournament import GREEDY, records, write_bots

from arena.lab import Cluster, trust

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow
mode, shared = test_cluster_lab.mode, test_cluster_lab.shared  # root, and an ordinary user (uid 65534)


def field(folder: Path, **more: str) -> Path:
    from test_cluster import field as three

    return write_bots(three(folder), **more)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The games of a 2-round tournament of the three bots, played on this machine's cores (seed 7)."""
    base = tmp_path_factory.mktemp("local")
    library_run(base, field(base / "bots"), 2)
    return games(base)


def ports(n: int) -> list[int]:
    """`n` free ports, in the order Dask sorts their workers' addresses (as text)."""
    return sorted((free_port() for _ in range(n)), key=str)


@contextlib.contextmanager
def lab(
    tmp_path: Path,
    certs: Path,
    honest: dict[str, dict[str, str]],
    rogue: str | None = None,
    mode: str = "root",
    shared: Path | None = None,
) -> Iterator[tuple[str, Path]]:
    """A guarded lab: the scheduler, one worker (with its nanny) of each `honest` machine (its name ->
    the worker's environment), run by root or (mode 'user', in the `shared` folder) an ordinary user, and a
    `rogue` one (root; its preload's text, after arena's guard, so that it serves plain data) listening on
    the port Dask sorts first, so that the coordinator scatters the bots to it. Its address and
    certificates."""
    user = mode == "user"
    base = shared if user and shared is not None else tmp_path
    mine = base / "certs"
    shutil.copytree(certs, mine)
    shutil.copytree(trust.authority(certs), trust.authority(mine))  # its key, apart
    logs = tmp_path / "logs"
    logs.mkdir()
    names = [*honest, *(["lab-9"] if rogue else [])]
    for name in names:
        trust.make_machine(mine, name)
    give(mine, mode)
    first, *rest = ports(len(names))
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            process(scheduler_args(mine, port), logs / "scheduler.log", {"HOME": str(base)}, user)
        )
        at = [*rest, first] if rogue else [first, *rest]
        for (name, env), worker_port in zip(honest.items(), at, strict=False):
            args = [*worker_args(address, mine, f"worker-{name}"), "--worker-port", str(worker_port)]
            env = {
                "ARENA_CACHE": str(base / f"cache-{name}"),
                "ARENA_MACHINE": name,
                "HOME": str(base),
                **env,
            }
            stack.enter_context(process(args, logs / f"{name}.log", env, user))
        if rogue:
            (tmp_path / "rogue").mkdir()
            (tmp_path / "rogue" / "rogue_preload.py").write_text(textwrap.dedent(rogue), encoding="utf-8")
            path = os.pathsep.join([str(tmp_path / "rogue"), os.environ.get("PYTHONPATH", "")])
            env = {"ARENA_CACHE": str(tmp_path / "cache-rogue"), "ARENA_MACHINE": "lab-9", "PYTHONPATH": path}
            args = [*WORKER, address, "--host", "127.0.0.1", "--nthreads", "1", "--resources", "games=1",
                    "--no-nanny", "--worker-port", str(first), "--dashboard-address", "127.0.0.1:0",
                    "--preload", "arena.lab.guard", "--preload", "rogue_preload",
                    *tls(mine, "worker-lab-9")]  # fmt: skip
            stack.enter_context(process(args, logs / "rogue.log", env))
        with client(address, mine) as c:
            c.wait_for_workers(len(names), timeout=120)
            if user:  # the honest machines' workers, and the scheduler, are an ordinary user's
                uids = {uid for uid in c.run(os.getuid).values()} | {c.run_on_scheduler(os.getuid)}
                assert uids == ({65534, 0} if rogue else {65534}), uids
        yield address, mine


# A rogue machine: arena's own worker, which plays honestly, but serves every bot shipment it holds with
# one byte of the bot's first file changed (plain data: the wire lets it through; only its seal tells).
GARBLER = """
from arena.lab.workers import SHIPMENT


def garbled(value):
    name, digest, entry, files = value
    (rel, mode, data), *rest = files
    return [name, digest, entry, [[rel, mode, data[:-1] + b"#"], *rest]]


def dask_setup(worker):
    async def get_data(comm, keys, who=None, serializers=None):
        data = {k: garbled(worker.data[k]) if str(k).startswith(SHIPMENT) else worker.data[k]
                for k in keys if k in worker.data}
        await comm.write({"status": "OK", "data": data}, serializers=["msgpack"])
        await comm.read()  # its "OK"
        return "dont-reply"

    worker.handlers["get_data"] = get_data
"""


def test_a_machine_serving_garbled_bots_is_charged_not_the_machines_it_served(
    tmp_path: Path, certs: Path, reference: list[dict], mode: str, shared: Path
) -> None:
    """The bots are scattered to the rogue (lab-9), the honest lab-1 and lab-2 fetch them from it: the
    copies do not match their seals, lab-9 is named for it, and no game is forfeited by a bot or lost by
    a machine: the games stored are an honest run's."""
    base = tmp_path / "run"
    with lab(tmp_path, certs, {"lab-1": {}, "lab-2": {}}, GARBLER, mode, shared) as (address, mine):
        back = Cluster(address, certs=mine, connect_s=30)
        result = library_run(base, field(base / "bots"), 2, back)
    assert (result.scheduled, result.played) == (12, 12)
    assert games(base) == reference
    # The rogue is dropped for its garbled copies; or, once in several runs under load, its stand-in for
    # Dask's get_data answered out of turn on a connection Dask reuses before it had joined, and it was
    # dropped under its address for that: the right machine all the same. No other machine is.
    said = (tmp_path / "logs" / "rogue.log").read_text(errors="replace")
    rogue_at = re.search(r"Start worker at:\s+(\S+)", said)
    assert rogue_at, said[-2000:]
    assert set(back.dropped) <= {"certified lab-9", rogue_at[1]}, back.dropped
    if (why := back.dropped.get("certified lab-9")) is not None:
        assert "served bot" in why and "garbled" in why, why
    else:
        assert rogue_at[1] in back.dropped, back.dropped
    stored = records(base)
    assert {r["worker"] for r in stored} <= {"certified lab-1", "certified lab-2", "certified lab-9"}


def crasher_on(pid: int) -> str:
    """Greedy, but a process of the worker whose pid is `pid` crashes at once: it finds that pid in its
    sandbox's mounts (its files' stage, /arena-stage-PID-...) or cgroup (arena-PID-...), or, unconfined,
    as its parent."""
    return (
        "import os, sys\n"
        "def seen(path):\n"
        "    try:\n"
        "        return open(path).read()\n"
        "    except OSError:\n"
        "        return ''\n"
        "here = seen('/proc/self/mountinfo') + seen('/proc/self/cgroup')\n"
        f"if '-{pid}-' in here or os.getppid() == {pid}:\n"
        "    sys.exit(3)\n" + GREEDY
    )


def pids(address: str, certs: Path) -> dict[str, int]:
    """Each worker's pid, by its machine's name."""
    with client(address, certs) as c:
        return dict(c.run(lambda: (os.environ["ARENA_MACHINE"], os.getpid())).values())


def test_a_bot_that_crashes_on_one_machine_only_is_kept_off_it_and_charged_nowhere(
    tmp_path: Path, certs: Path
) -> None:
    """'picky' crashes on lab-2 only (it knows lab-2's worker there): its games there are played on lab-1,
    no forfeit of its is stored, no machine is dropped."""
    base = tmp_path / "run"
    with lab(tmp_path, certs, {"lab-1": {}, "lab-2": {}}) as (address, mine):
        bots = field(base / "bots", picky=crasher_on(pids(address, mine)["lab-2"]))
        back = Cluster(address, certs=mine, connect_s=30)
        result = library_run(base, bots, 2, back)
    assert not back.dropped, back.dropped
    stored = records(base)
    assert result.scheduled == len(stored) == 24
    picky = [r for r in stored if "picky" in (r["south"], r["north"])]
    assert picky and all(r["faulty"] != "picky" for r in picky), [r["detail"] for r in picky]
    assert {r["worker"] for r in picky} == {"certified lab-1"}
    assert {r["worker"] for r in stored} == {"certified lab-1", "certified lab-2"}
    assert back.confirm.disputes, "picky never crashed on lab-2: the test proves nothing"


def test_a_bot_that_crashes_everywhere_is_charged_and_no_machine_dropped(tmp_path: Path, certs: Path) -> None:
    """'crasher' crashes at its first move on both machines: each of its forfeits is confirmed by the
    other machine, then it is benched; no machine is dropped, and it is kept off none."""
    base = tmp_path / "run"
    bots = field(base / "bots", crasher="import sys\nsys.exit(3)\n")
    with lab(tmp_path, certs, {"lab-1": {}, "lab-2": {}}) as (address, mine):
        back = Cluster(address, certs=mine, connect_s=30)
        library_run(base, bots, 1, back)
    assert not back.dropped, back.dropped
    theirs = [r for r in records(base) if "crasher" in (r["south"], r["north"])]
    assert {(r["faulty"], r["reason"]) for r in theirs} == {("crasher", "crash"), ("crasher", "benched")}
    assert not back.confirm.kept_off and not back.confirm.disputes


# A rogue machine that forges a forfeit in every game it plays: south "timed out before its first move".
FORGER = """
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
        pos = position_after(self.rules, r.opening)
        r = dataclasses.replace(
            r, moves=(), move_ms=(), south_store=pos.store(SOUTH), north_store=pos.store(NORTH),
            winner=r.north, reason=Reason.TIMEOUT, faulty=r.south, detail="timed out before its first move",
            moves_made={r.south: 0, r.north: 0}, think_ms={r.south: 0.0, r.north: 0.0},
        )
        out.append((k, r))
    return out, machine, seconds


def dask_setup(worker):
    workers.Arena._games = forged
"""


def test_a_machine_whose_forfeits_fail_for_several_bots_that_play_elsewhere_is_dropped(
    tmp_path: Path, certs: Path, reference: list[dict], mode: str, shared: Path
) -> None:
    """lab-9 forges a timeout of the south bot in every game: each is played again on lab-1 or lab-2,
    which disagree; the forged bots are kept off lab-9, and once they are several lab-9 is dropped and
    named; the games stored are an honest run's."""
    base = tmp_path / "run"
    with lab(tmp_path, certs, {"lab-1": {}, "lab-2": {}}, FORGER, mode, shared) as (address, mine):
        back = Cluster(address, certs=mine, connect_s=30)
        result = library_run(base, field(base / "bots"), 2, back)
    assert (result.scheduled, result.played) == (12, 12)
    assert games(base) == reference
    assert all(m == {"certified lab-9"} for m in back.confirm.kept_off.values()), back.confirm.kept_off
    # lab-9 is named either way: dropped once its forgeries touched all three bots, or (on a busy machine
    # the honest machines may take the games of a bot before lab-9 gets one) each bot it forged against
    # kept off it, fewer than "several"
    if "certified lab-9" in back.dropped:
        assert "bots that play elsewhere, were not confirmed" in back.dropped["certified lab-9"], back.dropped
    else:
        assert 1 <= len(back.confirm.kept_off) < 3 and not back.dropped, (back.dropped, back.confirm.kept_off)


# A rogue machine that serves the bots it holds pickled: the machines that need them refuse to read them
# (their guard), and Dask would have them ask it again for ever, their tasks past their deadline.
PICKLER = """
from distributed.protocol import Serialize

from arena.lab.workers import SHIPMENT


def dask_setup(worker):
    real = worker.handlers["get_data"]

    async def get_data(comm, keys, who=None, serializers=None):
        if not any(str(k).startswith(SHIPMENT) for k in keys):
            return await real(comm, keys=keys, who=who, serializers=serializers)
        data = {k: Serialize(worker.data[k]) for k in keys if k in worker.data}
        await comm.write({"status": "OK", "data": data}, serializers=["pickle"])
        await comm.read()  # its "OK", if the reader did not close the connection
        return "dont-reply"

    worker.handlers["get_data"] = get_data
"""


def test_a_machine_serving_bots_pickled_is_charged_not_the_machines_left_waiting(
    tmp_path: Path, certs: Path, reference: list[dict], caplog: pytest.LogCaptureFixture
) -> None:
    """The bots are scattered to the rogue (lab-9), which serves them pickled: lab-1's and lab-2's tasks
    wait for them past their deadline; the coordinator finds what the first late one waits for, reads it
    from lab-9 itself (refused too), drops lab-9, not them, and ships the bots again: an honest run's
    games. The other tasks waiting for lab-9's copies are taken back with it, on a new clock, not left to
    pass their own deadlines (where a loaded machine's late answer about what it waits for got it
    dropped in lab-9's stead)."""
    base = tmp_path / "run"
    with lab(tmp_path, certs, {"lab-1": {}, "lab-2": {}}, PICKLER) as (address, mine):
        back = Cluster(address, certs=mine, connect_s=30, result_s=20)
        with caplog.at_level(logging.WARNING, logger="arena"):
            result = library_run(base, field(base / "bots"), 2, back)
    assert (result.scheduled, result.played) == (12, 12)
    assert games(base) == reference
    assert "as something other than plain data" in back.dropped.get("certified lab-9", ""), back.dropped
    assert not [k for k in back.dropped if "lab-1" in k or "lab-2" in k], back.dropped
    late = [r.getMessage() for r in caplog.records if "no answer in" in r.getMessage()]
    assert len(late) == 1, late  # only the task that found lab-9 out: the others were sent again with it
