"""A class's secrets stay the server's: another user of the server's machine (`nobody` here) reads none of
the class folder (the database with its -wal, the submissions), and no process of the server shows the
database's password in its arguments or environment. Each checked as that user would try it, not by stat.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server_kit import ROOT, Server, need_extra, pg_missing, postgres

need_extra()

from tests.test_server_e2e import RANDOM, make_class  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=30)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder another user may enter (pytest's own are root's alone, which would prove nothing)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("run as root with setpriv: the test reads the class folder as another user")
    folder = Path(tempfile.mkdtemp(prefix="arena-secrets-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _group(pgid: int) -> list[int]:
    """The processes of a process group: arena serve, gunicorn and its workers, the two workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    found.append(int(entry.name))
            except ProcessLookupError:
                pass
    return found


@pytest.mark.slow
def test_a_loose_class_folder_is_the_servers_alone(shared: Path) -> None:
    """Made by hand with umask 022, with a version left by an older arena: at start it is said and fixed,
    and what the server makes later (the database, its -wal, a new version) no other user reads."""
    class_dir = shared / "class"
    old = class_dir / "submissions" / "eve" / "1" / "eve"
    old.mkdir(parents=True)
    for folder in (class_dir, *class_dir.rglob("*")):
        folder.chmod(0o755)
    (old / "bot.py").write_bytes(RANDOM)
    (old / "bot.py").chmod(0o644)
    server = Server(class_dir)
    saved = os.umask(0o022)
    try:
        people = make_class(server, server.start(), ["ann"])
        people["ann"].upload("bot.py", RANDOM)
        assert "were open to other users of this machine" in server.log.read_text()
        private = ["server.sqlite3", "server.sqlite3-wal", "server.sqlite3-shm", "secret_key"]
        for path in [*private, "submissions/eve/1/eve/bot.py", "submissions/ann/1/ann/bot.py"]:
            assert (class_dir / path).exists(), path
            read = as_nobody("cat", str(class_dir / path))
            assert read.returncode != 0 and "Permission denied" in read.stderr, (path, read)
        listed = as_nobody("ls", str(class_dir / "submissions"))
        assert listed.returncode != 0 and "Permission denied" in listed.stderr
        assert os.stat(class_dir / "server.sqlite3-wal").st_mode & 0o077 == 0  # made after the start
    finally:
        os.umask(saved)
        server.stop()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://arena:hunter2-secret@127.0.0.1:5/arena",
        "postgresql://arena@127.0.0.1:5/arena?password=hunter2-secret",
        "postgresql://127.0.0.1:5/arena?user=arena&password=hunter2-secret",
    ],
)
def test_a_password_in_db_is_refused_in_one_line(tmp_path: Path, url: str) -> None:
    """Before the host or in the query (libpq reads both): either sits in `ps` for every user."""
    args = [sys.executable, "-m", "arena", "serve", str(tmp_path / "class"), "--db", url]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "a password in the URL is shown to every user" in lines[0]
    assert "hunter2" not in done.stderr
    assert not (tmp_path / "class").exists()  # refused before anything is made


@pytest.mark.slow
def test_the_database_password_is_in_no_process_another_user_sees(shared: Path) -> None:
    if why := pg_missing():
        pytest.skip(why)
    secret = "hunter2-secret"
    with postgres(shared / "pg") as url:  # trust: any password is taken, so the test needs no role's
        class_dir = shared / "class"
        class_dir.mkdir(mode=0o700)
        (class_dir / "database_url").write_text(url.replace("arena@", f"arena:{secret}@") + "\n")
        server = Server(class_dir)
        try:
            make_class(server, server.start(), [])
            assert not (class_dir / "server.sqlite3").exists()  # PostgreSQL, from the file
            pids = _group(server.proc.pid)  # type: ignore[union-attr]
            assert len(pids) >= 4, pids  # arena serve, gunicorn's master and workers, the two workers
            for pid in pids:
                for part in ("cmdline", "environ"):
                    seen = as_nobody("cat", f"/proc/{pid}/{part}")
                    assert secret not in seen.stdout, (pid, part)
                    as_root = Path(f"/proc/{pid}/{part}").read_bytes()
                    assert secret.encode() not in as_root, (pid, part)
            read = as_nobody("cat", str(class_dir / "database_url"))
            assert read.returncode != 0
        finally:
            server.stop()
