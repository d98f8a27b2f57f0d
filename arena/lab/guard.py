"""A Dask preload for a lab's own `dask worker` and `dask scheduler` (`--preload arena.lab.guard`, as
docs/lab.md starts them): a process of the lab that would speak TLS without the class's certificates says so
in one line, with the flags it lacks, instead of dying in Dask's traceback.

Dask imports a preload as it builds the process's server (the nanny of `dask worker`, the scheduler), before
that server listens or connects: the check runs then, on the command line the process was started with and
Dask's own TLS configuration, and only in the process Dask's command line started (not in the worker
process a nanny starts, whose TLS the nanny hands it).

Then, as Dask starts the server (`dask_setup`: after its listeners, before it connects anywhere), every
connection of the process, accepted or opened, is read through arena/lab/wire.py: a message from a peer
whose certificate is neither the scheduler's nor the coordinator's must be plain data (msgpack, Dask's
msgpack serializer), checked in its frames before Dask decodes (and would unpickle) any of it, else the
connection is closed, whatever its op; a certificate in REVOKED (beside the process's own ca.pem, read at
every connection, on every machine) is refused at once. A worker and a nanny answer every operation as
plain data (`plainly`), so that the scheduler and the workers that read them refuse nothing of theirs.
Every connection the server accepts is also read through the role its
peer's certificate names (trust.py: an OU of its subject; the end of the common name of a certificate made
before roles): only the coordinator's may act as a Dask client. Every side is an allowlist, so that an
operation a later Dask adds, or one nobody thought of, is refused: at the scheduler a worker's certificate
may ask only what distributed's Worker and Nanny ask (WORKER_OPS: join, heartbeats, who has a key, its
batched stream's reports), and retire, unregister, heartbeat or report for (a batched stream's message
naming a `worker`: add-keys, task-finished...) only workers it registered itself; at a worker another
worker's certificate may only fetch a task's data (`get_data`, how the bots travel between machines); at a
nanny only its own worker may ask it to close. An operation refused closes the connection, with one
line in the server's log naming the peer.

At the scheduler, every worker that registers is told which machine it is (`certified`, in its Dask
`extra`, which replaces whatever the worker sent there): the machine its certificate names, else the IP it
connected from. The coordinator tells machines apart by it, never by what a worker says of itself: one
machine's several worker processes, whatever ARENA_MACHINE each claims, are one machine to it.

A scheduler with the guard answers the coordinator's GUARD_OP, so that `arena run --cluster` refuses one
started without it (`Cluster(guarded=True)`).

Importing it also sets arena's Dask settings in the process (background.py: Dask's profiler and timers that
nothing of arena reads, off or slower; never over one the lab set itself), before the scheduler reads them,
and in a nanny before it hands its configuration to the worker it starts.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.lab import background, wire
from arena.lab.trust import GUARD_OP, GUARDED, MACHINE_EXTRA, MACHINE_UNIT, REVOKED
from arena.lab.trust import ROLES as CERT_ROLES

log = logging.getLogger("arena")
# All a worker's certificate may ask of a scheduler (read from distributed's Worker and Nanny: every rpc they
# make of the scheduler and every message of the worker's batched stream); anything else, including any
# operation a later Dask adds, is refused.
WORKER_OPS = frozenset({
    "register-worker", "register_nanny",  # a worker and its nanny join (the first message of a connection)
    "heartbeat_worker", "who_has", "log_event",  # a worker's and a nanny's rpc to the scheduler
    "unregister", "retire_workers",  # a nanny's worker gone, a worker closing: only its own (OWN_ADDRESSES)
    # (a heartbeat too: a machine keeps alive, and reports the metrics of, only workers it registered)
    # the worker's batched stream (Scheduler's worker_handlers, the stealing extension's reply)
    "task-finished", "task-erred", "release-worker-data", "add-keys", "long-running", "reschedule",
    "keep-alive", "log-event", "worker-status-change", "request-refresh-who-has", "steal-response",
    "close-stream",
})  # fmt: skip
# The operations of WORKER_OPS that name workers, and the argument that names them: a certificate may name
# only workers it registered itself (with the class's shared worker.pem: any machine's)
OWN_ADDRESSES = {"unregister": "address", "retire_workers": "workers", "heartbeat_worker": "address"}
PEER_WORKER_OPS = frozenset({"get_data"})  # what a worker asks of another worker
OWN_WORKER_OPS = frozenset({"close_gracefully"})  # what a worker asks of its own nanny

ROLES = ("worker", "scheduler")
# What each role's command needs, as `--tls-...` flags or Dask's configuration (distributed.comm.tls.*)
FLAGS = ("--tls-ca-file", "--tls-cert", "--tls-key")


def role(argv: Sequence[str]) -> str | None:
    """'worker' or 'scheduler' if `argv` is Dask's command line for one, else None."""
    first = os.path.basename(argv[0]) if argv else ""
    if first in ("dask_worker.py", "dask-worker"):
        return "worker"
    if first in ("dask_scheduler.py", "dask-scheduler"):
        return "scheduler"
    if first == "dask" and len(argv) > 1 and argv[1] in ROLES:
        return argv[1]
    return None


def lacking(argv: Sequence[str], config: dict[str, object]) -> list[str]:
    """The TLS flags a lab process started with `argv` lacks ([]: it has them all, or it is not a TLS
    process of the lab). `config` is Dask's distributed.comm.tls, which stands in for the flags."""
    which = role(argv)
    if which is None:
        return []
    args = list(argv[2:] if os.path.basename(argv[0]) == "dask" else argv[1:])
    tls = any(a.startswith("tls://") for a in args) or _value(args, "--protocol") == "tls"
    if not tls:
        return []
    found = config.get(which)
    mine = found if isinstance(found, dict) else {}
    given = {
        "--tls-ca-file": config.get("ca-file"),
        "--tls-cert": mine.get("cert"),
        "--tls-key": mine.get("key"),
    }
    return [flag for flag in FLAGS if not given[flag] and _value(args, flag) is None]


def _value(args: list[str], flag: str) -> str | None:
    for n, arg in enumerate(args):
        if arg == flag and n + 1 < len(args):
            return args[n + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def refusal(argv: Sequence[str], missing: list[str]) -> str:
    """The one line a lab process without its certificates prints: docs/lab.md's command, with its flags."""
    which = role(argv) or "worker"
    files = {
        "--tls-ca-file": "certs/ca.pem",
        "--tls-cert": f"certs/{which}.pem",
        "--tls-key": f"certs/{which}.key",
    }
    wanted = " ".join(f"{flag} {files[flag]}" for flag in missing)
    return (
        f"arena: this dask {which} speaks TLS but has no {', '.join(missing)}: the lab's machines show the "
        f"class's certificates ('arena cluster-certs DIR' makes them); start it as docs/lab.md's "
        f"'Starting the scheduler and the workers' says, adding {wanted}"
    )


@dataclass(frozen=True, slots=True)
class Peer:
    """Who is at the other end of a connection, as its certificate says."""

    role: str  # scheduler, worker, coordinator; "" if it names none
    machine: str  # the machine of a machine's own worker certificate; "" for the class's shared one
    serial: str  # the certificate's serial number, in lower-case hex

    def __str__(self) -> str:
        return (
            f"a {self.role or 'roleless'} certificate"
            + (f" of {self.machine}" if self.machine else "")
            + (f" (serial {self.serial})")
        )


def peer(cert: dict[str, Any] | None) -> Peer:
    """The peer a certificate (as ssl's getpeercert() gives it) names."""
    if not cert:
        return Peer("", "", "")
    subject = [(k, v) for rdn in cert.get("subject", ()) for k, v in rdn]
    units = [str(v) for k, v in subject if k == "organizationalUnitName"]
    role = next((u for u in units if u in CERT_ROLES), "")
    if not role:  # a certificate made before roles: 'CLASS ROLE' in its common name
        common = next((str(v) for k, v in subject if k == "commonName"), "")
        role = next((r for r in CERT_ROLES if common.endswith(f" {r}")), "")
    machine = next((u.removeprefix(MACHINE_UNIT) for u in units if u.startswith(MACHINE_UNIT)), "")
    return Peer(role, machine, str(cert.get("serialNumber", "")).lower())


def own(path: str | None) -> Peer:
    """The peer this server's own certificate file names."""
    import ssl

    if not path:
        return Peer("", "", "")
    return peer(ssl._ssl._test_decode_cert(path))  # type: ignore[attr-defined]  # the stdlib's own reader


def revoked(ca_file: str | None) -> set[str]:
    """The machines and serials of REVOKED beside the authority's file (read at every connection)."""
    if not ca_file:
        return set()
    try:
        text = (Path(ca_file).parent / REVOKED).read_text(encoding="utf-8")
    except OSError:
        return set()
    return {line.split("#")[0].strip().lower() for line in text.splitlines()} - {""}


def allowed(kind: str, me: Peer, them: Peer) -> Callable[[str], bool] | None:
    """Which operations a server of `kind` (scheduler, worker, nanny) with certificate `me` takes from a
    peer `them`: None, all of them."""
    if them.role in ("scheduler", "coordinator"):
        return None
    if them.role != "worker":
        return lambda op: False
    if kind == "scheduler":
        return lambda op: op in WORKER_OPS
    if kind == "worker":
        return lambda op: op in PEER_WORKER_OPS
    mine = me.machine == them.machine  # a machine's own certificates; the shared one: any machine
    return lambda op: mine and op in OWN_WORKER_OPS


def refused(msg: object, may: Callable[[str], bool], them: Peer, joined: dict[str, Peer]) -> str | None:
    """The operation of `msg` (one message, or a batched stream's list of them) that `them` may not ask,
    else None. `joined` is the scheduler's record of which certificate first registered each worker's
    address: that address is its machine's for as long as the scheduler runs, so that another machine's
    certificate can neither register it (taking it while its machine is away, to retire or unregister
    that machine's worker once it is back) nor, by an OWN_ADDRESSES operation, retire or unregister the
    worker there. Machines are told apart by their own certificates (`--machine NAME`); the
    class's shared one names none, and is one machine to this record."""
    for one in msg if isinstance(msg, (list, tuple)) else (msg,):
        if not isinstance(one, dict) or "op" not in one:
            continue  # a reply inside an operation already let through
        op = str(one["op"])
        if not may(op):
            return op
        if op == "register-worker" and isinstance(one.get("address"), str):
            owner = joined.setdefault(one["address"], them)
            if owner.machine != them.machine:
                return f"register-worker of {one['address']}, an address {owner} registered"
        if op in WORKER_OPS and "worker" in one:  # a report of its batched stream, for another worker: Dask's
            # handler takes the stream's own worker unless the message names one (add-keys would list that
            # worker as holding keys it does not, task-finished finish its tasks)
            named = one["worker"]
            if not isinstance(named, str) or named not in joined or joined[named].machine != them.machine:
                return f"{op} for a worker it did not register"
        if op in OWN_ADDRESSES:
            named = one.get(OWN_ADDRESSES[op])
            addresses = [named] if isinstance(named, str) else named
            others = {k: v for k, v in one.items() if k in ("names", "n", "memory_ratio") and v is not None}
            if (
                not isinstance(addresses, (list, tuple, set))
                or not addresses
                or others  # workers chosen by name or by the scheduler (retire_workers), not by address
                or any(a not in joined or joined[a].machine != them.machine for a in addresses)
            ):
                return f"{op} of a worker it did not register"
    return None


def certified(them: Peer, peer_address: str) -> str:
    """The machine a worker is, as a peer cannot choose it: its own certificate's machine, else (the
    class's shared certificate) the IP its connection came from."""
    if them.machine:
        return f"certified {them.machine}"
    from distributed.comm.addressing import get_address_host

    try:
        return f"from {get_address_host(peer_address)}"
    except (ValueError, TypeError):
        return f"from {peer_address}"


def stamp(msg: object, machine: str) -> None:
    """Each register-worker of `msg` told the machine it is (`certified`): its `extra` is replaced, so that
    no worker can name its own machine there (nor shadow a field of the scheduler's worker info)."""
    for one in msg if isinstance(msg, (list, tuple)) else (msg,):
        if isinstance(one, dict) and one.get("op") == "register-worker":
            one["extra"] = {MACHINE_EXTRA: machine}


@dataclass(frozen=True, slots=True)
class Authority:
    """Where a guarded server's ca.pem is (its REVOKED beside it, read at every connection), and which
    server it is, for its messages."""

    ca_file: str | None = None
    kind: str = "process"  # the server this process runs: scheduler, worker, nanny


def judge(authority: Authority) -> wire.Judge:
    """How this lab process reads a connection's peer (wire.py): a revoked certificate refused, the
    scheduler's and the coordinator's trusted, any other's read as plain data only."""

    def verdict(cert: dict[str, Any] | None) -> str | None:
        them = peer(cert)
        gone = revoked(authority.ca_file)
        if them.serial in gone or (them.machine and them.machine.lower() in gone):
            return f"{them} is revoked (read by the {authority.kind})"
        return wire.TRUSTED if them.role in ("scheduler", "coordinator") else None

    return verdict


def plainly(msg: object) -> None:
    """A worker's or a nanny's answer to `msg` (one operation asked of it, not a stream's list) written
    as plain data, whoever asked (Dask's msgpack serializer): the scheduler reads nothing else from it
    (wire.py), and all arena keeps in Dask is plain (results, shipments, what Client.run returns)."""
    if isinstance(msg, dict) and "op" in msg:
        msg["serializers"] = sorted(wire.SERIALIZERS)


def dask_setup(server: Any) -> None:
    """Dask's hook, as the server starts (its listeners made): every connection it accepts guarded."""
    from distributed import Nanny, Scheduler, Worker

    kind = next(
        (
            k
            for k, t in (("scheduler", Scheduler), ("nanny", Nanny), ("worker", Worker))
            if isinstance(server, t)
        ),
        None,
    )
    if kind is None or server.security is None or not server.security.require_encryption:
        return
    security = server.security
    # Before this server connects anywhere (Dask starts a preload after its listeners, before it
    # registers): what it reads of its peers (wire.py), connections it accepted before now closed
    authority = Authority(security.tls_ca_file or _config_ca(), kind)
    wire.install(judge(authority), server.listeners)
    for listener in server.listeners:
        listener.abort_handshaking_comms()
    for comm in list(getattr(server, "_comms", {})):
        comm.abort()
    me = own(security.tls_scheduler_cert if kind == "scheduler" else security.tls_worker_cert)
    joined: dict[str, Peer] = {}  # this server's, for as long as it lives
    if kind == "scheduler":  # `arena run --cluster` asks (a worker's certificate may not: not in WORKER_OPS)
        server.handlers[GUARD_OP] = guarded
    for listener in server.listeners:
        listener.comm_handler = _guarded(listener.comm_handler, kind, me, security.tls_ca_file, joined)


def guarded() -> str:
    """A guarded scheduler's answer to GUARD_OP."""
    return GUARDED


def _guarded(
    handler: Callable[[Any], Any], kind: str, me: Peer, ca_file: str | None, joined: dict[str, Peer]
) -> Callable[[Any], Any]:
    from distributed.comm.core import CommClosedError

    async def handle(comm: Any) -> None:
        them = peer(comm.extra_info.get("peercert"))
        gone = revoked(ca_file)
        if them.serial in gone or (them.machine and them.machine.lower() in gone):
            log.warning(f"arena: {kind} refused {comm.peer_address}: {them} is revoked")
            comm.abort()
            return
        may = allowed(kind, me, them)
        if True:  # every connection: the scheduler stamps, a worker and a nanny answer plainly
            read = comm.read
            machine = certified(them, comm.peer_address)

            async def guarded_read(deserializers: Any = None) -> Any:
                msg = await read(deserializers)
                op = None if may is None else refused(msg, may, them, joined)
                if op is not None:
                    log.warning(f"arena: {kind} refused {op!r} from {comm.peer_address}, {them}")
                    comm.abort()
                    raise CommClosedError(f"arena: {them} may not ask {op!r} of a {kind}")
                if kind == "scheduler":
                    stamp(msg, machine)
                if kind != "scheduler":
                    plainly(msg)
                return msg

            comm.read = guarded_read
        await handler(comm)

    return handle


def _config_ca() -> str | None:
    import dask

    found = dask.config.get("distributed.comm.tls.ca-file", default=None)
    return str(found) if found else None


def _check() -> None:
    import dask

    missing = lacking(sys.argv, dask.config.get("distributed.comm.tls", default={}) or {})
    if missing:
        sys.stderr.write(refusal(sys.argv, missing) + "\n")
        sys.stderr.flush()
        os._exit(2)  # Dask's own start-up would go on to a traceback; nothing of it has started yet


_check()
background.quiet()
