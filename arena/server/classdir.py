"""Where a class keeps things: one folder holds the server's database (by default), its secret key, every
submitted version, the ladder's bots and tournament, and the final's. Plain Python, no web framework: the
settings, the worker and the tests all find the same paths here.

    CLASS_DIR/secret_key              Django's key, made once, 0600
    CLASS_DIR/server.sqlite3          accounts, sessions, submissions (unless --db names another database)
    CLASS_DIR/submissions/SLUG/N/SLUG version N of a student's bot, as uploaded (and built by its check)
    CLASS_DIR/references/             the reference bots the checks play against (greedy.py, random.py)
    CLASS_DIR/bots/                   the ladder's field: each student's active version, the references added
    CLASS_DIR/ladder/                 the ladder: an arena tournament (arena.sqlite, index.html)
    CLASS_DIR/final/bots/             the versions frozen at the deadline
    CLASS_DIR/final/ranking/          the final settled tournament
    CLASS_DIR/final/references/       the frozen versions against each reference bot, for the pass rule
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.student.check import ARENA_BOTS

REFERENCES = ("greedy", "random")  # arena's bundled bots a teacher may add to the ladder
SQLITE = "server.sqlite3"


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

    def version(self, slug: str, number: int) -> Path:
        """The folder of version `number` of `slug`'s bot: named as the bot, as arena names bots."""
        return self.submissions / slug / str(number) / slug

    def make(self) -> None:
        """The folders, readable by the bots' unprivileged users (a confined bot runs as one when arena
        runs as root), and the bundled reference bots copied in once."""
        for folder in (self.root, self.submissions, self.references, self.bots, self.ladder, self.final):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o755)
        for name in REFERENCES:
            source, copy = ARENA_BOTS / f"{name}.py", self.references / f"{name}.py"
            if source.is_file() and not copy.exists():
                shutil.copyfile(source, copy)
                copy.chmod(0o644)

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
