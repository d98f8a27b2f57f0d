"""What the server's tests share: Django set up in this process on a class folder of the test session's
(for the test client), a real `arena serve` in a process of its own (for the browser and the faults), and a
throwaway PostgreSQL cluster where the machine has its binaries.

Every server test skips, saying so, where the extra is not installed (pip install 'arena[server]').
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
NO_EXTRA = "the server's extra is not installed: pip install 'arena[server]'"
PG_BIN = max(
    Path("/usr/lib/postgresql").glob("*/bin"),
    default=Path("/usr/lib/postgresql/15/bin"),
    key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
)  # Debian's newest


def need_extra() -> None:
    for module in ("django", "gunicorn", "dj_database_url"):
        pytest.importorskip(module, reason=NO_EXTRA)


def setup_django(class_dir: Path, db: str | None = None) -> None:
    """Django in this process on `class_dir` (once a process: Django's settings are read once)."""
    import django
    from django.conf import settings

    if settings.configured:
        return
    from arena.server.classdir import ClassDir

    ClassDir(class_dir).make()
    os.environ["DJANGO_SETTINGS_MODULE"] = "arena.server.settings"
    os.environ["ARENA_CLASS_DIR"] = str(class_dir)
    os.environ["ARENA_HOSTS"] = "testserver,127.0.0.1,localhost"
    if db:
        os.environ["ARENA_DB"] = db
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def empty_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A class folder with Django set up on it in this process and its database emptied: where every test
    of the server through Django's test client starts (the `django_class` fixture of tests/conftest.py)."""
    need_extra()
    setup_django(tmp_path_factory.mktemp("server") / "class")
    from django.conf import settings
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0)
    return Path(settings.ARENA_CLASS_DIR)


def signed_in(user: object) -> object:
    """Django's test client, signed in as `user` (a member's `.user`)."""
    from django.test import Client

    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


class Server:
    """`arena serve CLASS_DIR` on 127.0.0.1 at a free port, in its own process group; `args` are more of
    its options (--cluster)."""

    def __init__(
        self, class_dir: Path, db: str | None = None, move_ms: int = 100, args: tuple[str, ...] = ()
    ) -> None:
        self.class_dir, self.db, self.move_ms, self.args = class_dir, db, move_ms, args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[str] | None = None
        self.log = class_dir.parent / f"serve-{self.port}.log"

    def start(self, timeout: float = 60) -> str:
        """Start it and return what it printed for the teacher's first sign-in."""
        args = [sys.executable, "-m", "arena", "serve", str(self.class_dir), "--port", str(self.port)]
        args += ["--move-time", str(self.move_ms)] + (["--db", self.db] if self.db else []) + [*self.args]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "DJANGO_"))}
        seen = self.log.stat().st_size if self.log.exists() else 0
        out = self.log.open("a")
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_bytes()[seen:].decode(errors="replace")
            found = re.findall(r"^teacher: .*$", text, re.M)
            if found:
                return found[-1]
            if self.proc.poll() is not None:
                raise AssertionError(f"arena serve stopped: {text}")
            time.sleep(0.2)
        raise AssertionError(f"arena serve did not start: {self.log.read_text()}")

    def kill9(self) -> None:
        """kill -9 of arena serve alone: its children must go by themselves (parent-death signal)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _group_alive(self.proc.pid):
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# --- PostgreSQL ------------------------------------------------------------------------------------------


def _as_postgres_user() -> list[str]:
    """initdb refuses root: as root (CI) the cluster runs as `nobody`."""
    return ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []


def pg_missing() -> str | None:
    if not (PG_BIN / "initdb").exists():
        return f"PostgreSQL's server binaries are not in {PG_BIN} (apt-get install postgresql)"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser to start PostgreSQL as another user"
    return None


@contextlib.contextmanager
def postgres(folder: Path) -> Iterator[str]:
    """A throwaway PostgreSQL cluster in `folder` on a free port; its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    data, sock = folder / "data", folder / "sock"
    sock.mkdir(exist_ok=True)
    run_as = _as_postgres_user()
    if run_as:
        shutil.chown(folder, "nobody")
        shutil.chown(sock, "nobody")
        folder.chmod(0o755)
    port = free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "check": True, "timeout": 120}
    subprocess.run(
        [*run_as, str(PG_BIN / "initdb"), "-D", str(data), "-U", "arena", "--auth=trust", "-E", "UTF8"],
        **quiet,
    )  # type: ignore[call-overload]
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [
            *run_as,
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-w",
            "-l",
            str(folder / "log"),
            "start",
        ],
        **quiet,
    )  # type: ignore[call-overload]
    try:
        subprocess.run(
            [*run_as, str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "arena", "arena"],
            **quiet,
        )  # type: ignore[call-overload]
        yield f"postgresql://arena@127.0.0.1:{port}/arena"
    finally:
        subprocess.run(
            [*run_as, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
