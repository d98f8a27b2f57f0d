"""Hostile peers at the wire of a real guarded TLS lab (`dask scheduler` and `dask worker` with its nanny,
started as the README says, on 127.0.0.1): a pickled object whose unpickling creates a marker file is sent
by a worker's certificate (the class's shared one), a revoked machine's and a rogue machine's (signed by
the class, never revoked), under every operation the installed Dask knows (asked of the scheduler, the
worker and the nanny themselves) and one it does not, as Dask's `ToPickle` and as a pickle-serialized
object, in the handshake too; and a rogue worker answers `get_data` with one when the coordinator's client
asks for its task's result through the scheduler. No marker ever appears: nothing of theirs is unpickled
anywhere (arena/lab/wire.py reads their frames first and closes the connection)."""

from __future__ import annotations

import asyncio
import os
import shutil
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_cluster_lab
from test_cluster_lab import WORKER, client, free_port, give, process, scheduler_args, tls, worker_args

from arena.lab import trust, wire

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow
mode, shared = test_cluster_lab.mode, test_cluster_lab.shared  # root, and an ordinary user (uid 65534)


class Marker:
    """Unpickled, it creates its file (open(path, 'w')): the code of a pickle's sender, run."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (self.path, "w"))


def ops(c: Any) -> dict[str, list[str]]:
    """Every operation the scheduler, a worker and a nanny of the installed Dask take (asked of them by
    the coordinator's certificate, which may)."""

    def known(dask_scheduler: Any = None, dask_worker: Any = None) -> list[str]:
        server = dask_scheduler or dask_worker
        names = set(server.handlers) | set(getattr(server, "stream_handlers", {}))
        return sorted(names | set(getattr(server, "worker_handlers", {})))

    return {
        "scheduler": c.run_on_scheduler(known),
        "worker": next(iter(c.run(known).values())),
        "nanny": next(iter(c.run(known, nanny=True).values())),
    }


async def attack(address: str, security: Any, names: list[str], markers: Path, tag: str) -> None:
    """Each of `names` sent to `address` with a pickled Marker, on a connection of its own; the handshake
    too; each connection read until its answer or its close."""
    from distributed.comm import connect
    from distributed.protocol import Serialize, ToPickle

    args = security.get_connection_args("client")

    async def one(n: int, message: Any, handshake: dict[str, Any] | None = None) -> None:
        try:
            comm = await connect(address, timeout=10, handshake_overrides=handshake, **args)
        except Exception:
            return  # refused in the handshake
        try:
            await comm.write(message)
            await asyncio.wait_for(comm.read(), 10)
        except Exception:
            pass
        finally:
            comm.abort()

    sends = [one(0, {"op": "identity"}, {"x": ToPickle(Marker(markers / f"{tag}-handshake"))})]
    for n, op in enumerate([*names, "arena-no-such-op"]):
        sends.append(one(n, {"op": op, "x": ToPickle(Marker(markers / f"{tag}-{op}-topickle"))}))
        sends.append(one(n, {"op": op, "x": Serialize(Marker(markers / f"{tag}-{op}-serialized"))}))
        sends.append(one(n, [{"op": op, "x": ToPickle(Marker(markers / f"{tag}-{op}-stream"))}]))
    for start in range(0, len(sends), 16):  # a few at a time: the machine is shared
        await asyncio.gather(*sends[start : start + 16])


def security(certs: Path, role: str) -> Any:
    return distributed.Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_client_cert=str(certs / f"{role}.pem"),
        tls_client_key=str(certs / f"{role}.key"),
        require_encryption=True,
    )


@pytest.fixture
def lab(tmp_path: Path, certs: Path, mode: str, shared: Path) -> Iterator[tuple[str, Path, Path]]:
    """A guarded TLS lab of one worker (with its nanny), run by root or (mode 'user') by an ordinary user:
    its address, certificates (lab-3, revoked; lab-9, a rogue machine's, not) and logs."""
    mine = shared / "certs"
    shutil.copytree(certs, mine)
    shutil.copytree(trust.authority(certs), trust.authority(mine))  # its key, apart
    for name in ("lab-3", "lab-9"):
        trust.make_machine(mine, name)
    (mine / trust.REVOKED).write_text("lab-3\n", encoding="utf-8")
    give(mine, mode)
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"ARENA_CACHE": str(shared / "cache"), "HOME": str(shared)}
    user = mode == "user"
    with (
        process(scheduler_args(mine, port), logs / "scheduler.log", {"HOME": str(shared)}, user),
        process(worker_args(address, mine), logs / "worker.log", env, user),
    ):
        with client(address, mine) as c:
            c.wait_for_workers(1, timeout=90)
            uid = 65534 if user else os.getuid()
            ran_as = {
                c.run_on_scheduler(os.getuid),
                *c.run(os.getuid).values(),
                *c.run(os.getuid, nanny=True).values(),
            }
            assert ran_as == {uid}, ran_as
        yield address, mine, logs


def test_no_pickle_of_a_lab_machine_or_a_stranger_runs_at_the_scheduler_a_worker_or_a_nanny(
    shared: Path, lab: tuple[str, Path, Path]
) -> None:
    address, certs, logs = lab
    with client(address, certs) as c:
        known = ops(c)
        (worker, info), *_ = c.scheduler_info(n_workers=-1)["workers"].items()
    assert {"register-worker", "run_function", "gather"} <= set(known["scheduler"]), known["scheduler"]
    assert {"get_data", "run"} <= set(known["worker"]) and "kill" in known["nanny"], known
    targets = {"scheduler": address, "worker": worker, "nanny": info["nanny"]}
    markers = shared / "markers"  # where the lab's processes could write, were they to run a marker
    markers.mkdir(mode=0o777)
    markers.chmod(0o777)
    for role in ("worker", "worker-lab-3", "worker-lab-9"):
        for kind, where in targets.items():
            asyncio.run(attack(where, security(certs, role), known[kind], markers, f"{role}-at-{kind}"))
    time.sleep(1)  # an answer written before the code it ran had ended (none should have)
    ran = sorted(p.name for p in markers.iterdir())
    assert not ran, f"{len(ran)} pickles ran, e.g. {ran[:10]}"
    said = (logs / "scheduler.log").read_text(errors="replace")
    assert "is revoked" in said and "sent an object marked __Pickled__" in said, said[-3000:]
    assert "sent an object serialized by 'pickle'" in (logs / "worker.log").read_text(errors="replace")
    with client(address, certs) as c:  # and the lab still plays
        assert c.submit(sum, [1, 2], pure=False).result(timeout=60) == 3


def test_a_revoked_machine_is_refused_at_a_worker_and_a_nanny_as_at_the_scheduler(
    lab: tuple[str, Path, Path],
) -> None:
    """lab-3 is in REVOKED beside the lab's ca.pem: a worker no longer gives it a task's data (a machine
    not revoked, lab-9, still fetches it as a worker does), and the nanny closes its connection."""
    address, certs, logs = lab
    c = client(address, certs)
    held = c.submit(str, "held", key="arena-held", pure=False)  # kept while this test asks for it
    assert held.result(timeout=60) == "held"
    ((worker, info),) = c.scheduler_info(n_workers=-1)["workers"].items()

    async def ask(role: str, where: str, op: str, **kwargs: Any) -> Any:
        args = security(certs, role).get_connection_args("client")
        async with distributed.rpc(where, connection_args=args, deserializers=["msgpack"]) as r:
            return await getattr(r, op)(**kwargs)

    try:
        got = asyncio.run(ask("worker-lab-9", worker, "get_data", keys=["arena-held"], who=None))
        assert got["status"] == "OK" and got["data"] == {"arena-held": "held"}, got
        with pytest.raises(Exception):  # noqa: B017 (the connection closed: whatever Dask makes of it)
            asyncio.run(ask("worker-lab-3", worker, "get_data", keys=["arena-held"], who=None))
        with pytest.raises(Exception):  # noqa: B017
            asyncio.run(ask("worker-lab-3", info["nanny"], "close_gracefully"))
    finally:
        c.close()
    said = (logs / "worker.log").read_text(errors="replace")
    for kind in ("worker", "nanny"):
        assert "of lab-3 (serial" in said and f"is revoked (read by the {kind})" in said, said[-3000:]


ROGUE = """
from distributed.protocol import Serialize, ToPickle


class Marker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def dask_setup(worker):
    async def get_data(comm, keys, who=None, serializers=None):
        data = {{k: (ToPickle if "topickle" in str(k) else Serialize)(Marker({marker!r} + "-" + str(k)))
                for k in keys}}
        await comm.write({{"status": "OK", "data": data}})
        await comm.read()  # its "OK"
        return "dont-reply"

    worker.handlers["get_data"] = get_data
"""


def test_a_rogue_workers_pickled_get_data_runs_nowhere_not_at_the_coordinator(
    tmp_path: Path, shared: Path, lab: tuple[str, Path, Path]
) -> None:
    """A rogue machine (its own certificate, not revoked, no guard) answers get_data with pickles; the
    coordinator's client (as arena's Cluster makes it) asks for its tasks' results through the scheduler."""
    from arena.lab import Cluster

    address, certs, logs = lab
    markers = shared / "markers"  # where the lab's processes could write, were they to run a marker
    markers.mkdir(mode=0o777)
    markers.chmod(0o777)
    (tmp_path / "rogue").mkdir()
    (tmp_path / "rogue" / "rogue_preload.py").write_text(
        textwrap.dedent(ROGUE.format(marker=str(markers / "rogue"))), encoding="utf-8"
    )
    env = {"PYTHONPATH": str(tmp_path / "rogue") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    rogue = [*WORKER, address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny", "--name", "rogue",
             "--dashboard-address", "127.0.0.1:0", "--preload", "rogue_preload",
             *tls(certs, "worker-lab-9")]  # fmt: skip
    with process(rogue, logs / "rogue.log", env):
        with client(address, certs) as c:
            c.wait_for_workers(2, timeout=90)
            there = [a for a, w in c.scheduler_info(n_workers=-1)["workers"].items() if w["name"] == "rogue"]
        assert there, (logs / "rogue.log").read_text(errors="replace")[-2000:]
        c = Cluster(address, certs=certs, connect_s=30)._connect()
        # the scheduler refuses the rogue's answer at once and Dask asks again until the client gives up:
        # the client waits a few seconds, then the test waits for the refusal of this form in the log
        refusals = {"topickle": "sent an object marked __Pickled__", "serialized": "serialized by 'pickle'"}
        try:
            for form, refusal in refusals.items():
                future = c.submit(str, form, key=f"arena-{form}", workers=there, pure=False)
                deadline = time.monotonic() + 60
                while future.status == "pending" and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert future.status == "finished", future.status
                with pytest.raises(Exception):  # noqa: B017 (whatever Dask makes of a closed connection)
                    future.result(timeout=3)
                deadline = time.monotonic() + 60
                while refusal not in (said := (logs / "scheduler.log").read_text(errors="replace")):
                    assert time.monotonic() < deadline, said[-3000:]
                    time.sleep(0.1)
        finally:
            c.close(timeout=10)
    ran = sorted(p.name for p in markers.iterdir())
    assert not ran, f"pickles of a rogue worker ran: {ran}"


def test_a_message_is_plain_data_or_refused_before_any_of_it_is_decoded() -> None:
    from distributed.protocol import Serialize, ToPickle, dumps, to_serialize

    plain = dumps({"op": "get_data", "data": {"k": to_serialize(("bot", "ab", "bot.py", (("a", 1, b"x"),)))}},
                  serializers=["msgpack"])  # fmt: skip
    wire.check(plain)
    wire.check(dumps({"op": "heartbeat_worker", "metrics": {"cpu": 1.5}, "keys": ("a", "b")}))
    for evil in (ToPickle(1), Serialize(1), to_serialize(b"bytes")):  # "dask": a pickled type
        with pytest.raises(wire.NotPlain):
            wire.check(dumps({"op": "x", "v": evil}))
    wire.check(dumps({"op": "x", "note": "a word such as __Pickled__ in a text is only text"}))
    with pytest.raises(wire.NotPlain, match="not msgpack"):
        wire.check([b"\xc1__Pickled__"])  # a mark's bytes, and not msgpack
    forged = dumps({"op": "x", "v": to_serialize("s")}, serializers=["msgpack"])
    forged[0] = forged[0].replace(b"__Serialized__\x01", b"__Serialized__\x07")
    with pytest.raises(wire.NotPlain, match="at frame 7"):
        wire.check(forged)
