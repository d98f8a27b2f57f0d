"""The red team's attacks on a bot's confinement (issue 24), each in a real `arena run` (or `arena play`),
as root and as an ordinary user (tests/test_redteam.py's `mode`): what a bot's author writes cannot widen
what the bot may read, hold or call; only the teacher's flags can."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import test_redteam
from test_redteam import LOOP, PRELUDE, as_nobody

from arena.report import page

ROOT = Path(__file__).resolve().parent.parent
RULES = "kalah,pits=3,seeds=2"  # short games: the attacks happen at the first MOVE
mode, workdir = test_redteam.mode, test_redteam.workdir  # its fixtures: root and the ordinary user
FIRST = (ROOT / "bots" / "random.py").read_text(encoding="utf-8")


def keep() -> list[Path]:
    """What the ordinary user's arena must see of /root: its Python and this checkout."""
    return [Path(sys.base_prefix), Path(sys.prefix), Path(page.__file__).parents[2]]


def arena(
    mode: str, workdir: Path, argv: list[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m arena ARGV` in `workdir`, as root or (mode 'user') as uid 65534."""
    command = [sys.executable, "-m", "arena", *argv]
    if mode == "user":
        command = as_nobody(command, keep())
    return subprocess.run(
        command, capture_output=True, text=True, env=env or dict(os.environ), timeout=timeout, cwd=workdir
    )


def place(bots: Path, sources: dict[str, str]) -> None:
    """Write each bot (name -> a .py file's text, or a folder's files) readable by every uid."""
    bots.mkdir(exist_ok=True)
    bots.chmod(0o755)
    for name, text in sources.items():
        (bots / f"{name}.py").write_text(text, encoding="utf-8")
        (bots / f"{name}.py").chmod(0o644)


def tournament(
    mode: str,
    workdir: Path,
    flags: list[str] = (),
    env: dict[str, str] | None = None,  # type: ignore[assignment]
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """`arena run` over workdir/bots, one round, and the stored games (none if it failed)."""
    out = workdir / "reports"
    argv = ["run", "--bots", str(workdir / "bots"), "--out", str(out), "--rounds", "1", "--rules", RULES]
    argv += ["--move-time", "2000", "--jobs", "1", *flags]
    done = arena(mode, workdir, argv, env)
    if done.returncode != 0:
        return done, []
    export = [sys.executable, "-m", "arena", "export", "--out", str(out)]
    lines = subprocess.run(export, capture_output=True, text=True, check=True).stdout.splitlines()
    return done, [json.loads(line) for line in lines]


def tail(games: list[dict], bot: str) -> str:
    return "\n".join(g["stderr"].get(bot, "") for g in games)


def clean(games: list[dict]) -> None:
    """Every game ended by the rules: the attacks cost nobody a game."""
    for g in games:
        assert (g["reason"], g["faulty"]) in {("normal", None), ("early", None)}, g


# --- 8: the caller's ARENA_* variables ------------------------------------------------------------------

ENVIRONMENT = """
def attack():
    log("ENV", sorted(k for k in os.environ if k.startswith("ARENA_")))
    log("TOKEN", os.environ.get("ARENA_TOKEN"))
"""


def test_only_documented_variables_reach_a_bot(mode: str, workdir: Path) -> None:
    """A token the teacher keeps in an ARENA_* variable (or arena's own ARENA_CLUSTER) stays with arena; the
    variables protocol.md lists for bots (ARENA_SEED, ARENA_DEPTH, ARENA_MEMORY_MB) reach them."""
    place(workdir / "bots", {"snoop": PRELUDE + ENVIRONMENT + LOOP, "first": FIRST})
    env = {**os.environ, "ARENA_TOKEN": "hunter2", "ARENA_SEED": "7", "ARENA_BOTS": "/srv/secret-bots"}
    done, games = tournament(mode, workdir, env=env)
    assert done.returncode == 0, done.stderr
    clean(games)
    log = tail(games, "snoop")
    assert "ENV ['ARENA_MEMORY_MB', 'ARENA_SEED']" in log and "TOKEN None" in log, log
    protocol = (ROOT / "protocol.md").read_text(encoding="utf-8")
    for name in ("ARENA_MEMORY_MB", "ARENA_SEED", "ARENA_DEPTH"):
        assert f"`{name}`" in protocol


# --- 6: bot.toml `memory` over the teacher's limit ------------------------------------------------------

GREEDY_MEMORY = """
def attack():
    tmp = os.statvfs("/tmp")
    log("TMP MiB", tmp.f_blocks * tmp.f_frsize >> 20, "LIMIT", os.environ["ARENA_MEMORY_MB"])
    held = []
    for mib in range(16, 1025, 16):
        held.append(b"x" * (16 << 20))  # written, so that it counts
        if mib % 128 == 0:
            log("HELD MiB", mib)
"""


def test_a_bots_memory_request_is_capped_by_the_teacher(mode: str, workdir: Path) -> None:
    """bot.toml `memory = 1000000` under `--memory 256`: the bot gets 256 MiB (and its /tmp half of that), not
    what it asked; holding more is an out-of-memory forfeit that names the cap, and the page says so."""
    bots = workdir / "bots"
    place(bots, {"first": FIRST})
    folder = bots / "hoarder"
    folder.mkdir()
    (folder / "bot.py").write_text(PRELUDE + GREEDY_MEMORY + LOOP, encoding="utf-8")
    (folder / "bot.toml").write_text('command = "python3 -P bot.py"\nmemory = 1000000\n', encoding="utf-8")
    for path in (folder, *folder.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    done, games = tournament(mode, workdir, ["--memory", "256"])
    assert done.returncode == 0, done.stderr
    log = tail(games, "hoarder")
    assert "TMP MiB 128 LIMIT 256" in log, log
    assert "HELD MiB 512" not in log, log
    lost = [g for g in games if g["faulty"] == "hoarder"]
    assert len(lost) == 2 and all(
        "memory limit of 256 MiB (--memory, as --max-memory)" in g["detail"] for g in lost
    )
    page_text = (workdir / "reports" / "default" / "index.html").read_text(encoding="utf-8")
    assert "hoarder 256 MiB (asked for 1000000 MiB: capped)" in page_text
