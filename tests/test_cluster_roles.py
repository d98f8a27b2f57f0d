"""Roles in the certificates, on real `dask scheduler` and `dask worker` processes over TLS on 127.0.0.1
started as docs/lab.md says (with arena.lab.guard): a worker's certificate used as a Dask client can
neither run code on the workers (Client.run) nor on the scheduler (run_on_scheduler), nor ask a worker
directly; the coordinator's can. A machine's own certificate (`arena cluster-certs DIR --machine NAME`)
joins, and once its name is in the scheduler's `revoked` list it no longer does. An address is the machine's
whose certificate first registered it: another machine's worker cannot take it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_cluster_lab import (
    WORKER,
    client,
    free_port,
    process,
    scheduler_args,
    tls,
    wait_workers,
    worker_args,
)

from arena.lab import guard, trust

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow


def as_client(certs: Path, role: str) -> distributed.Security:
    return distributed.Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_client_cert=str(certs / f"{role}.pem"),
        tls_client_key=str(certs / f"{role}.key"),
        require_encryption=True,
    )


def refused(call) -> bool:  # type: ignore[no-untyped-def]
    try:
        call()
    except Exception:
        return True
    return False


def test_only_the_coordinators_certificate_acts_as_a_client_and_a_revoked_machine_never_joins(
    tmp_path: Path, certs: Path
) -> None:
    mine = tmp_path / "certs"
    shutil.copytree(certs, mine)
    shutil.copytree(trust.authority(certs), trust.authority(mine))  # its key, apart
    out = subprocess.run(
        [sys.executable, "-m", "arena", "cluster-certs", str(mine), "--machine", "lab-3"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (mine / "worker-lab-3.pem").is_file() and (mine / "worker-lab-3.key").stat().st_mode & 0o077 == 0
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"ARENA_CACHE": str(tmp_path / "cache")}
    with (
        process(scheduler_args(mine, port), logs / "scheduler.log"),
        process([*worker_args(address, mine), "--name", "lab-a"], logs / "a.log", env),
        process([*worker_args(address, mine, "worker-lab-3"), "--name", "lab-3"], logs / "b.log", env),
    ):  # fmt: skip
        wait_workers(address, mine, 2)
        with client(address, mine) as c:  # the coordinator's certificate: a client
            assert len(c.run(os.getpid)) == 2
            assert c.run_on_scheduler(os.getpid) > 0
            workers = list(c.scheduler_info(n_workers=-1)["workers"])

        stolen = as_client(mine, "worker")  # a lab machine's certificate, as a client
        marker = tmp_path / "owned"

        def own_it() -> None:
            marker.write_text("ran")

        def run_everywhere() -> None:
            with distributed.Client(address, security=stolen, set_as_default=False, timeout=10) as c:
                c.run(own_it)

        def run_on_scheduler() -> None:
            with distributed.Client(address, security=stolen, set_as_default=False, timeout=10) as c:
                c.run_on_scheduler(own_it)

        def ask_a_worker() -> None:  # straight to a worker, past the scheduler
            async def ask() -> None:
                args = stolen.get_connection_args("client")
                async with distributed.rpc(workers[0], connection_args=args) as r:
                    await r.run(function=distributed.protocol.pickle.dumps(own_it))

            asyncio.run(ask())

        def ask_the_scheduler(op: str) -> Callable[[], None]:  # past a client: its rpc, as a worker would
            async def ask() -> None:
                args = stolen.get_connection_args("client")
                async with distributed.rpc(address, connection_args=args) as r:
                    await getattr(r, op)()

            return lambda: asyncio.run(ask())

        assert refused(run_everywhere) and refused(run_on_scheduler) and refused(ask_a_worker)
        # operations no denylist of client operations named: every task's key, machine and time, the
        # versions of every machine, and a stream of a client's messages (submit or cancel tasks)
        for op in ("get_task_stream", "versions", "connection_stream"):
            assert refused(ask_the_scheduler(op)), op
        assert not marker.exists(), "a worker's certificate ran code in the lab"
        said = (logs / "scheduler.log").read_text(errors="replace")
        assert "arena: scheduler refused 'register-client'" in said, said[-3000:]
        assert "arena: scheduler refused 'get_task_stream'" in said and "refused 'connection_stream'" in said

        # lab-3 revoked: its worker, started again, is refused by the scheduler and never joins
        (mine / trust.REVOKED).write_text("lab-3  # its laptop was lost\n", encoding="utf-8")
        again = [*worker_args(address, mine, "worker-lab-3"), "--name", "lab-3b", "--death-timeout", "15"]
        with process(again, logs / "c.log", env):
            deadline = time.monotonic() + 60  # its attempt refused (it tries again until its death timeout)
            while "is revoked" not in (said := (logs / "scheduler.log").read_text(errors="replace")):
                assert time.monotonic() < deadline, said[-3000:]
                time.sleep(0.1)
            with client(address, mine) as c:
                names = {str(w["name"]) for w in c.scheduler_info(n_workers=-1)["workers"].values()}
            assert "lab-3b" not in names, names


def test_a_certificate_says_its_role_and_machine() -> None:
    units = ((("organizationalUnitName", "worker"),), (("organizationalUnitName", "machine lab-3"),))
    cert = {"subject": ((("commonName", "arena class worker lab-3"),), *units), "serialNumber": "AB12"}
    assert guard.peer(cert) == guard.Peer("worker", "lab-3", "ab12")
    old = {"subject": ((("commonName", "arena class coordinator"),),), "serialNumber": "01"}
    assert guard.peer(old).role == "coordinator"  # made before roles: the role ends its common name
    assert guard.allowed("scheduler", guard.Peer("scheduler", "", ""), guard.peer(old)) is None
    worker = guard.allowed("scheduler", guard.Peer("scheduler", "", ""), guard.peer(cert))
    assert worker is not None and not worker("register-client") and not worker("run_function")
    assert worker("register-worker") and worker("heartbeat_worker")
    at_worker = guard.allowed("worker", guard.Peer("worker", "lab-a", ""), guard.peer(cert))
    assert at_worker is not None and at_worker("get_data") and not at_worker("run")
    at_nanny = guard.allowed("nanny", guard.Peer("worker", "lab-a", ""), guard.peer(cert))
    assert at_nanny is not None and not at_nanny("close_gracefully")  # not its own machine's worker


def test_a_worker_certificate_may_only_do_what_a_worker_does_and_name_only_its_own_workers() -> None:
    lab_a, lab_b = guard.Peer("worker", "lab-a", "0a"), guard.Peer("worker", "lab-b", "0b")
    may = guard.allowed("scheduler", guard.Peer("scheduler", "", ""), lab_a)
    assert may is not None
    joined: dict[str, guard.Peer] = {}
    mine = "tls://10.0.0.1:4000"
    assert guard.refused({"op": "register-worker", "address": mine}, may, lab_a, joined) is None
    joined["tls://10.0.0.2:4000"] = lab_b
    stream = [{"op": "task-finished", "key": "k"}, {"op": "update-graph", "client": "c"}]  # a batched stream
    assert guard.refused(stream, may, lab_a, joined) == "update-graph"
    assert guard.refused({"op": "versions"}, may, lab_a, joined) == "versions"  # not named anywhere: refused
    assert guard.refused({"op": "retire_workers", "workers": [mine]}, may, lab_a, joined) is None
    for sly in ({"names": ["lab-b"]}, {"n": 3}, {"workers": []}, {"workers": [mine], "names": ["lab-b"]}):
        assert guard.refused({"op": "retire_workers", **sly}, may, lab_a, joined), sly  # by name or count
    beat = {"op": "heartbeat_worker", "address": "tls://10.0.0.2:4000", "metrics": {}}  # lab-b's worker
    assert guard.refused(beat, may, lab_a, joined) == "heartbeat_worker of a worker it did not register"
    assert guard.refused(beat, may, lab_b, joined) is None
    other = {"op": "unregister", "address": "tls://10.0.0.2:4000"}
    assert guard.refused(other, may, lab_a, joined) == "unregister of a worker it did not register"
    # its stream's reports are its own worker's: one naming another's (Dask takes the name in the message
    # over the stream's) is refused, whether it claims keys there or finishes that worker's tasks
    for op in ("add-keys", "task-finished", "release-worker-data", "long-running", "reschedule"):
        claim = {"op": op, "worker": "tls://10.0.0.2:4000", "keys": ["Shipment-x-1"], "key": "k"}
        assert guard.refused([claim], may, lab_a, joined) == f"{op} for a worker it did not register"
        assert guard.refused([claim], may, lab_b, joined) is None
        assert guard.refused([{**claim, "worker": "tls://10.0.0.9:1"}], may, lab_b, joined), op  # nobody's
    assert guard.refused([{"op": "add-keys", "keys": ["k"]}], may, lab_a, joined) is None  # its own
    assert guard.refused(other, may, lab_b, joined) is None
    # an address is the machine's that first registered it: another's claim is refused, its own taken again
    claim = guard.refused({"op": "register-worker", "address": "tls://10.0.0.2:4000"}, may, lab_a, joined)
    assert claim is not None and claim.startswith("register-worker of tls://10.0.0.2:4000, an address ")
    assert "lab-b" in claim and joined["tls://10.0.0.2:4000"] == lab_b
    assert guard.refused({"op": "register-worker", "address": mine}, may, lab_a, joined) is None
    reissued = guard.Peer("worker", "lab-a", "1a")  # the same machine's new certificate
    assert guard.refused({"op": "unregister", "address": mine}, may, reissued, joined) is None


def test_a_machine_cannot_take_the_address_of_another_that_joined_before(tmp_path: Path, certs: Path) -> None:
    """lab-3's worker joins and leaves (restarting, say); a worker with lab-4's certificate that gives
    lab-3's address as its own (--contact-address) is refused at the scheduler and never takes it."""
    mine = tmp_path / "certs"
    shutil.copytree(certs, mine)
    shutil.copytree(trust.authority(certs), trust.authority(mine))  # its key, apart
    for name in ("lab-3", "lab-4"):
        trust.make_machine(mine, name)
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    taken = f"tls://127.0.0.1:{free_port()}"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"ARENA_CACHE": str(tmp_path / "cache")}
    rogue = [*WORKER, address, "--no-nanny", "--listen-address", "tls://127.0.0.1:0",
             "--contact-address", taken, "--nthreads", "1", "--resources", "games=1",
             "--dashboard-address", "127.0.0.1:0", "--death-timeout", "60",
             *tls(mine, "worker-lab-4")]  # fmt: skip
    with process(scheduler_args(mine, port), logs / "scheduler.log"):
        lab3 = [*worker_args(address, mine, "worker-lab-3"), "--worker-port", taken.rsplit(":", 1)[1]]
        with process(lab3, logs / "lab-3.log", env):
            assert taken in wait_workers(address, mine, 1)
        with client(address, mine) as c:
            deadline = time.monotonic() + 60
            while c.scheduler_info(n_workers=-1)["workers"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not c.scheduler_info(n_workers=-1)["workers"], "lab-3's worker never left"
            with process(rogue, logs / "rogue.log", env) as proc:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and proc.poll() is None:
                    if "refused 'register-worker of" in (logs / "scheduler.log").read_text(errors="replace"):
                        break
                    time.sleep(0.2)
                said = (logs / "scheduler.log").read_text(errors="replace")
                claim = f"refused 'register-worker of {taken}, an address a worker certificate of lab-3"
                assert claim in said and "a worker certificate of lab-4" in said, (
                    said[-2000:] + (logs / "rogue.log").read_text(errors="replace")[-2000:]
                )
                assert taken not in c.scheduler_info(n_workers=-1)["workers"]


def test_cluster_certs_keeps_the_authoritys_key_apart_from_the_folder_the_coordinator_reads(
    tmp_path: Path,
) -> None:
    """`arena cluster-certs certs` writes ca.key into certs.authority (owner only), `--machine` signs with it
    there, and the coordinator refuses, in one line, a certificates folder that holds a ca.key."""
    certs = tmp_path / "certs"
    made = subprocess.run([sys.executable, "-m", "arena", "cluster-certs", str(certs)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr
    key = tmp_path / "certs.authority" / "ca.key"
    assert key.is_file() and not (certs / "ca.key").exists()
    assert key.stat().st_mode & 0o077 == 0 and key.parent.stat().st_mode & 0o077 == 0
    assert f"keep {key} to yourself" in made.stderr
    args = [sys.executable, "-m", "arena", "cluster-certs", str(certs), "--machine", "lab-5"]
    machine = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert machine.returncode == 0 and (certs / "worker-lab-5.pem").is_file(), machine.stderr
    trust.security(certs)  # the coordinator reads the folder as it is
    shutil.copy(key, certs / "ca.key")  # as an older arena left it
    with pytest.raises(trust.TrustError, match=r"ca\.key is in the folder this machine reads") as refused:
        trust.security(certs)
    assert "\n" not in str(refused.value) and str(key.parent) in str(refused.value)
