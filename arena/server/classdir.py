"""Where a class keeps things: one folder holds the server's database (by default), its secret key, every
submitted version, the ladder's bots and tournament, and the final's. Plain Python, no web framework: the
settings, the worker and the tests all find the same paths here.

    CLASS_DIR/secret_key              Django's key, made once, 0600
    CLASS_DIR/database_url            the database's URL with its password, if the teacher keeps one here
    CLASS_DIR/server.sqlite3          accounts, sessions, submissions (unless --db names another database)
    CLASS_DIR/submissions/SLUG/N/SLUG version N of a student's bot, as uploaded (and built by its check)
    CLASS_DIR/references/             the reference bots the checks play against (greedy.py, random.py)
    CLASS_DIR/bots/                   the ladder's field: each student's active version, the references added
    CLASS_DIR/ladder/                 the ladder: an arena tournament (arena.sqlite, index.html)
    CLASS_DIR/final/bots/             the versions frozen at the deadline
    CLASS_DIR/final/ranking/          the final settled tournament
    CLASS_DIR/final/references/       the frozen versions against each reference bot, for the pass rule
    CLASS_DIR/scrimmages/ID/          one scrimmage: its two bots (bots/) and its games (games/)
    CLASS_DIR/practice/SLUG.jsonl     a student's practice games over the KGP port (`arena serve --kgp-port`)

The class folder is the server's user's alone: every folder of the class's 0700 and every file of the
server's own 0600 (the databases with their -wal and -shm, the key, the URL), so no other user of the
machine reads a session key, a token, a password hash or a student's source. A bot's own folder keeps the
modes a bot needs (0755, 0644) behind those 0700 folders: a confined bot runs as a uid of its own and reads
its files through the sandbox's bind of that folder (or a copy), never through the folders above it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from arena.student.check import ARENA_BOTS

REFERENCES = ("greedy", "random")  # arena's bundled bots a teacher may add to the ladder
SQLITE = "server.sqlite3"
DATABASE_URL = "database_url"
PRIVATE = 0o077  # the umask of arena serve and its processes: what they make is theirs alone


@dataclass(frozen=True, slots=True)
class ClassDir:
    root: Path

    @property
    def submissions(self) -> Path:
        return self.root / "submissions"

    @property
    def references(self) -> Path:
        return self.root / "references"

    @property
    def bots(self) -> Path:
        return self.root / "bots"

    @property
    def ladder(self) -> Path:
        return self.root / "ladder"

    @property
    def final(self) -> Path:
        return self.root / "final"

    @property
    def scrimmages(self) -> Path:
        return self.root / "scrimmages"

    @property
    def practice(self) -> Path:
        """The games of agents on the KGP port (kgp.py), a file a student: never the ladder's."""
        return self.root / "practice"

    def version(self, slug: str, number: int) -> Path:
        """The folder of version `number` of `slug`'s bot: named as the bot, as arena names bots."""
        return self.submissions / slug / str(number) / slug

    def make(self) -> None:
        """The folders (the server's alone), and the bundled reference bots copied in once."""
        for folder in (self.root, self.submissions, self.references, self.bots, self.ladder, self.final,
                       self.scrimmages, self.practice):  # fmt: skip
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.chmod(0o700)
        for name in REFERENCES:
            source, copy = ARENA_BOTS / f"{name}.py", self.references / f"{name}.py"
            if source.is_file() and not copy.exists():
                shutil.copyfile(source, copy)
                copy.chmod(0o644)

    def tighten(self) -> int:
        """Make the class folder the server's alone, whatever the umask it was made with or a hand that
        changed it: the folders of the class's 0700 (down to each version's), the server's own files
        0600 (the key, the URL, every SQLite database with its -wal and -shm, the ladder's and the
        final's stores). How many of them other users could open before."""
        loose = 0

        def private(path: Path, mode: int) -> None:
            nonlocal loose
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                return
            if info.st_mode & 0o077:
                loose += 1
            if stat.S_IMODE(info.st_mode) != mode:
                path.chmod(mode)

        if not self.root.is_dir():
            return 0
        folders = [self.root, *(p for p in self.root.iterdir() if p.is_dir() and not p.is_symlink())]
        for home in _folders(self.submissions):
            folders += [home, *_folders(home)]  # submissions/SLUG and submissions/SLUG/N
        for folder in folders:
            private(folder, 0o700)
        files = [p for p in self.root.iterdir() if p.is_file()]
        for store in (self.ladder, self.final, self.scrimmages):
            files += [p for p in store.rglob("*") if p.is_file() and ".sqlite" in p.name]
        for file in files:
            private(file, 0o600)
        return loose

    def database_url(self) -> str | None:
        """The database URL the teacher keeps in the class folder (with its password, out of every
        process's arguments and environment), or None."""
        path = self.root / DATABASE_URL
        return (path.read_text().strip() or None) if path.is_file() else None

    def secret_key(self) -> str:
        """Django's secret key: made on first use, kept 0600 in the class folder, the same for every worker
        process and every start (sessions and password-reset links outlive a restart)."""
        path = self.root / "secret_key"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_text().strip()
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50) + "\n")
        return path.read_text().strip()


def _folders(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()] if path.is_dir() else []


def password_of(url: str) -> str | None:
    """The password written in a database URL (None without one): before the host (user:pass@), or as the
    query's `password` (libpq's keyword: ?password=..., ?user=...&password=...)."""
    parts = urlsplit(url)
    given = parse_qs(parts.query, keep_blank_values=True).get("password")
    return parts.password or (given[0] if given else None)


def database(url: str | None, where: ClassDir) -> dict[str, Any]:
    """Django's DATABASES entry: SQLite in the class folder (WAL, a writer waits rather than fails), or
    the database at `url` (postgresql://user:pass@host:port/name)."""
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(where.root / SQLITE),
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    import dj_database_url

    return dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
