"""What arena asks of Dask, apart from any run: the import, quiet logs, the scheduler's view of its workers
and of a task, and a finished task's answer as plain data. Dask is imported only when a cluster is used."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.tournament.backend import Machine

INSTALL = 'the cluster back end needs Dask, which is not installed here: pip install "arena[cluster]"'


class ClusterError(RuntimeError):
    """A cluster that cannot play the games as asked; the message is one line saying why and what to do."""


def distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError(INSTALL) from None
    return distributed


@contextlib.contextmanager
def dask_quiet() -> Iterator[None]:
    """Dask's own log lines kept off the terminal while this side plays (restored after): Dask writes its
    retries and a lost scheduler's chained tracebacks to stderr, where the teacher is to read one line that
    says what happened and what to do (a ClusterError)."""
    tops = ("distributed", "tornado", "bokeh", "asyncio")
    known = logging.Logger.manager.loggerDict
    # Dask gives several of its loggers a handler of their own (distributed.client has one, too)
    loggers = [logging.getLogger(name) for name in tops]
    loggers += [
        lg
        for name, lg in list(known.items())
        if isinstance(lg, logging.Logger) and lg.handlers and name.split(".")[0] in tops and lg not in loggers
    ]
    before = [(lg, lg.handlers, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.handlers = [logging.NullHandler()]
        lg.propagate = False
    try:
        yield
    finally:
        for lg, handlers, propagate in before:
            lg.handlers = handlers
            lg.propagate = propagate


def line(text: str, most: int = 300) -> str:
    """A worker's words as one bounded line (it may be hostile)."""
    one = " ".join(text.split())
    return one if len(one) <= most else one[: most - 1] + "…"


UNKNOWN = "an unknown worker"


def where(client: Any, futures: Sequence[Any]) -> dict[str, str]:
    """The address of the worker that holds each finished task's result, as the scheduler knows it (not
    as the worker says), by task key: one question for all the tasks that came back at once (a lab of
    many machines has several at a time), where one each cost a round trip to the scheduler a task."""
    held: dict[str, str] = {}
    with contextlib.suppress(Exception):
        for key, holders in client.who_has(list(futures)).items():
            if holders:
                held[str(key)] = str(holders[0])
    return held


def answer(future: Any) -> dict[str, Any] | str:
    """A finished task's answer as plain data, or why it is not one."""
    try:
        text = future.result(timeout=30)
    except Exception as e:
        return f"its answer is not arena's plain data (an older arena?): {type(e).__name__}"
    if not isinstance(text, str):
        return f"its answer is a {type(text).__name__}, not arena's JSON text (an older arena?)"
    try:
        said = json.loads(text)
    except ValueError:
        return "its answer is not JSON"
    return said if isinstance(said, dict) else "its answer is not a JSON object"


def machine(data: dict[str, Any], address: str) -> Machine:
    """A worker's account of itself, its address the scheduler's."""
    from arena.tournament.backend import Machine

    kinds = {"host": str, "cores": int, "slots": int, "sandbox": bool, "cgroups": bool, "version": str}
    for name, kind in kinds.items():
        if type(data[name]) is not kind:
            raise TypeError(f"its {name} is not a {kind.__name__}")
    notes = tuple(line(str(n)) for n in data["notes"])
    host = line(data["host"], 80) or address
    return Machine(
        address, host, data["cores"], data["slots"], data["sandbox"], data["cgroups"], notes, data["version"]
    )


def knock(address: str, seconds: float) -> None:
    """Open and close a TCP connection to a tcp:// or tls:// address (OSError if nobody listens there)."""
    at = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    if at.scheme in ("tcp", "tls") and at.hostname:
        socket.create_connection((at.hostname, at.port or 8786), timeout=seconds).close()


@dataclass(frozen=True, slots=True)
class Listed:
    """A worker as the scheduler lists it: its game slots, its Dask id (a worker started again at the same
    address is another worker, to greet again), and the machine the guard told it it is (trust.MACHINE_EXTRA:
    'certified NAME' or 'from IP'; "" where the scheduler runs without the guard)."""

    slots: int
    id: str
    machine: str


def game_workers(client: Any) -> dict[str, Listed]:
    """The cluster's workers that offer game slots, by address."""
    from arena.lab.trust import MACHINE_EXTRA
    from arena.lab.workers import RESOURCE

    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    seen = {
        str(a): Listed(
            int(w.get("resources", {}).get(RESOURCE, 0)),
            str(w.get("id", "")),
            line(str(w.get(MACHINE_EXTRA) or "")),
        )
        for a, w in workers.items()
    }
    return {a: listed for a, listed in seen.items() if listed.slots > 0}


def game_slots(client: Any) -> int:
    return sum(listed.slots for listed in game_workers(client).values())


def processing(client: Any) -> dict[str, str]:
    """Where each task the scheduler has given a worker is: task key -> worker address."""
    with contextlib.suppress(Exception):
        return {str(k): str(a) for a, keys in client.processing().items() for k in keys}
    return {}
