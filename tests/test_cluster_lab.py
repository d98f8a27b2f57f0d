"""A lab of machines as docs/lab.md starts it: real `dask scheduler` and `dask worker` processes over TLS with
the class's certificates on 127.0.0.1, and `arena run --cluster tls://...` (marked slow: each starts
processes and plays a tournament; kept few, on the 2 shared cores).

A worker without the class's certificate never joins; nothing listens beyond 127.0.0.1; kill -9 of the
worker in a loop (right after it restarts too) never ends the run and leaves no process; a port that never
answers and a scheduler without workers are one line within their deadline; a scheduler killed and
started again, then the same command, completes with the games of a run on this machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ports import free_port
from test_cluster import NOISE, field
from test_redteam import as_nobody  # at the top: compiled in process() beside a Dask thread, 3.11.7 failed
from test_tournament import (
    RULES,
    STEADY,
    count_games,
    db_file,
    left_after,
    records,
    resumed,
    run_args,
    start_tournament,
    tournament,
    wait_for_games,
)

from arena.api import Tournament
from arena.lab import Cluster, ClusterError
from arena.lab.background import SETTINGS
from arena.lab.trust import make as make_certs
from arena.tournament.settings import Settings

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow
DASK = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
WORKER = [sys.executable, "-m", "distributed.cli.dask_worker"]
GUARD = ["--preload", "arena.lab.guard"]  # as docs/lab.md starts them


def tls(certs: Path, role: str) -> list[str]:
    return ["--tls-ca-file", str(certs / "ca.pem"), "--tls-cert", str(certs / f"{role}.pem"),
            "--tls-key", str(certs / f"{role}.key")]  # fmt: skip


@contextlib.contextmanager
def process(
    args: list[str], log: Path, env: dict[str, str] | None = None, user: bool = False
) -> Iterator[subprocess.Popen]:
    """`args` started in a session of its own, ended with it; `user`: run by uid 65534, an ordinary user
    (as a lab machine may run its worker), which must be able to read and write what `env` names."""
    if user:
        args = as_nobody(args, [Path(sys.base_prefix), Path(sys.prefix), Path(__file__).resolve().parents[1]])
    with log.open("ab") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
            start_new_session=True,
        )  # fmt: skip
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(params=["root", "user"])
def mode(request: pytest.FixtureRequest) -> str:
    """Whom the lab's processes run as: root, or (uid 65534) an ordinary user."""
    if request.param == "user":
        if os.geteuid() != 0:
            pytest.skip("run as root: the test starts the lab as root and, dropping privileges, as a user")
        if shutil.which("bwrap") is None or shutil.which("setpriv") is None:
            pytest.skip("the lab is started as an ordinary user with bubblewrap and setpriv, not here")
    return str(request.param)


@pytest.fixture
def shared(mode: str) -> Iterator[Path]:
    """A folder the lab's processes can use whoever they run as (pytest's own are root's alone): owned by
    uid 65534 for an ordinary user's lab."""
    folder = Path(tempfile.mkdtemp(prefix="arena-lab-", dir="/tmp"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def give(folder: Path, mode: str) -> None:
    """`folder` and all in it made the lab's user's (uid 65534 in mode 'user'): its keys readable by it."""
    if mode == "user":
        for path in (folder, *folder.rglob("*")):
            os.chown(path, 65534, 65534)


def scheduler_args(certs: Path, port: int) -> list[str]:
    """As docs/lab.md starts it, on 127.0.0.1 (the dashboard on a free port: tests run side by side)."""
    return [*DASK, "--protocol", "tls", "--host", "127.0.0.1", "--port", str(port),
            "--dashboard-address", "127.0.0.1:0", *GUARD, *tls(certs, "scheduler")]  # fmt: skip


def worker_args(address: str, certs: Path, role: str = "worker") -> list[str]:
    return [*WORKER, address, "--host", "127.0.0.1", "--nthreads", "1", "--resources", "games=1",
            "--dashboard-address", "127.0.0.1:0", *GUARD, "--preload-nanny", GUARD[1],
            *tls(certs, role)]  # fmt: skip


def client(address: str, certs: Path) -> Any:
    security = distributed.Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_client_cert=str(certs / "coordinator.pem"),
        tls_client_key=str(certs / "coordinator.key"),
        require_encryption=True,
    )
    return distributed.Client(address, security=security, set_as_default=False, timeout=30)


def wait_workers(address: str, certs: Path, count: int, timeout: float = 90) -> dict[str, int]:
    """The pids of the scheduler's workers, once there are `count`."""
    with client(address, certs) as c:
        c.wait_for_workers(count, timeout=timeout)
        return dict(c.run(os.getpid))


def listening(pid: int) -> set[str]:
    """The local addresses of the TCP sockets process `pid` and its children listen on."""
    pids = {pid} | {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    inodes = set()
    for p in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{p}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                found.add(cols[1].split(":")[0])
    return found


def games(base: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in NOISE} for r in records(base)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    base = tmp_path_factory.mktemp("local")
    out = tournament(base, field(base / "bots"), "--rounds", 2, "--seed", 7, *STEADY)
    assert out.returncode == 0, out.stderr
    return games(base)


def test_a_lab_over_tls_plays_and_a_machine_without_the_class_certificate_never_joins(
    tmp_path: Path, certs: Path, reference
) -> None:
    strangers = tmp_path / "strangers"
    make_certs(strangers, name="another class")  # certificates of another authority
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"ARENA_CACHE": str(tmp_path / "cache")}
    lab_a = {**env, "ARENA_MACHINE": "lab-a"}
    with (
        process(scheduler_args(certs, port), logs / "scheduler.log") as sched,
        process([*worker_args(address, certs), "--name", "lab-a"], logs / "a.log", lab_a),
        process([*worker_args(address, strangers), "--name", "intruder", "--death-timeout", "20"],
                logs / "intruder.log", env),
    ):  # fmt: skip
        pids = wait_workers(address, certs, 1)
        time.sleep(3)  # the intruder had its chance to join
        assert len(wait_workers(address, certs, 1)) == 1, "a worker without the class's certificate joined"
        assert listening(sched.pid) == {"0100007F"}, "the scheduler listens beyond 127.0.0.1"
        (worker_pid,) = pids.values()
        assert listening(worker_pid) <= {"0100007F"}
        # The guard preload's Dask settings reached the scheduler, and the worker through its nanny
        from dask.utils import parse_timedelta

        with client(address, certs) as c:
            (worker,) = c.run(lambda dask_worker: ("profile" in dask_worker.periodic_callbacks,
                                                   dask_worker._tick_interval)).values()  # fmt: skip
            tick = c.run_on_scheduler(lambda dask_scheduler: dask_scheduler._tick_interval)
        every = parse_timedelta(SETTINGS["distributed.admin.tick.interval"])
        assert worker == (SETTINGS["distributed.worker.profile.enabled"], every), worker
        assert tick == every, tick

        base = tmp_path / "run"
        bots = field(base / "bots")
        out = tournament(base, bots, "--rounds", 2, "--seed", 7, *STEADY, "--cluster", address,
                         "--cluster-certs", certs)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr

        # Nor does a coordinator without the class's certificate reach it: one line.
        other = tmp_path / "stranger"
        out = tournament(
            other, field(other / "bots"), *STEADY, "--cluster", address, "--cluster-certs", strangers
        )
        assert out.returncode == 2 and out.stderr.splitlines()[-1].startswith(
            f"arena: error: cannot reach the Dask scheduler at {address} within 10 s ("
        ), out.stderr
        assert count_games(db_file(other)) == 0
    assert games(base) == reference
    # the machine as the scheduler's guard certified it (the class's shared certificate: the IP it connected
    # from), not the ARENA_MACHINE it gave
    assert {r["worker"] for r in records(base)} == {"from 127.0.0.1"}
    said = (logs / "intruder.log").read_text(errors="replace")
    assert "SSL" in said or "certificate" in said.lower(), said[-2000:]


def test_arena_run_refuses_a_scheduler_started_without_the_guard_in_one_line(
    tmp_path: Path, certs: Path
) -> None:
    """Without the guard any lab machine's certificate would act as the coordinator's: `arena run --cluster`
    asks the scheduler whether it runs it, and refuses one that does not before anything is played."""
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    bare = [a for a in scheduler_args(certs, port) if a not in GUARD]
    with process(bare, tmp_path / "scheduler.log"):
        client(address, certs).close()  # the scheduler is up
        out = tournament(
            tmp_path, field(tmp_path / "bots"), *STEADY, "--cluster", address, "--cluster-certs", certs
        )
    assert out.returncode != 0, out.stdout
    assert out.stderr.splitlines()[-1] == (
        f"arena: error: the Dask scheduler at {address} runs without arena's guard, which gives each "
        "certificate its role (without it any lab machine's certificate acts as this one): start it with "
        "--preload arena.lab.guard, as docs/lab.md's 'Starting the scheduler and the workers' says"
    ), out.stderr
    assert count_games(db_file(tmp_path)) == 0


def worker_pids(address: str, certs: Path, count: int, timeout: float = 120) -> dict[str, int]:
    """The pid of each of the scheduler's workers by its name, once there are `count`."""
    with client(address, certs) as c:
        c.wait_for_workers(count, timeout=timeout)
        names = {a: str(w["name"]) for a, w in c.scheduler_info(n_workers=-1)["workers"].items()}
        return {names[a]: pid for a, pid in c.run(os.getpid).items()}


def restarted(address: str, certs: Path, name: str, old: int, timeout: float = 120) -> None:
    """Wait until worker `name` is back as a new process (the scheduler may still list its killed one)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):  # the killed one, still listed, answers nothing
            if worker_pids(address, certs, 2, timeout=5).get(name, old) != old:
                return
        assert time.monotonic() < deadline, f"{name} did not come back in {timeout} s"
        time.sleep(0.2)


def test_kill_9_of_the_workers_in_a_loop_never_ends_the_run_and_leaves_no_process(
    tmp_path: Path, certs: Path, reference
) -> None:
    """Both workers killed, one after the other and again, each kill once the run has stored another game
    and both workers are back (the first kill mid-run, the next ones right after a restart). While a killed
    worker restarts the run is held (SIGSTOP, as a laptop's lid), so that its other worker cannot play the
    run out first: at load 18 a restart took as long as the whole run's games, and only two kills came."""
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    cache = tmp_path / "cache"
    env = {"ARENA_CACHE": str(cache), "ARENA_MACHINE": "lab-a"}
    base = tmp_path / "run"
    bots = field(base / "bots", delay=0.15)  # the games of 'first' last seconds: the run outlives the kills
    with (
        process(scheduler_args(certs, port), tmp_path / "scheduler.log"),
        process([*worker_args(address, certs), "--name", "lab-a"], tmp_path / "a.log", env),
        process(
            [*worker_args(address, certs), "--name", "lab-b"],
            tmp_path / "b.log",
            {**env, "ARENA_MACHINE": "lab-b"},
        ),
    ):
        worker_pids(address, certs, 2)
        args = ("--rounds", 2, "--seed", 7, *STEADY, "--cluster", address, "--cluster-certs", certs)
        run = start_tournament(base, bots, *args)
        killed: list[str] = []
        try:
            for victim in ("lab-a", "lab-b", "lab-a", "lab-b"):
                stored = wait_for_games(run, db_file(base), min(12, count_games(db_file(base)) + 1), 120)
                pids = worker_pids(address, certs, 2)
                if stored >= 11:
                    break
                os.kill(run.pid, signal.SIGSTOP)  # no new task goes out until the killed worker is back
                try:
                    os.kill(pids[victim], signal.SIGKILL)  # the worker process; its nanny starts it again
                    killed.append(victim)
                    restarted(address, certs, victim, pids[victim])
                finally:
                    os.kill(run.pid, signal.SIGCONT)
            out, err = run.communicate(timeout=300)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 0, err
        assert "Traceback" not in err
        assert len(killed) >= 3 and set(killed) == {"lab-a", "lab-b"}, f"killed only {killed}"
        # While the workers live on: no bot of a killed worker is left, frozen or not.
        assert left_after(str(cache), 10) == [], "bot processes outlived the run"
    assert games(base) == reference  # every game once, as on this machine


def test_a_port_that_never_answers_and_a_scheduler_without_workers_are_one_line(
    tmp_path: Path, certs: Path
) -> None:
    bots = field(tmp_path / "bots")
    with socket.socket() as mute:  # accepts connections (the kernel does) and never says a word
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        address = f"tls://127.0.0.1:{mute.getsockname()[1]}"
        start = time.monotonic()
        out = tournament(tmp_path, bots, *STEADY, "--cluster", address, "--cluster-certs", certs)
        took = time.monotonic() - start
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1].startswith(
        f"arena: error: cannot reach the Dask scheduler at {address} within 10 s ("
    ), out.stderr
    assert "Traceback" not in out.stderr and took < 60

    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    with process(scheduler_args(certs, port), tmp_path / "scheduler.log"):
        with client(address, certs):
            pass  # it is up
        start = time.monotonic()
        lacking = rf"^no worker of the cluster at {address} offers game slots after 3 s: start workers with"
        with pytest.raises(ClusterError, match=lacking):
            with Tournament(db_file(tmp_path / "empty").parent, Settings(RULES)) as cup:
                cup.run(bots, 1, cluster=Cluster(address, certs=certs, workers_s=3))
        assert time.monotonic() - start < 30


def test_a_scheduler_killed_and_started_again_then_the_same_command_completes(
    tmp_path: Path, certs: Path, reference
) -> None:
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    env = {"ARENA_CACHE": str(tmp_path / "cache"), "ARENA_MACHINE": "lab-a"}
    base = tmp_path / "run"
    bots = field(base / "bots", delay=0.05)
    args = ("--rounds", 2, "--seed", 7, *STEADY, "--cluster", address, "--cluster-certs", certs)
    lab_a = [*worker_args(address, certs), "--name", "lab-a"]
    with process(scheduler_args(certs, port), tmp_path / "scheduler.log") as sched:
        with process(lab_a, tmp_path / "a.log", env) as worker:
            wait_workers(address, certs, 1)
            run = start_tournament(base, bots, *args)
            try:
                wait_for_games(run, db_file(base), 3, 120)
                os.killpg(sched.pid, signal.SIGKILL)
                _, err = run.communicate(timeout=120)
            finally:
                if run.poll() is None:
                    run.kill()
            assert run.returncode == 2, err
            lines = [line for line in err.splitlines() if "error" in line]
            assert lines == [err.splitlines()[-1]] and "Traceback" not in err, err
            assert " - distributed." not in err, err  # Dask's own log lines stay off the terminal
            assert lines[0].startswith(f"arena: error: the Dask scheduler at {address} is gone"), err
            stored = count_games(db_file(base))
            assert stored < 12
            worker.wait(timeout=120)  # as docs/lab.md says: a worker leaves with its scheduler
    with (
        process(scheduler_args(certs, port), tmp_path / "scheduler2.log"),
        process(lab_a, tmp_path / "a2.log", env),
    ):
        wait_workers(address, certs, 1, timeout=120)
        out = subprocess.run(
            [sys.executable, "-m", "arena", *map(str, run_args(base, bots, *args))],
            cwd=base, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert resumed(out) == (stored, 12 - stored)
    assert games(base) == reference
