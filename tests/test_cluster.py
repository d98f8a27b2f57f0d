"""Tournaments on a Dask cluster: a `distributed.LocalCluster` of two worker processes on this machine, each
with one game slot, playing real games of real bot processes, confined as locally.

The same seed gives the same stored games as a run on this machine's cores; a worker killed mid-tournament
(SIGKILL to its process) loses nothing and no game is stored twice; Ctrl-C and kill -9 of `arena run
--cluster` resume like a local run; a bot whose files differ from the tournament's digest never runs on a
worker; and without Dask arena works as before, while `--cluster` says in one line what to install.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_tournament import (
    ALPHABETA_2,
    GREEDY,
    RULES,
    STEADY,
    count_games,
    db_file,
    first_legal,
    game_keys,
    left_after,
    records,
    resumed,
    run_args,
    schedule,
    start_tournament,
    tournament,
    wait_for_games,
    write_bots,
)

from arena.api import Tournament
from arena.lab import Cluster, ClusterError, membership, trust
from arena.match.bots import discover
from arena.match.clock import TimeControl
from arena.match.referee import Limits
from arena.sandbox import Confinement, capabilities, sandbox_problem
from arena.tournament.backend import Conditions
from arena.tournament.settings import Settings

distributed = pytest.importorskip("distributed")
from arena.lab import workers  # noqa: E402 (needs Dask)

workers_ = workers  # the module, where a test's local variable is named `workers`

# Each worker of a LocalCluster poses as a machine of its own, lab-0 and lab-1 (ARENA_MACHINE, set by this
# preload), so that the records of the tests tell them apart; a worker started again keeps its name.
MACHINES = """\
import os


def dask_setup(worker):
    os.environ["ARENA_MACHINE"] = f"lab-{worker.name}"
"""

# What differs between two runs of the same games: where and when they were played, and how long moves took.
NOISE = {"id", "finished_at", "move_ms", "think_ms", "stderr", "worker"}


def security(certs: Path, client: str = "coordinator") -> Any:
    """Every role's certificates in one `Security`, for a LocalCluster and the tests' own clients."""
    return distributed.Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_scheduler_cert=str(certs / "scheduler.pem"),
        tls_scheduler_key=str(certs / "scheduler.key"),
        tls_worker_cert=str(certs / "worker.pem"),
        tls_worker_key=str(certs / "worker.key"),
        tls_client_cert=str(certs / f"{client}.pem"),
        tls_client_key=str(certs / f"{client}.key"),
        require_encryption=True,
    )


@contextlib.contextmanager
def local_cluster(
    cache: Path, certs: Path, workers: int = 2, preload: tuple[Path, ...] = (), **kwargs: Any
) -> Iterator[Any]:
    """A cluster on this machine speaking TLS with the class's certificates: `workers` worker processes (each
    under a nanny, which starts it again if it dies) named lab-0, lab-1..., one game slot each, keeping
    shipped bots under `cache`."""
    names = cache.parent / "machines.py"
    names.write_text(MACHINES, encoding="utf-8")
    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        resources={"games": 1},
        dashboard_address=None,
        host="127.0.0.1",
        protocol="tls://",
        security=security(certs),
        env={"ARENA_CACHE": str(cache)},
        preload=[str(names), *map(str, preload)],
        **kwargs,
    ) as cluster:
        yield cluster


def field(folder: Path, delay: float = 0.0) -> Path:
    """Three deterministic bots; `delay` seconds a move for 'first', so that a tournament lasts a while."""
    return write_bots(folder, greedy=GREEDY, first=first_legal(delay=delay), alphabeta=ALPHABETA_2)


def games(base: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in NOISE} for r in records(base)]


def library_run(base: Path, bots: Path | list, rounds: int, cluster: Any = None) -> Any:
    with Tournament(db_file(base).parent, Settings(RULES, TimeControl(move_ms=2000), seed=7)) as cup:
        return cup.run(bots, rounds, jobs=2, cluster=cluster)


def worker_pids(cluster: Any) -> dict[str, int]:
    with distributed.Client(cluster, set_as_default=False) as client:
        return dict(client.run(os.getpid))


def machine_names(client: Any) -> dict[str, str]:
    """Each worker's machine name, by address."""
    return dict(client.run(lambda: os.environ["ARENA_MACHINE"]))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The games of a 3-round tournament of `field` played on this machine's cores (seed 7)."""
    base = tmp_path_factory.mktemp("local")
    result = library_run(base, field(base / "bots"), 3)
    assert result.played == result.scheduled == 18
    return games(base)


@pytest.mark.slow
def test_a_cluster_stores_the_same_games_and_ratings_as_this_machine(
    tmp_path: Path, reference, certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    asked: list[float] = []  # when the run asked the scheduler about its workers
    greetings: list[tuple[float, float]] = []  # when the run waited for its workers' greetings

    def counted(client: Any) -> dict[str, Any]:
        asked.append(time.monotonic())
        return game_workers(client)

    def timed(self: membership.Membership) -> None:
        start = time.monotonic()
        wait_for_greetings(self)
        greetings.append((start, time.monotonic()))

    game_workers, wait_for_greetings = membership.game_workers, membership.Membership.wait_for_greetings
    monkeypatch.setattr(membership, "game_workers", counted)
    monkeypatch.setattr(membership.Membership, "wait_for_greetings", timed)
    with local_cluster(tmp_path / "cache", certs) as cluster:
        addresses = set(worker_pids(cluster))
        assert all(a.startswith("tls://127.0.0.1:") for a in addresses)
        back = Cluster(cluster.scheduler_address, certs=certs)
        result = library_run(base, bots, 3, back)
    assert (result.scheduled, result.played, result.interrupted) == (18, 18, False)
    # The greetings are waited for on their futures: the scheduler asked once a greeting back or a second
    # (each `look`), where a wait that failed at once asked it in a busy loop
    [(start, end)] = greetings
    during = [t for t in asked if start <= t <= end]
    assert len(during) <= len(addresses) + math.ceil(end - start) + 1, (len(during), end - start)
    assert games(base) == reference  # the same games in schedule order, wherever each was played
    assert set(back.machines) == addresses, "both workers played"
    assert {r["worker"] for r in records(base)} == {"lab-0", "lab-1"}, "every game names its machine"

    with Tournament.open(db_file(base).parent) as cup:
        meta = cup.store.meta()
        board = cup.leaderboard()[["bot", "mu", "sigma", "games", "wins", "draws", "losses"]]
        page = cup.report().read_text(encoding="utf-8")
    workers = json.loads(meta["workers"])
    assert set(workers) == {"lab-0", "lab-1"}  # by machine name, not by address
    for name, worker in workers.items():
        assert worker["slots"] == 1 and worker["cores"] == os.cpu_count()
        assert worker["address"] in addresses
        assert worker["summary"] == (
            f"{name} ({worker['address']}): 1 game slot on {os.cpu_count()} cores; sandbox "
            f"{'on' if worker['sandbox'] else 'off'}, cgroups {'on' if worker['cgroups'] else 'off'}"
        )
        assert worker["summary"] in page  # the page names every machine, with what it enforced
    assert f"{cluster.scheduler_address}, TLS with the class&#39;s certificates on both ends" in page
    confinement = json.loads(meta["confinement"])
    assert confinement["sandbox"] == all(w["sandbox"] for w in workers.values())
    assert len(confinement["notes"]) == sum(len(w["notes"]) for w in workers.values())

    local = tmp_path / "local"
    library_run(local, field(local / "bots"), 3)
    with Tournament.open(db_file(local).parent) as cup:
        assert board.to_dict("records") == cup.leaderboard()[list(board.columns)].to_dict("records")


@pytest.mark.slow
def test_a_worker_killed_mid_game_loses_nothing_and_no_game_is_stored_twice(
    tmp_path: Path, reference, certs
) -> None:
    base = tmp_path / "cluster"
    bots = field(base / "bots", delay=0.05)  # ~0.5 s a game: a worker is almost always in the middle of one
    cache = tmp_path / "cache"
    outcome: list[Any] = []
    with local_cluster(cache, certs) as cluster, distributed.Client(cluster) as client:
        pids = dict(client.run(os.getpid))
        names = machine_names(client)
        back = Cluster(cluster.scheduler_address, certs=certs)
        run = threading.Thread(target=lambda: outcome.append(library_run(base, bots, 3, back)))
        run.start()
        try:
            deadline = time.monotonic() + 60
            victim = sorted(pids)[0]
            while count_games(db_file(base)) < 4 or not (
                playing := client.processing(workers=[victim])[victim]
            ):
                assert time.monotonic() < deadline and run.is_alive(), "the tournament did not get going"
                time.sleep(0.02)
            os.kill(pids[victim], signal.SIGKILL)  # the worker process itself: no goodbye to anyone
            killed_at = count_games(db_file(base))
        finally:
            run.join(timeout=120)
        assert not run.is_alive(), "the tournament did not finish after the kill"
        assert left_after(str(cache)) == [], "bot processes outlived the run"
    (result,) = outcome
    assert (result.scheduled, result.played) == (18, 18)
    assert killed_at < 18, "the kill came after the tournament ended"
    stored = records(base)
    assert game_keys(stored) == schedule(bots, 3, seed=7)  # every game once: none lost, none twice
    assert games(base) == reference
    assert names[victim] in {r["worker"] for r in stored}
    # The games the victim had when it died (the one it was playing, and those Dask had queued for it) were
    # played again on another worker (unless one had just finished, on its way to the store as the kill came).
    for key in playing:
        rnd, south, north = key.split("-r")[1].split("-")[:3]
        (again,) = [r for r in stored if (r["round"], r["south"], r["north"]) == (int(rnd), south, north)]
        assert again["worker"] != names[victim] or again["id"] <= killed_at, (key, again["worker"])


@pytest.mark.slow
def test_a_bot_whose_files_differ_from_the_tournaments_never_runs_on_a_worker(
    tmp_path: Path, reference, certs
) -> None:
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    cache = tmp_path / "cache"
    first = next(b for b in discover(bots) if b.name == "first")
    # A copy in a worker's cache that is not the tournament's 'first' (it plays the last pit, not the first),
    # under the tournament's digest: it must never play. The worker replaces it by the shipped files.
    poisoned = cache / first.digest / "first.py"
    poisoned.parent.mkdir(parents=True)
    poisoned.write_text(first_legal(pick="last"), encoding="utf-8")
    with local_cluster(cache, certs) as cluster:
        library_run(base, bots, 3, Cluster(cluster.scheduler_address, certs=certs))
        assert games(base) == reference
        assert poisoned.read_text(encoding="utf-8") == first.path.read_text(encoding="utf-8")

        # A bot changes after the run has read the folder: its files no longer hash to the digest the
        # tournament knows it by. The run stops in one line before sending them (every worker would refuse
        # them, and none is to blame), and a worker given such files refuses them.
        other = tmp_path / "other"
        stale = discover(write_bots(other / "bots", greedy=GREEDY, changing=first_legal()))
        (other / "bots" / "changing.py").write_text(first_legal(pick="last"), encoding="utf-8")
        changed = (
            r"^bot 'changing' changed after the run began: its files hash to \w+, not to the version \w+ it "
            "plays; run the same command again to play the version there is now$"
        )
        with pytest.raises(ClusterError, match=changed):
            library_run(other, stale, 1, Cluster(cluster.scheduler_address, certs=certs))
        assert records(other) == []
    changing = next(b for b in stale if b.name == "changing")
    where = "worker lab-0 (tls://127.0.0.1:4001)"
    with pytest.raises(
        workers.Refused, match=rf"^{re.escape(where)} refused bot 'changing': its files hash to"
    ):
        workers.Cache(tmp_path / "fresh", where).bot(workers.pack(changing))


@pytest.mark.slow
def test_arena_run_with_a_cluster_stops_and_resumes_like_a_local_run(
    tmp_path: Path, reference, certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C, then kill -9, of `arena run --cluster`; each time the same command resumes, and the bots on
    the workers end with the run (after a kill -9, when the tournament runs again). The LocalCluster's
    scheduler runs without the guard (in this test's process): arena is told so (trust.UNGUARDED_ENV)."""
    monkeypatch.setenv(trust.UNGUARDED_ENV, "1")
    base = tmp_path / "cluster"
    bots = field(base / "bots", delay=0.02)
    cache = tmp_path / "cache"
    args = ("--rounds", 3, "--seed", 7, "--jobs", 2, *STEADY)
    with local_cluster(cache, certs) as cluster:
        flag = ("--cluster", cluster.scheduler_address, "--cluster-certs", certs)
        proc = start_tournament(base, bots, *args, *flag)
        try:
            wait_for_games(proc, db_file(base), 3)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert "run the same command again to resume" in err and "Traceback" not in err
        assert left_after(str(cache)) == [], "Ctrl-C left bot processes on the workers"
        after_ctrl_c = count_games(db_file(base))

        proc = start_tournament(base, bots, *args, *flag)
        try:
            wait_for_games(proc, db_file(base), after_ctrl_c + 3)
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        stored = count_games(db_file(base))
        assert stored < 18, "the kill came after the tournament ended"

        out = subprocess.run(
            [sys.executable, "-m", "arena", *map(str, run_args(base, bots, *args))],
            cwd=base,
            capture_output=True,
            text=True,
            timeout=120,
            # the variables, not the flags
            env={**os.environ, "ARENA_CLUSTER": cluster.scheduler_address, "ARENA_CLUSTER_CERTS": str(certs)},
        )
        assert out.returncode == 0, out.stderr
        assert resumed(out) == (stored, 18 - stored)
        assert left_after(str(cache)) == [], "bot processes outlived the run"
    assert games(base) == reference
    assert {r["worker"] for r in records(base)} <= {"lab-0", "lab-1"}


@pytest.mark.slow
def test_without_a_reachable_cluster_or_dask_it_is_one_line(tmp_path: Path, certs) -> None:
    bots = field(tmp_path / "bots")
    tls = ("--cluster", "tls://127.0.0.1:9", "--cluster-certs", certs)
    out = tournament(tmp_path, bots, *STEADY, *tls)  # nothing listens on 9
    assert out.returncode == 2
    (error,) = [line for line in out.stderr.splitlines() if "error" in line]  # one line, the last one
    assert error == out.stderr.splitlines()[-1], out.stderr
    assert error.startswith(
        "arena: error: cannot reach the Dask scheduler at tls://127.0.0.1:9 within 10 s ("
    )

    # Without Dask: the command starts and plays locally as ever, and --cluster names what to install.
    no_dask = (
        "import runpy, sys\n"
        "sys.modules['distributed'] = sys.modules['dask'] = None  # as if not installed: import fails\n"
        "sys.argv = ['arena', *sys.argv[1:]]\n"
        "runpy.run_module('arena', run_name='__main__')\n"
    )
    args = [sys.executable, "-c", no_dask, *map(str, run_args(tmp_path, bots, "--rounds", "1", *STEADY))]
    out = subprocess.run([*args, *map(str, tls)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    error = out.stderr.splitlines()[-1]
    assert error.startswith("arena: error: the cluster back end needs Dask, which is not installed")
    assert error.endswith(': pip install "arena[cluster]"')
    out = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert count_games(db_file(tmp_path)) == 6


def test_the_command_and_the_library_do_not_import_dask_until_a_cluster_is_used() -> None:
    code = (
        "import sys, arena.cli, arena.api, arena.tournament.scheduler, arena.lab\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert Cluster("tcp://127.0.0.1:9").remote  # a back end object is made without Dask too


@pytest.mark.slow
def test_a_plain_tcp_cluster_is_refused_unless_asked_for(tmp_path: Path) -> None:
    bots = field(tmp_path / "bots")
    out = tournament(tmp_path, bots, *STEADY, "--cluster", "tcp://127.0.0.1:9")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "arena: error: tcp://127.0.0.1:9 is a plain tcp:// cluster: whoever reaches its port can join as a "
        "worker, get the bots and forge results; start it with the class's certificates and give "
        "tls://HOST:8786 (see 'arena cluster-certs'), or pass --insecure-cluster to play on it anyway"
    ]
    assert not db_file(tmp_path).exists() or count_games(db_file(tmp_path)) == 0
    out = tournament(tmp_path, bots, *STEADY, "--cluster", "tls://127.0.0.1:9")  # TLS, but no certificates
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1].startswith(
        "arena: error: a tls:// cluster needs the class's certificates: give their folder with "
    )
    out = tournament(tmp_path, bots, *STEADY, "--cluster", "tcp://127.0.0.1:9", "--insecure-cluster")
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == (
        "arena: warning: tcp://127.0.0.1:9 is played on without TLS (--insecure-cluster)"
    )
    assert out.stderr.splitlines()[-1].startswith("arena: error: cannot reach the Dask scheduler at tcp://")


@pytest.mark.slow
def test_a_cluster_whose_workers_offer_no_game_slots_is_one_line(tmp_path: Path) -> None:
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        # a back end object, as a script may pass it, on a plain tcp:// cluster, as asked for
        back = Cluster(cluster.scheduler_address, workers_s=0.5, insecure=True)
        with pytest.raises(
            ClusterError, match=r"no worker of the cluster at \S+ offers game slots after 0.5 s: "
        ):
            with Tournament(db_file(tmp_path).parent, Settings(RULES)) as cup:
                cup.run(field(tmp_path / "bots"), 1, cluster=back)


MUTE = "import sys\nfor line in sys.stdin:\n    pass\n"  # reads every line, never answers: no first move


def test_a_task_plays_no_more_games_of_a_bot_that_gave_no_first_answer(tmp_path: Path, monkeypatch) -> None:
    """A worker's task of several games stops playing a bot once it gave no first answer (a hang at start
    costs a startup allowance each time); those games go back to the coordinator, whose bench decides."""
    monkeypatch.setenv("ARENA_CACHE", str(tmp_path / "cache"))
    bots = {
        b.name: b
        for b in discover(write_bots(tmp_path / "bots", mute=MUTE, first=first_legal(), greedy=GREEDY))
    }
    ships = {b.digest: workers.pack(b) for b in bots.values()}
    mute, first, greedy = (bots[n].digest for n in ("mute", "first", "greedy"))
    limits = Limits(TimeControl(move_ms=200, startup_ms=200))
    arena = workers.Arena(Conditions(RULES, limits, Confinement(sandbox=True), tag="t"))
    worker = SimpleNamespace(address="tcp://127.0.0.1:1", state=SimpleNamespace(total_resources={"games": 1}))
    arena.setup(worker)
    try:
        plays = [
            (greedy, first, ()),
            (mute, greedy, ()),
            (first, greedy, ()),
            (first, mute, ()),
            (greedy, first, ()),
        ]
        played, machine, _ = arena.play(ships, plays)
    finally:
        arena.teardown(worker)
    assert [k for k, _ in played] == [0, 1, 2, 4]  # not 3: the mute bot's second game is left
    assert played[1][1].faulty == "mute" and played[1][1].reason == "timeout"
    assert all(r.worker == machine.host for _, r in played) and machine.slots == 1
    assert left_after(str(tmp_path / "cache")) == []


@pytest.mark.slow
def test_a_bot_with_no_first_answer_is_benched_on_a_cluster_as_locally(tmp_path: Path, certs) -> None:
    bots = write_bots(tmp_path / "bots", mute=MUTE, first=first_legal(), greedy=GREEDY)
    with local_cluster(tmp_path / "cache", certs) as cluster:
        with Tournament(
            db_file(tmp_path).parent, Settings(RULES, TimeControl(move_ms=200, startup_ms=200))
        ) as cup:
            result = cup.run(bots, 4, cluster=Cluster(cluster.scheduler_address, certs=certs))
    stored = records(tmp_path)
    assert result.scheduled == len(stored) == 24  # benched games are stored as forfeits, not as played
    mine = [r for r in stored if "mute" in (r["south"], r["north"])]
    played = [r for r in mine if r["reason"] != "benched"]
    assert all(r["faulty"] == "mute" for r in mine)
    assert 3 <= len(played) <= 3 + 2 * 2, played  # benched after 3; at most one more per task on the cluster
    assert len(mine) == 16 and all(
        "benched for the rest of this run" in r["detail"] for r in mine if r not in played
    )


def test_games_stored_before_the_worker_field_existed_read_as_played_here(tmp_path: Path) -> None:
    """GameRecord.worker was added by the record's own rule (the field and nothing else): a store from before
    it gets the column, holding "" (played where the tournament ran) for the games it had."""
    from arena.match.bots import Bot
    from arena.match.record import GameRecord
    from arena.store.writer import Store
    from arena.tournament.schedule import Slot

    ann, bob = (Bot(n, ("true",), tmp_path, tmp_path / n, n * 8) for n in ("ann", "bob"))
    record = GameRecord(RULES, "ann", "bob", (1,), 10, 2, "ann", "normal", None, "", (1.0,))
    with Store(tmp_path / "s.sqlite") as store:
        store.add_game(Slot(1, "00", ann, bob), record)
        store.db.execute("DROP INDEX IF EXISTS games_order")
        store.db.execute("ALTER TABLE games DROP COLUMN worker")  # as a store written before the field
    with Store(tmp_path / "s.sqlite", create=False) as store:
        store.add_game(Slot(1, "01", bob, ann), dataclasses.replace(record, worker="tcp://10.0.0.5:4001"))
        assert [r["worker"] for r in store.records()] == ["", "tcp://10.0.0.5:4001"]


GROUPED = """\
import sys, time
from pathlib import Path
from arena.match.bots import Bot
from arena.match.record import GameRecord
from arena.tournament.schedule import Slot
from arena.store.writer import Store

folder = Path(sys.argv[1])
ann, bob = (Bot(n, ("true",), folder, folder / n, n * 8) for n in ("ann", "bob"))
record = GameRecord("kalah", "ann", "bob", (1,), 10, 2, "ann", "normal", None, "", (1.0,))
store = Store(folder / "s.sqlite")
store.add_game(Slot(1, "00", ann, bob), record)
with store.together():
    store.add_game(Slot(2, "00", ann, bob), record)
    store.add_game(Slot(3, "00", ann, bob), record)
    print("grouped", flush=True)
    time.sleep(60)
"""


def test_a_tasks_games_are_stored_in_one_commit_and_a_kill_within_it_stores_none_of_them(
    tmp_path: Path,
) -> None:
    """A cluster task's games reach the store together (Store.together): one commit for them, where a
    commit of each was as costly as the rest of storing it. A kill -9 within the group rolls it back
    whole, the games before it kept and the store sound, so that the next run plays the group again and
    stores each game once; an error within it commits what was added before it."""
    import sqlite3

    from arena.match.bots import Bot
    from arena.match.record import GameRecord
    from arena.store.writer import Store
    from arena.tournament.schedule import Slot

    child = subprocess.Popen(
        [sys.executable, "-c", GROUPED, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "grouped"
        with contextlib.closing(sqlite3.connect(tmp_path / "s.sqlite")) as other:
            assert other.execute("SELECT round FROM games").fetchall() == [(1,)]  # the group: not yet
    finally:
        child.kill()
        child.wait()
    ann, bob = (Bot(n, ("true",), tmp_path, tmp_path / n, n * 8) for n in ("ann", "bob"))
    record = GameRecord(RULES, "ann", "bob", (1,), 10, 2, "ann", "normal", None, "", (1.0,))
    with Store(tmp_path / "s.sqlite", create=False) as store:
        assert [r["round"] for r in store.records()] == [1]
        with pytest.raises(RuntimeError), store.together():
            store.add_game(Slot(2, "00", ann, bob), record)
            store.add_game(Slot(3, "00", ann, bob), record)
            raise RuntimeError("the task's third game")
    with Store(tmp_path / "s.sqlite", create=False) as store:
        assert [r["round"] for r in store.records()] == [1, 2, 3]


def test_a_worker_that_cannot_keep_bots_says_where_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the cache would go\n")
    (bot,) = discover(write_bots(tmp_path / "bots", first=first_legal()))
    cache = workers.Cache(tmp_path / "taken" / "bots", "worker lab-03 (tcp://10.0.0.3:4001)")
    with pytest.raises(
        workers.Refused, match=r"^worker lab-03 \(tcp://10.0.0.3:4001\) cannot keep bots in .*ARENA_CACHE$"
    ):
        cache.bot(workers.pack(bot))


def test_workers_of_one_machine_caching_the_same_bot_at_once_all_run_it(tmp_path: Path) -> None:
    """Two workers on one machine share its cache: one's replacing a copy must not remove it under the
    other's feet (CI: a worker refused alphabeta, 'cannot be read', while the other put it in place)."""
    (bot,) = discover(write_bots(tmp_path / "bots", first=first_legal()))
    ship = workers.pack(bot)
    failures: list[BaseException] = []

    def worker(cache: Any) -> None:
        try:
            for _ in range(30):
                assert cache.bot(ship).digest == ship.digest
        except BaseException as e:  # noqa: BLE001 (reported below)
            failures.append(e)

    for attempt in range(10):
        root = tmp_path / f"machine-{attempt}"
        caches = [workers.Cache(root, f"worker lab-{k}") for k in range(4)]  # a process each, a lock each
        # a stale copy, so that every worker begins by replacing it
        (root / ship.digest).mkdir(parents=True)
        (root / ship.digest / ship.entry).write_text("print('an old copy')\n")
        threads = [threading.Thread(target=worker, args=(cache,)) for cache in caches]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []


# Worker preloads that make the worker named 0 (lab-0) a dishonest or an outdated machine.
FORGER = """\
import dataclasses

from arena.lab import workers

real = workers.Arena._games


def forged(self, bots, games):
    played, machine, seconds = real(self, bots, games)
    return [(k, dataclasses.replace(r, south_store=r.south_store + 5)) for k, r in played], machine, seconds


def dask_setup(worker):
    if worker.name == 0:
        workers.Arena._games = forged
"""
NO_SANDBOX = """\
import dataclasses

from arena.lab import workers

real = workers.capabilities


def without(conf, sandbox):
    return real(dataclasses.replace(conf, sandbox=False), False)


def dask_setup(worker):
    if worker.name == 0:
        workers.capabilities = without
"""
OUTDATED = """\
from arena.lab import identity


def dask_setup(worker):
    if worker.name == 0:
        identity.version = lambda: "0.0.9 (code 0123456789abcdef)"
"""
# An arena from before the version check: no identity module, so not the task function nor the plugin either.
ANCIENT = """\
import sys


def dask_setup(worker):
    if worker.name == 0:
        sys.modules["arena.lab.identity"] = None
"""
FAILING = """\
from arena.lab import workers


def failing(self, bots, games):
    raise RuntimeError("its disk is full")


def dask_setup(worker):
    if worker.name == 0:
        workers.Arena._games = failing
"""
UNWRITABLE = """\
import os
from pathlib import Path


def dask_setup(worker):
    if worker.name == 0:
        taken = Path(os.environ["ARENA_CACHE"] + "-taken")
        taken.write_text("a file where its bots' folder would be")
        os.environ["ARENA_CACHE"] = str(taken / "bots")
"""
BROKEN_SETUP = """\
from arena.lab import workers


def broken(self, worker):
    raise OSError("its cgroups are read-only")


def dask_setup(worker):
    if worker.name == 0:
        workers.Arena.setup = broken
"""


@contextlib.contextmanager
def shipments(monkeypatch: pytest.MonkeyPatch, cluster: Any, certs: Path) -> Iterator[dict[str, Any]]:
    """Where the bots' files went during a run: every scatter of a bot by this process (when, its key, the
    workers it was allowed to go to), and the keys each worker held (by its Dask name), asked of the
    scheduler every 20 ms."""
    seen: dict[str, Any] = {"scattered": [], "held": {}}
    real = distributed.Client.scatter

    def scatter(self, data, *args, workers=None, **kwargs):  # type: ignore[no-untyped-def]
        at = time.time()
        future = real(self, data, *args, workers=workers, **kwargs)
        if isinstance(data, dict) and all(str(k).startswith("Shipment-") for k in data):
            workers_.Shipment.of(*data.values())  # plain data, as it travels
            seen["scattered"].extend((at, f.key, tuple(workers or ())) for f in future.values())
        return future

    monkeypatch.setattr(distributed.Client, "scatter", scatter)
    stop = threading.Event()

    def watch() -> None:
        with distributed.Client(
            cluster.scheduler_address, security=security(certs), set_as_default=False
        ) as c:
            while not stop.wait(0.02):
                with contextlib.suppress(Exception):
                    names = {a: str(w["name"]) for a, w in c.scheduler_info(n_workers=-1)["workers"].items()}
                    for address, keys in c.has_what().items():
                        held = seen["held"].setdefault(names.get(address, address), set())
                        held.update(str(k) for k in keys)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        stop.set()
        watcher.join(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("preload", "why"),
    [
        (FORGER, r"it returned a game the rules engine rejects: its game of round \d+, \w+ \(south\) against "
                 r"\w+: its stores \d+-\d+ are not those its moves give, \d+-\d+"),
        (OUTDATED, r"it runs arena 0\.0\.9 \(code 0123456789abcdef\), this machine arena \S+ \(code \w+\): "
                   "install the same arena there"),
        (ANCIENT, r"it runs arena 0\.1\.0 \(older: it cannot say its code, \w+\), this machine arena \S+ "
                  r"\(code \w+\): install the same arena there"),
        (NO_SANDBOX, r"it has no sandbox \(bubblewrap\): install it there, or pass --no-require-sandbox to "
                     "let unsandboxed machines play"),
        (FAILING, "its games fail there: RuntimeError: its disk is full"),
        (UNWRITABLE, r"worker lab-0 \(tls://127\.0\.0\.1:\d+\) cannot keep bots in \S+/bots \(Not a "
                     r"directory\): give it a writable folder in \$ARENA_CACHE"),
        (BROKEN_SETUP, "arena could not start its games there: OSError: its cgroups are read-only"),
    ],
    ids=["forged records", "another arena", "an arena older than the version check", "no sandbox",
         "failing games", "no cache", "a failing setup"],
)  # fmt: skip
def test_a_worker_that_forges_games_or_runs_another_arena_is_dropped_and_named(
    tmp_path: Path, reference, certs, caplog, monkeypatch, preload: str, why: str
) -> None:
    """Each is dropped from the run and named, its games played on the other worker, and no bot sent into
    the cluster after its drop reaches it; one found out when it joins (its arena, its setup, its sandbox)
    is sent no bot at all."""
    if preload == NO_SANDBOX and sandbox_problem() is not None:
        pytest.skip(f"a coordinator without the sandbox requires none of its workers: {sandbox_problem()}")
    script = tmp_path / "dishonest.py"
    script.write_text(preload, encoding="utf-8")
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        lab_0 = next(a for a, w in worker_info(cluster, certs).items() if w["name"] == 0)
        with shipments(monkeypatch, cluster, certs) as seen:
            back = Cluster(cluster.scheduler_address, certs=certs)
            result = library_run(base, bots, 3, back)
    assert (result.scheduled, result.played) == (18, 18)
    assert games(base) == reference  # nothing of lab-0's stored: every game is lab-1's, and right
    assert {r["worker"] for r in records(base)} == {"lab-1"}
    assert re.fullmatch(why, back.dropped["lab-0"]), back.dropped
    said = [r for r in caplog.records if "dropped from this run" in r.getMessage()]
    assert len(said) == 1 and re.fullmatch(
        rf"worker lab-0 \(tls://127\.0\.0\.1:\d+\) dropped from this run: {why}", said[0].getMessage()
    )
    with Tournament.open(db_file(base).parent) as cup:
        workers = json.loads(cup.store.meta()["workers"])
        page = html.unescape(cup.report().read_text(encoding="utf-8"))
    assert workers["lab-0"]["refused"] == back.dropped["lab-0"]
    assert workers["lab-0"]["summary"] in page and "; dropped from the run: " in workers["lab-0"]["summary"]

    dropped_at = said[0].created
    after = [(key, where) for at, key, where in seen["scattered"] if at >= dropped_at]
    assert after, "no bot was sent after the drop: the check below would prove nothing"
    let_go = [key for key, where in after if not where or lab_0 in where]  # lab-0 was not ruled out
    got = {key for key, _ in after} & seen["held"].get("0", set())
    assert not let_go and not got, f"bots sent after lab-0's drop that it may get {let_go}, and got {got}"
    if preload not in (FORGER, FAILING, UNWRITABLE):  # found out when it joined: sent no bot at all
        assert len(after) == len(seen["scattered"])
        assert not {k for k in seen["held"].get("0", set()) if k.startswith("Shipment-")}


def worker_info(cluster: Any, certs: Path) -> dict[str, dict]:
    with distributed.Client(cluster.scheduler_address, security=security(certs), set_as_default=False) as c:
        return dict(c.scheduler_info(n_workers=-1)["workers"])


def failing_run(cluster: Any, base: Path, bots: Path, back: Cluster, seconds: float) -> BaseException:
    """The error a run on `cluster` stops with, within `seconds` (it must not spin or hang)."""
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            library_run(base, bots, 1, back)
        except BaseException as e:
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), f"the run neither ended nor stopped in {seconds} s"
    assert outcome, "the run ended without an error"
    return outcome[0]


@pytest.mark.slow
def test_a_run_whose_every_worker_is_dropped_stops_in_one_line(tmp_path: Path, certs) -> None:
    """Its one worker runs another arena: the run waits `workers_s` for another, then says so."""
    script = tmp_path / "outdated.py"
    script.write_text(OUTDATED, encoding="utf-8")
    with local_cluster(tmp_path / "cache", certs, workers=1, preload=(script,)) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs, workers_s=3)
        error = failing_run(cluster, tmp_path, field(tmp_path / "bots"), back, 90)
    assert isinstance(error, ClusterError), repr(error)
    assert re.fullmatch(
        rf"every worker of the cluster at {re.escape(cluster.scheduler_address)} was dropped: lab-0 "
        r"\(tls://127\.0\.0\.1:\d+\): it runs arena 0\.0\.9 \(code 0123456789abcdef\), this machine arena "
        r"\S+ \(code \w+\): install the same arena there; no other joined in 3 s: fix what is said \(or "
        r"start other workers\) and run the same command again to resume",
        str(error),
    ), str(error)
    assert records(tmp_path) == []


POISON = """\
from arena.lab import workers

real = workers.Arena._games


def poisoned(self, bots, games):
    if any(bots[south].name == "first" for south, _, _ in games):
        raise RuntimeError("first's games break this machine")
    return real(self, bots, games)


def dask_setup(worker):
    workers.Arena._games = poisoned
"""


@pytest.mark.slow
def test_a_game_that_fails_on_as_many_workers_as_its_tries_ends_the_run(tmp_path: Path, certs) -> None:
    """It is tried on another worker each time, and stops the run in one line when it has failed `tries`
    times; a failure that follows a game from machine to machine drops neither (tests/test_cluster_faults.py
    has the failure that follows a bot, and the one that stays with a machine)."""
    script = tmp_path / "poison.py"
    script.write_text(POISON, encoding="utf-8")
    bots = write_bots(tmp_path / "bots", greedy=GREEDY, first=first_legal())
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs, tries=2)
        error = failing_run(cluster, tmp_path, bots, back, 90)
    assert isinstance(error, ClusterError), repr(error)
    assert re.fullmatch(
        r"the game of round 1, first \(south\) against greedy, failed on 2 workers, the last time with "
        "RuntimeError: first's games break this machine",
        str(error),
    ), str(error)
    assert not back.dropped  # the failure follows the game: no machine is charged with it


# The worker named 0 (lab-0) takes too long over its first task: it hangs until the run ends (or 30 s).
HANGS_ONCE = """\
from arena.lab import workers

real = workers.Arena._games


def hangs_once(self, bots, games):
    if not getattr(self, "hung", False):
        self.hung = True
        self._stop.wait(30)
    return real(self, bots, games)


def dask_setup(worker):
    if worker.name == 0:
        workers.Arena._games = hangs_once
"""
HANGS = """\
from arena.lab import workers


def hangs(self, bots, games):
    self._stop.wait(60)
    return [], self.machine, 0.0


def dask_setup(worker):
    workers.Arena._games = hangs
"""


@pytest.mark.slow
def test_a_task_that_never_answers_is_sent_again_to_another_worker(
    tmp_path: Path, reference, certs, caplog
) -> None:
    script = tmp_path / "hangs.py"
    script.write_text(HANGS_ONCE, encoding="utf-8")
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        # the deadline of a task not yet timed: long enough for an honest worker's first task (its warden,
        # its bots' first start) on a machine at load 18, which took over 4 s; the hung task never answers
        back = Cluster(cluster.scheduler_address, certs=certs, result_s=20)
        result = library_run(base, bots, 3, back)
    assert (result.scheduled, result.played) == (18, 18)
    assert games(base) == reference  # every game once
    resent = [r.getMessage() for r in caplog.records if "its games are sent again" in r.getMessage()]
    late = r"arena-games-\w+-\d+-r\d+-\w+-\w+-x\d+: no answer in \d+ s; its games are sent again"
    assert resent and all(re.fullmatch(late, m) for m in resent), resent
    # The worker that kept it is dropped and named after its first late task, its games played elsewhere
    assert re.fullmatch(
        r"it kept a task of \d+ games for \d+ s without an answer \(its deadline \d+ s\): is the machine "
        r"stopped or overloaded\?",
        back.dropped["lab-0"],
    ), back.dropped
    assert {r["worker"] for r in records(base)} == {"lab-1"}


@pytest.mark.slow
def test_a_run_whose_games_never_come_back_stops_at_its_deadline(tmp_path: Path, certs) -> None:
    script = tmp_path / "hangs.py"
    script.write_text(HANGS, encoding="utf-8")
    with local_cluster(tmp_path / "cache", certs, workers=1, preload=(script,)) as cluster:
        back = Cluster(cluster.scheduler_address, certs=certs, result_s=3)
        error = failing_run(cluster, tmp_path, field(tmp_path / "bots"), back, 60)
    assert isinstance(error, ClusterError), repr(error)
    assert re.fullmatch(
        rf"no game came back from the cluster at {re.escape(cluster.scheduler_address)} in 3 s \(\d+ tasks "
        r"out\); the games stored so far are kept: run the same command again to resume",
        str(error),
    ), str(error)
    assert records(tmp_path) == []


def test_a_cluster_that_takes_no_work_is_one_line_after_its_deadline() -> None:
    back = Cluster("tls://10.0.0.1:8786", workers_s=0.5)
    client = SimpleNamespace(status="running")
    tried: list[float] = []

    def refused() -> None:
        tried.append(time.monotonic())
        raise TimeoutError("No valid workers found")

    with pytest.raises(ClusterError) as error:
        back._patiently(client, refused)
    assert str(error.value) == (
        "the cluster at tls://10.0.0.1:8786 took no work for 0.5 s (TimeoutError: No valid workers found); "
        "the games stored so far are kept: run the same command again to resume"
    )
    assert len(tried) >= 2 and tried[-1] - tried[0] >= 0.5  # tried again until the deadline

    answers: list[Any] = [TimeoutError("No valid workers found"), "taken"]

    def later() -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert back._patiently(client, later) == "taken"


@pytest.mark.slow
def test_a_run_on_a_plain_tcp_cluster_says_so_on_the_terminal_and_the_page(tmp_path: Path) -> None:
    names = tmp_path / "machines.py"
    names.write_text(MACHINES, encoding="utf-8")
    bots = write_bots(tmp_path / "bots", greedy=GREEDY, first=first_legal())
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, resources={"games": 1}, dashboard_address=None, host="127.0.0.1",
        env={"ARENA_CACHE": str(tmp_path / "cache")}, preload=[str(names)],
    ) as cluster:  # fmt: skip
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        out = tournament(tmp_path, bots, "--rounds", "1", *STEADY, "--cluster", address, "--insecure-cluster")
    assert out.returncode == 0, out.stderr
    assert f"arena: warning: {address} is played on without TLS (--insecure-cluster)" in out.stderr
    page = html.unescape((db_file(tmp_path).parent / "index.html").read_text(encoding="utf-8"))
    assert (
        f"{address}, plain tcp:// without TLS (--insecure-cluster): whoever reached its port could join as a "
        "worker"
    ) in page
    assert {r["worker"] for r in records(tmp_path)} == {"lab-0"}


@pytest.mark.slow
@pytest.mark.skipif(not capabilities(Confinement(sandbox=True), True)[1].sandbox, reason="no sandbox here")
def test_each_game_records_whether_it_was_sandboxed_and_the_page_counts_the_tournaments_games(
    tmp_path: Path, certs
) -> None:
    """lab-0 has no sandbox and plays round 1 (--no-require-sandbox); round 2 is played on sandboxed
    machines alone: the page still says how many of the tournament's games ran outside the sandbox."""
    script = tmp_path / "dishonest.py"
    script.write_text(NO_SANDBOX, encoding="utf-8")
    base = tmp_path / "cluster"
    bots = field(base / "bots")
    with local_cluster(tmp_path / "cache", certs, preload=(script,)) as cluster:
        library_run(base, bots, 1, Cluster(cluster.scheduler_address, certs=certs, require_sandbox=False))
    first = records(base)
    outside = [r for r in first if r["worker"] == "lab-0"]
    assert outside, "lab-0 played"
    # the column holds the bool as SQLite keeps it (0/1, or JSON's false/true in older stores)
    assert {str(r["sandboxed"]).lower() for r in outside} <= {"0", "false"}
    assert {str(r["sandboxed"]).lower() for r in first if r["worker"] == "lab-1"} <= {"1", "true"}
    with local_cluster(tmp_path / "cache2", certs) as cluster:
        library_run(base, bots, 2, Cluster(cluster.scheduler_address, certs=certs))
    with Tournament.open(db_file(base).parent) as cup:
        assert json.loads(cup.store.meta()["confinement"])["sandbox"] is True  # the last run's machines
        page = html.unescape(cup.report().read_text(encoding="utf-8"))
    assert f"off for {len(outside)} of the tournament's games ({len(outside)} on lab-0)" in page


def test_the_page_says_how_the_cluster_was_trusted() -> None:
    assert (
        Cluster("tls://10.0.0.1:8786").trust
        == "tls://10.0.0.1:8786, TLS with the class's certificates on both ends"
    )
    assert Cluster("tcp://10.0.0.1:8786", insecure=True).trust == (
        "tcp://10.0.0.1:8786, plain tcp:// without TLS (--insecure-cluster): whoever reached its port could "
        "join as a worker"
    )


def test_workers_dying_while_others_play_on_never_end_the_run_a_game_that_takes_every_worker_down_does() -> (
    None
):
    """A lab's churn (a worker killed, a machine switched off) costs the games it had, never the run: a death
    counts against a game only when no game was played anywhere since its last one. A game whose every try
    takes its worker down, with nothing played in between, stops the run after `tries`."""
    from arena.lab.retry import Tries

    first = SimpleNamespace(
        round=1, south=SimpleNamespace(name="first"), north=SimpleNamespace(name="greedy")
    )
    tries = Tries([first], 3)  # the bookkeeping alone: no Dask client
    for _ in range(10):  # each death with a game played elsewhere since the last one: churn
        tries.died((0,), "its workers left")
        tries.played += 1
    tries.died((0,), "its workers left")
    tries.died((0,), "its workers left")  # twice more, nothing played: 3 in a row
    with pytest.raises(ClusterError, match=r"failed on 3 workers \(its workers left\)"):
        tries.died((0,), "its workers left")
