"""The red team's attacks on a bot's confinement (issue 24), each in a real `arena run` (or `arena play`),
as root and as an ordinary user (tests/test_redteam.py's `mode`): what a bot's author writes cannot widen
what the bot may read, hold or call; only the teacher's flags can."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import test_redteam
from test_redteam import LOOP, PRELUDE, as_nobody

from arena.match.confine import Confinement, Warden
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


def folder_bot(bots: Path, name: str, source: str, manifest: str = "") -> Path:
    """A folder bot running `source` with arena's Python, its bot.toml `manifest` lines added."""
    folder = bots / name
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(source, encoding="utf-8")
    (folder / "bot.toml").write_text('command = "python3 -P bot.py"\n' + manifest, encoding="utf-8")
    for path in (folder, *folder.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def tournament(
    mode: str,
    workdir: Path,
    flags: Sequence[str] = (),
    env: dict[str, str] | None = None,
    name: str = "default",
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """`arena run` of tournament `name` over workdir/bots, one round, and its stored games (none if it
    failed)."""
    out = workdir / "reports"
    argv = ["run", "--bots", str(workdir / "bots"), "--out", str(out), "--rounds", "1", "--rules", RULES]
    argv += ["--move-time", "2000", "--jobs", "1", "--name", name, *flags]
    done = arena(mode, workdir, argv, env)
    if done.returncode != 0:
        return done, []
    export = [sys.executable, "-m", "arena", "export", "--out", str(out), "--name", name]
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
    folder_bot(bots, "hoarder", PRELUDE + GREEDY_MEMORY + LOOP, "memory = 1000000\n")
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


# --- 1: bot.toml `paths` ------------------------------------------------------------------------------------

THIEF = """
def attack():
    attempt("read opponent", lambda: open({opponent!r}).read(20))
    attempt("read shadow", lambda: open("/etc/shadow").read(20))
    attempt("read data", lambda: open({data!r}).read().strip())
"""


def test_only_the_teacher_grants_read_only_paths(mode: str, workdir: Path) -> None:
    """bot.toml `paths = ["/"]` no longer shows a bot the machine: it is a request, and a bot whose request
    the teacher did not grant (--read-only) is not entered, the reason naming the flag. The teacher cannot
    grant a private place either (one line, no store made); what is granted is named at the start and on
    the page, and every bot reads it."""
    bots = workdir / "bots"
    data = Path(tempfile.mkdtemp(prefix="arena-course-data-", dir="/var/tmp"))
    try:
        data.chmod(0o755)
        (data / "weights.txt").write_text("the weights\n", encoding="utf-8")
        (data / "weights.txt").chmod(0o644)
        place(bots, {"first": FIRST, "second": FIRST})
        thief = PRELUDE + THIEF.format(opponent=str(bots / "first.py"), data=str(data / "weights.txt")) + LOOP
        folder_bot(bots, "thief", thief, 'paths = ["/"]\n')
        folder_bot(bots, "student", thief, f"paths = [{str(data)!r}]\n".replace("'", '"'))
        for refused, why in (
            ("/", "/: is /, which no bot may read"),
            (str(workdir), f"{workdir}: holds {bots}, which no bot may read"),
            ("/proc/1/root", "/proc/1/root: is inside /proc, which no bot may read"),
            ("/run", "/run: is /run, which no bot may read"),
            (str(bots / "first.py"), f"{bots / 'first.py'}: is inside {bots}, which no bot may read"),
        ):
            done, _ = tournament(mode, workdir, ["--read-only", refused], name="refused")
            assert (
                done.returncode == 2
                and done.stderr
                == f"arena: error: --read-only {why}; grant the folder a bot needs, e.g. /opt/conda\n"
            ), done.stderr
            assert not (workdir / "reports" / "refused").exists()

        done, games = tournament(mode, workdir)
        assert done.returncode == 0, done.stderr
        for name, asked in (("thief", "/"), ("student", str(data))):
            line = (
                f"arena: not entered: {name}: its bot.toml asks to read {asked}, which the teacher has not "
            )
            assert line + f"granted (--read-only {asked})" in done.stderr, done.stderr
        assert {g["south"] for g in games} == {"first", "second"}
        clean(games)

        done, games = tournament(mode, workdir, ["--read-only", str(data)], name="granted")
        assert done.returncode == 0, done.stderr
        assert f"arena: every bot may read (--read-only): {data}\n" in done.stderr
        assert "not entered: student" not in done.stderr and "not entered: thief" in done.stderr
        log = tail(games, "student")
        assert "ALLOWED read data: 'the weights'" in log and "DENIED read opponent" in log, log
        assert "DENIED read shadow" in log, log
        clean(games)
        page_text = (workdir / "reports" / "granted" / "index.html").read_text(encoding="utf-8")
        assert f"{data} (--read-only: every bot may read them)" in page_text
    finally:
        shutil.rmtree(data)


def test_the_granted_paths_lie_under_the_private_mounts() -> None:
    """Bound before the private /tmp, /dev and /proc: whatever a granted path holds, those cover it."""
    conf = Confinement(sandbox=True, read_only=("/usr/share",))
    argv = Warden(conf).jail(ROOT / "bots" / "random.py").command(["true"], ROOT, (0, 1, 2))
    bind = argv.index("/usr/share")
    assert argv[bind - 1] == "--ro-bind" and bind < argv.index("--tmpfs") < argv.index("--proc")
