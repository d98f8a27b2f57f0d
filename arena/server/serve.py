"""`arena serve`: the class folder made, the database migrated, then three processes started and kept
running until Ctrl-C: gunicorn serving the pages, and the workers (worker.py: checks, ladder, scrimmages,
and the KGP port's with --kgp-port).

Why gunicorn: Django speaks WSGI, and gunicorn is the WSGI server Django's own deployment guide puts first
on Linux, where arena's sandbox runs anyway: a master process that restarts its workers, several worker
processes (so one slow page does not hold the others), graceful stops, and no compile step. The pages poll
for live updates, so nothing needs ASGI (uvicorn) or websockets; waitress, pure Python and cross-platform,
would bring nothing arena can use.

The children die with `arena serve` even when it is killed with kill -9 (Linux's parent-death signal), and
a worker that stops on its own is started again; the web server stopping ends the whole server. The web
server runs in a cgroup that weighs ten times a tournament's bots (`web_group`): the workers' nice values
cannot do it, since each bot sits in a cgroup of its own and competes as a group.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox import CPU_WEIGHT, Cgroups
from arena.server.classdir import DATABASE_URL, PRIVATE, ClassDir, password_of
from arena.tournament.settings import Settings

READY_S = 30.0
RESTART_S = 2.0
WORKERS = ("checks", "ladder", "scrimmages")  # worker.py's roles, each a process of its own
# The web server's CPU weight against the bots of one tournament (each tournament's bots weigh one busy
# process per core, confine.py): a page is a person waiting, and a rush of sign-ins (each password hash a
# quarter second of a core) must not queue behind the games. A weight, not a priority: the games still get
# a share when the pages want every core, so a bot's move is slowed, not starved past its time limit.
WEB_PRECEDENCE = 10


class ServeError(RuntimeError):
    """The server cannot start as asked; one line saying why and what to do."""


@dataclass(frozen=True, slots=True)
class Options:
    class_dir: Path
    host: str = "127.0.0.1"
    port: int = 8000
    db: str | None = None
    cluster: str | None = None
    cluster_certs: Path | None = None
    web_workers: int = 2
    settings: Settings = Settings()  # the ladder's and the final's rules and clock, as arena run's
    trusted_proxies: tuple[str, ...] = ()  # whose X-Forwarded-For names the client (throttle.py)
    kgp_port: int | None = None  # where KGP agents connect (kgp.py); None: no KGP port
    kgp_websocket_port: int | None = None  # where they connect by WebSocket (/socket); only with kgp_port

    @property
    def roles(self) -> tuple[str, ...]:
        """The workers this server runs: the KGP port's only when asked for."""
        return WORKERS + (("kgp",) if self.kgp_port else ())

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def allowed_hosts(host: str) -> list[str]:
    """The names the server answers to: the bind address, loopback's names for loopback, the machine's
    names (and any, '*') when it listens on every interface."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    names = [host if ":" not in host else f"[{host}]"]
    if host in ("127.0.0.1", "localhost", "::1"):
        names += ["127.0.0.1", "localhost", "[::1]"]
    return sorted(set(names))


def environment(opts: Options) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="arena.server.settings",
        ARENA_CLASS_DIR=str(opts.class_dir.absolute()),
        ARENA_HOSTS=",".join(allowed_hosts(opts.host)),
        ARENA_SETTINGS=json.dumps(opts.settings.to_dict()),
        ARENA_TRUSTED_PROXIES=",".join(opts.trusted_proxies),
        ARENA_KGP=f"{opts.host} {opts.kgp_port or ''} {opts.kgp_websocket_port or ''}",
    )
    for key, value in (("ARENA_DB", opts.db), ("ARENA_CLUSTER", opts.cluster)):
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    if opts.cluster_certs:
        env["ARENA_CLUSTER_CERTS"] = str(opts.cluster_certs.absolute())
    return env


def check_cluster(address: str | None, certs: Path | None) -> None:
    """A cluster the ladder could not trust is refused at the start, in one line, as `arena run` does."""
    if not address:
        return
    if not address.startswith("tls://"):
        raise ServeError(
            f"--cluster {address}: give the scheduler's tls://HOST:8786 address, started with the class's "
            "certificates (see 'arena cluster-certs'): anyone could join a plain tcp:// one and forge games"
        )
    from arena.lab import trust

    try:
        trust.security(certs)
    except ImportError:
        raise ServeError("--cluster needs Dask here: pip install 'arena[cluster]'") from None
    except trust.TrustError as e:
        raise ServeError(str(e)) from None


def check_db(url: str | None, where: ClassDir) -> None:
    """A password is never given in --db: every user of the machine reads a process's arguments (ps)."""
    if url and password_of(url):
        raise ServeError(
            f"--db: a password in the URL is shown to every user of this machine (ps); write the URL to "
            f"{where.root / DATABASE_URL} (the server's alone) and leave --db out, or keep the password in "
            "PostgreSQL's passfile (~/.pgpass) and give --db without it"
        )


def prepare(opts: Options, say: Callable[[str], None] = lambda line: None) -> str:
    """Make the class folder the server's alone and migrate its database (in this process, with the
    children's settings); the teacher's first sign-in, as a line to print."""
    where = ClassDir(opts.class_dir.absolute())
    check_db(opts.db, where)
    check_cluster(opts.cluster, opts.cluster_certs)
    loose = where.tighten()
    where.make()
    if loose:
        say(
            f"arena serve: {loose} of the class folder's files and folders were open to other users of this "
            "machine (made by hand or with a loose umask); they are the server's alone now (0700, 0600)"
        )
    os.environ.update(environment(opts))
    import django
    from django.core.management import call_command
    from django.db import DatabaseError

    django.setup()
    try:
        call_command("migrate", verbosity=0, interactive=False)
    except DatabaseError as e:
        raise ServeError(f"cannot use the database: {str(e).strip().splitlines()[0]}") from None
    return first_sign_in(opts.address)


def first_sign_in(address: str) -> str:
    """A one-time link while the class has no teacher (each start makes a new one, the old ones void);
    else where the teacher signs in."""
    from arena.server.models import Member, Role, TeacherLink, digest

    if Member.objects.filter(role=Role.TEACHER, user__is_active=True).exists():
        return f"teacher: sign in at {address}/signin"
    TeacherLink.objects.filter(used=False).delete()
    token = secrets.token_urlsafe(24)
    TeacherLink.objects.create(token_hash=digest(token))
    return f"teacher: open {address}/setup/{token} to create the class (this link works once)"


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free(opts: Options) -> None:
    family = socket.AF_INET6 if ":" in opts.host else socket.AF_INET
    if opts.kgp_websocket_port and not opts.kgp_port:
        raise ServeError("--kgp-websocket-port comes with --kgp-port: give both")
    ports = [p for p in (opts.port, opts.kgp_port, opts.kgp_websocket_port) if p]
    if len(set(ports)) < len(ports):
        raise ServeError(f"--port, --kgp-port and --kgp-websocket-port must differ: {ports}")
    flags = (
        (opts.port, "--port"),
        (opts.kgp_port, "--kgp-port"),
        (opts.kgp_websocket_port, "--kgp-websocket-port"),
    )
    for port, flag in flags:
        if port is None:
            continue
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((opts.host, port))
            except OSError as e:
                raise ServeError(
                    f"cannot listen on {opts.host}:{port}: {e.strerror}; give another {flag}"
                ) from None


def commands(opts: Options) -> dict[str, list[str]]:
    bind = f"[{opts.host}]:{opts.port}" if ":" in opts.host else f"{opts.host}:{opts.port}"
    web = [
        sys.executable, "-m", "gunicorn", "arena.server.wsgi:application", "--bind", bind,
        "--workers", str(opts.web_workers), "--worker-class", "gthread", "--threads", "4",
        "--timeout", "120", "--graceful-timeout", "5", "--log-level", "warning", "--preload",
    ]  # fmt: skip
    worker = [sys.executable, "-m", "arena.server.worker"]
    return {"web": web, **{role: [*worker, role] for role in opts.roles}}


def _start(argv: list[str], env: dict[str, str], group: Cgroups | None = None) -> subprocess.Popen[bytes]:
    def before() -> None:
        _die_with_parent()
        # Ctrl-C at the terminal is arena serve's to act on (it stops its children with SIGTERM): a child
        # that got it too unwound wherever it was, a traceback each in the middle of django.setup().
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if group is not None:
            group.join()

    return subprocess.Popen(argv, env=env, preexec_fn=before)  # noqa: PLW1509


def web_group() -> Cgroups | None:
    """The cgroup that gives the web server its precedence over the games (None where arena may not make
    one: the pages then compete with the bots as any process does). Named as arena's bots' parents are, so
    that one left by a kill -9 is swept by the next arena on this machine."""
    weight = WEB_PRECEDENCE * CPU_WEIGHT * (os.cpu_count() or 1)
    return Cgroups.weighted(f"arena-{os.getpid()}-web", weight)


def _ready(opts: Options, web: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if web.poll() is not None:
            raise ServeError(f"the web server stopped at its start (status {web.returncode}); see above")
        with contextlib.suppress(OSError), socket.create_connection((opts.host, opts.port), timeout=1):
            return
        time.sleep(0.1)
    raise ServeError(f"the web server did not answer on {opts.address} within {READY_S:.0f} s")


def _listening(port: int) -> bool | None:
    """Whether a socket of this machine listens on TCP `port` (None: /proc/net cannot say), read from
    the kernel's table: a probe's connection would reach the KGP port as an agent that says nothing."""
    seen = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port:
                return True
    return False if seen else None


def _kgp_ready(opts: Options, kgp: subprocess.Popen[bytes]) -> None:
    """Wait until the KGP port (and its WebSocket port) listen, so that the line saying where agents
    connect is true when it is printed: an agent started on reading it was refused."""
    deadline = time.monotonic() + READY_S
    ports = [p for p in (opts.kgp_port, opts.kgp_websocket_port) if p]
    while time.monotonic() < deadline:
        if kgp.poll() is not None:
            raise ServeError(f"the KGP worker stopped at its start (status {kgp.returncode}); see above")
        found = [_listening(p) for p in ports]
        if None in found:  # no /proc/net here: a little time for the worker's start instead
            time.sleep(2)
            return
        if all(found):
            return
        time.sleep(0.1)
    raise ServeError(f"the KGP port {opts.kgp_port} did not open within {READY_S:.0f} s")


def serve(opts: Options, say: Callable[[str], None]) -> None:
    """Run the server until Ctrl-C (or SIGTERM); ServeError if it cannot start or its web server dies."""
    saved = os.umask(PRIVATE)  # before anything is made: what the server and its children make is theirs
    try:  # alone; given back when it stops, for a caller that runs it in its own process (a test, a library)
        _serve(opts, say)
    finally:
        os.umask(saved)


def _serve(opts: Options, say: Callable[[str], None]) -> None:
    _free(opts)
    sign_in = prepare(opts, say)
    env = environment(opts)
    argvs = commands(opts)
    group = web_group()
    if group is None:
        say("arena serve: no cpu cgroup here: the pages have no precedence over the games")
    children = {"web": _start(argvs["web"], env, group)}
    try:
        _ready(opts, children["web"])
        for role in opts.roles:
            children[role] = _start(argvs[role], env)
        if opts.kgp_port and "kgp" in children:
            _kgp_ready(opts, children["kgp"])
        say(f"arena serve: the class in {opts.class_dir} at {opts.address} (Ctrl-C stops it)")
        if opts.kgp_port:
            say(f"arena serve: KGP agents connect to {opts.host}:{opts.kgp_port} with a student's token")
        if opts.kgp_websocket_port:
            say(f"arena serve: and by WebSocket to ws://{opts.host}:{opts.kgp_websocket_port}/socket")
        say(sign_in)
        while True:
            time.sleep(0.5)
            for role, child in list(children.items()):
                if child.poll() is None:
                    continue
                if role == "web":
                    raise ServeError(f"the web server stopped (status {child.returncode}); see above")
                say(f"arena serve: the {role} worker stopped (status {child.returncode}); starting it again")
                time.sleep(RESTART_S)
                children[role] = _start(argvs[role], env)
    finally:
        _stop(children)
        if group is not None:
            group.remove()


def _stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    for child in children.values():
        if child.poll() is None:
            child.terminate()
    for child in children.values():
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
