"""A Dask preload for a lab's own `dask worker` and `dask scheduler` (`--preload arena.tournament.guard`, as
the README starts them): a process of the lab that would speak TLS without the class's certificates says so
in one line, with the flags it lacks, instead of dying in Dask's traceback.

Dask imports a preload as it builds the process's server (the nanny of `dask worker`, the scheduler), before
that server listens or connects: the check runs then, on the command line the process was started with and
Dask's own TLS configuration, and only in the process Dask's command line started (not in the worker
process a nanny starts, whose TLS the nanny hands it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

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
    """The one line a lab process without its certificates prints: the README's command, with its flags."""
    which = role(argv) or "worker"
    files = {
        "--tls-ca-file": "certs/ca.pem",
        "--tls-cert": f"certs/{which}.pem",
        "--tls-key": f"certs/{which}.key",
    }
    wanted = " ".join(f"{flag} {files[flag]}" for flag in missing)
    return (
        f"arena: this dask {which} speaks TLS but has no {', '.join(missing)}: the lab's machines show the "
        f"class's certificates ('arena cluster-certs DIR' makes them); start it as the README's 'A lab of "
        f"machines' says, adding {wanted}"
    )


def _check() -> None:
    import dask

    missing = lacking(sys.argv, dask.config.get("distributed.comm.tls", default={}) or {})
    if missing:
        sys.stderr.write(refusal(sys.argv, missing) + "\n")
        sys.stderr.flush()
        os._exit(2)  # Dask's own start-up would go on to a traceback; nothing of it has started yet


_check()
