"""`arena submit` keeps the token out of every command line: `--login` asks for it and keeps it in a file
of the student's alone, ARENA_TOKEN stands for it, and `--token` (seen by every user in ps) warns. An
upload far too big is told so, with the size, as the browser is told. A real `arena serve` on 127.0.0.1."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server_kit import ROOT, Server, need_extra

need_extra()

from tests.test_server_e2e import RANDOM, make_class  # noqa: E402

pytestmark = pytest.mark.slow


def arena_submit(
    home: Path, *args: str, token: str | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "XDG_"))}
    env["HOME"] = str(home)
    if token is not None:
        env["ARENA_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "arena", "submit", *args],
        input=stdin, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
    )  # fmt: skip


def test_the_token_is_kept_by_login_and_never_typed_again(server: Server, tmp_path: Path) -> None:
    people = make_class(server, server.start(), ["tom"])
    page = people["tom"].http.get(server.url + "/me", timeout=30).text
    token = re.search(r'id="token">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    assert "arena submit --login --server" in page and "--token" not in page
    home, bot = tmp_path / "home", tmp_path / "good.py"
    home.mkdir()
    bot.write_bytes(RANDOM)

    none = arena_submit(home, str(bot), "--server", server.url)
    assert none.returncode == 1 and "no token: run arena submit --login" in none.stderr
    wrong = arena_submit(home, "--login", "--server", server.url, stdin="not-my-token\n")
    assert wrong.returncode == 1 and "no valid token" in wrong.stderr
    login = arena_submit(home, "--login", "--server", server.url, stdin=token + "\n")
    assert login.returncode == 0, login.stderr
    kept = home / ".config" / "arena" / "submit.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert token in kept.read_text() and token not in login.stdout + login.stderr

    sent = arena_submit(home, str(bot))  # no flag, no variable: the server and token kept by --login
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith("version 1 stored; waiting for its check")
    by_env = arena_submit(home, str(bot), "--no-wait", token="not-my-token")
    assert by_env.returncode == 1 and "no valid token" in by_env.stderr, "ARENA_TOKEN comes before the file"
    flagged = arena_submit(home, str(bot), "--no-wait", "--token", token)
    assert flagged.returncode == 0
    assert "--token is shown to every user of this machine (ps)" in flagged.stderr

    kept.chmod(0o644)
    loose = arena_submit(home, str(bot))
    assert loose.returncode == 1 and "is readable by other users: chmod 600 it" in loose.stderr

    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (70 << 20))
    too_big = arena_submit(home, str(big), "--no-wait", "--server", server.url, token=token)
    assert too_big.returncode == 1
    assert too_big.stderr.strip() == (
        "arena: error: upload too big: more than 64 MiB; this class takes at most 1024 KiB"
    ), too_big.stderr
