"""The red team, part two (issue 24): what a student's files, build, names and output can do, through the real
`arena` commands, as root and as an ordinary user (uid 65534), like tests/test_redteam.py, whose helpers it
uses. Each test fails without its fix."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL, FIRST_LEGAL_C
from test_redteam import NOBODY, ROOT, as_nobody, mode, workdir  # noqa: F401 (the fixtures)

from arena.match.bots import STAMP
from arena.match.printable import printable
from arena.report import page

RULES = ("--rules", "kalah,pits=4,seeds=3")


def arena(
    mode: str, *args: str, cwd: Path | None = None, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`arena ARGS` as root, or as the ordinary user."""
    argv = [sys.executable, "-m", "arena", *args]
    if mode != "root":
        argv = as_nobody(argv, [Path(sys.base_prefix), Path(sys.prefix), Path(page.__file__).parents[2]])
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def folder_bot(
    folder: Path, source: str = FIRST_LEGAL, toml: str = 'command = ["python", "bot.py"]\n'
) -> Path:
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(source, encoding="utf-8")
    (folder / "bot.toml").write_text(toml, encoding="utf-8")
    return folder


def readable(*paths: Path) -> None:
    """Files and folders the ordinary user can read (and a folder, enter)."""
    for path in paths:
        for p in [path, *(path.rglob("*") if path.is_dir() and not path.is_symlink() else [])]:
            if p.is_symlink() or not (p.is_file() or p.is_dir()):
                continue
            p.chmod(0o755 if p.is_dir() else 0o644)


def reference_bots(bots: Path) -> None:
    bots.mkdir(exist_ok=True)
    for name in ("greedy", "random"):
        shutil.copy(ROOT / "bots" / f"{name}.py", bots / f"{name}.py")


def exported(mode: str, out: Path) -> list[dict]:
    done = arena(mode, "export", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def not_entered(stderr: str) -> dict[str, str]:
    """`arena run`'s 'not entered' lines: entry -> why."""
    lines = [line.removeprefix("arena: not entered: ") for line in stderr.splitlines()]
    return dict(line.split(": ", 1) for line in lines if not line.startswith("arena:") and ": " in line)


# --- 4. links, fifos and unreadable files in a bot's folder ---------------------------------------------


@pytest.mark.slow
def test_a_link_a_fifo_or_an_unreadable_file_in_a_bot_leaves_that_bot_out_and_the_run_goes_on(
    mode: str, workdir: Path
) -> None:
    """A link to /proc/kmsg (a read that never ends, as root) or a fifo among a bot's files hung `arena run`
    before its first game; a file its user cannot read was a traceback. Now arena reads a bot's files with
    lstat and no link followed: each such bot is not entered, with one line saying which file and why, and
    the others play."""
    bots, out = workdir / "bots", workdir / "reports"
    reference_bots(bots)
    folder_bot(bots / "kmsg")
    (bots / "kmsg" / "kmsg").symlink_to("/proc/kmsg")
    folder_bot(bots / "fifo")
    os.mkfifo(bots / "fifo" / "pipe")
    (bots / "loot.py").symlink_to("/proc/kmsg")  # a bot that is itself a link
    folder_bot(bots / "locked")
    readable(bots)
    (bots / "locked" / "key.txt").write_text("root's own\n")
    (bots / "locked" / "key.txt").chmod(0o600)  # root reads it; the ordinary user cannot
    os.chmod(bots / "fifo" / "pipe", 0o644)
    done = arena(
        mode,
        "run",
        "--rounds",
        "1",
        "--bots",
        str(bots),
        "--out",
        str(out),
        *RULES,
        "--move-time",
        "500",
        "--jobs",
        "1",
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    why = not_entered(done.stderr)
    assert "a link to /proc/kmsg, not a bot's file" in why.get("kmsg", ""), done.stderr
    assert "a fifo, not a bot's file" in why.get("fifo", ""), done.stderr
    assert "a link to /proc/kmsg, not a bot:" in why.get("loot.py", ""), done.stderr
    if mode == "root":
        assert "locked" not in why, done.stderr
    else:
        assert "key.txt: cannot be read (check its permissions)" in why.get("locked", ""), done.stderr
    played = {frozenset((g["south"], g["north"])) for g in exported(mode, out)}
    entered = {"greedy", "random"} | ({"locked"} if mode == "root" else set())
    assert played == {frozenset((a, b)) for a in entered for b in entered if a != b}


# --- 3. a cluster ships a bot's files, never what a link in them points to ------------------------------


@pytest.mark.slow
def test_a_cluster_never_ships_what_a_link_in_a_bot_points_to(mode: str, workdir: Path) -> None:
    """`workers.pack` followed links: a link loot.txt -> /etc/shadow in a bot's folder sent the coordinator's
    /etc/shadow (here: a secret of the user running arena, mode 0600) to every worker's cache, mode 0644,
    where the bot read it. Now the bot is not entered, and nothing of the secret leaves the machine."""
    distributed = pytest.importorskip("distributed")
    bots, out, cache = workdir / "bots", workdir / "reports", workdir / "cache"
    secret = workdir / "secret.txt"
    marker = "the-teachers-secret-7f3a"
    secret.write_text(marker + "\n")
    secret.chmod(0o600)
    if mode != "root":
        os.chown(secret, NOBODY, NOBODY)  # the ordinary user's own, as ~/.ssh/id_ed25519 is
    reference_bots(bots)
    folder_bot(bots / "looter")
    (bots / "looter" / "loot.txt").symlink_to(secret)
    readable(bots)
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        resources={"games": 1},
        dashboard_address=None,
        host="127.0.0.1",
        env={"ARENA_CACHE": str(cache)},
    ) as cluster:
        args = ("run", "--rounds", "1", "--bots", str(bots), "--out", str(out), *RULES, "--move-time", "500")
        done = arena(mode, *args, "--cluster", cluster.scheduler_address, "--insecure-cluster")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    shipped = [p for p in cache.rglob("*") if p.is_file()]
    assert shipped, "the other bots were shipped"
    assert [p for p in shipped if marker.encode() in p.read_bytes()] == []
    assert "looter/loot.txt: a link to" in not_entered(done.stderr).get("looter", ""), done.stderr
    assert {g["south"] for g in exported(mode, out)} == {"greedy", "random"}


# --- 8. a build cannot change the bot's own files --------------------------------------------------------

REWRITING_BUILD = """#!/bin/sh
printf 'paths = ["/"]\\nmemory = 100000\\n' >> bot.toml
echo '/* and the source, out of the version */' >> bot.c
exec cc -O2 -o bot bot.c
"""


@pytest.mark.slow
def test_a_build_cannot_rewrite_its_bot_toml_or_sources(mode: str, workdir: Path) -> None:
    """A build rewrote bot.toml (paths = ["/"], memory = 100000) and its source, and the stamp then listed
    both as the build's outputs: copied back, and left out of the bot's version, so that an edited bot
    played under its old one. Now the files there before the build are sources: a build that changes one
    fails, naming it, and the folder is as it was."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    bots, out = workdir / "bots", workdir / "reports"
    reference_bots(bots)
    folder = bots / "rewriter"
    folder.mkdir()
    (folder / "bot.c").write_text(FIRST_LEGAL_C)
    (folder / "build.sh").write_text(REWRITING_BUILD)
    (folder / "bot.toml").write_text('build = "./build.sh"\ncommand = "./bot"\n')
    readable(bots)
    (folder / "build.sh").chmod(0o755)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for path in (bots, folder, *folder.iterdir()):  # the student's own files
        os.chown(path, NOBODY if mode != "root" else 0, NOBODY if mode != "root" else 0)
    done = arena(
        mode, "run", "--rounds", "1", "--bots", str(bots), "--out", str(out), *RULES, "--move-time", "500"
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before, "bot.toml and bot.c as they were"
    why = not_entered(done.stderr).get("rewriter", "")
    assert "build failed: it changed bot.c (and 1 more), a file of the bot's own" in why, done.stderr
    assert {g["south"] for g in exported(mode, out)} == {"greedy", "random"}


def version_of(folder: Path, *files: str) -> str:
    """A bot's version as arena computes it over the given files of its folder (bots._digest), as a student
    can compute it too."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{folder.name}/{name}".encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return h.hexdigest()[:16]


@pytest.mark.slow
def test_a_stamp_the_student_edits_keeps_no_source_out_of_the_version(mode: str, workdir: Path) -> None:
    """The build stamp in the student's folder names the files the build made, which are left out of the
    bot's version. A student listed bot.c there (with the version bot.toml alone gives): from then on an
    edited bot.c, compiled by hand and its sha256 put in the stamp, kept that version and its results, and
    `arena run` played none of its games again. Now arena believes only stamps it signed with its key: the
    edited stamp is not, the files it lists are left out of the build (which fails without its source,
    saying why), and the forged bot plays no game."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    bots, out, cache = workdir / "bots", workdir / "reports", workdir / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}  # where arena keeps its key: the user's own
    reference_bots(bots)
    folder = bots / "stamped"
    folder.mkdir()
    (folder / "bot.c").write_text(FIRST_LEGAL_C)
    (folder / "bot.toml").write_text('build = "cc -O2 -o bot bot.c"\ncommand = "./bot"\n')
    readable(bots)
    student = NOBODY if mode != "root" else 0
    for path in (bots, folder, *folder.iterdir()):
        os.chown(path, student, student)
    args = ("run", "--rounds", "1", "--bots", str(bots), "--out", str(out), *RULES, "--move-time", "500")
    first = arena(mode, *args, env=env)
    assert first.returncode == 0 and "building stamped" in first.stderr, first.stderr
    again = arena(mode, *args, env=env)  # the stamp arena signed is believed: no build, nothing to play
    assert again.returncode == 0 and "building" not in again.stderr, again.stderr
    assert "0 of 6 games to play" in again.stderr + again.stdout, again.stderr + again.stdout
    games = len(exported(mode, out))

    def forge(source: str) -> subprocess.CompletedProcess[str]:
        """bot.c as `source`, compiled by hand, both listed as built in the stamp; then `arena run`."""
        (folder / "bot.c").write_text(source)
        subprocess.run(["cc", "-O2", "-o", str(folder / "bot"), str(folder / "bot.c")], check=True)
        stamp = json.loads((folder / STAMP).read_text())
        built = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in ("bot", "bot.c")}
        stamp |= {"outputs": built, "sources": version_of(folder, "bot.toml")}
        (folder / STAMP).write_text(json.dumps(stamp))
        for path in folder.iterdir():
            os.chown(path, student, student)
        return arena(mode, *args, env=env)

    listed = forge(FIRST_LEGAL_C)  # bot.c out of the version from now on
    edited = forge(FIRST_LEGAL_C.replace("/*HERE*/", "/* edited after its games */"))
    for done in (listed, edited):
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        why = not_entered(done.stderr).get("stamped", "")
        said = f"{STAMP} was not written by arena here: it lists bot, bot.c as built"
        assert "build failed" in why and said in why, done.stderr + done.stdout
    assert len(exported(mode, out)) == games  # no game of the forged bot


# --- 10. names that look alike ----------------------------------------------------------------------------


@pytest.mark.slow
def test_names_that_mix_scripts_or_look_alike_are_refused_and_one_script_names_play(
    mode: str, workdir: Path
) -> None:
    """`grееdy` (Cyrillic е) ranked beside `greedy`. Now a name mixing scripts is not entered, nor are two
    names whose TR39 skeletons are equal (Latin `cop`, Cyrillic `сор`) or that are one name case aside;
    names in one script (Greek `αλφα`) play, and a name written in NFD (as a Mac names files) is kept NFC."""
    bots, out = workdir / "bots", workdir / "reports"
    reference_bots(bots)
    for name in ("grееdy", "cop", "сор", "αλφα", "cafe\u0301", "Solo", "solo"):
        shutil.copy(ROOT / "bots" / "greedy.py", bots / f"{name}.py")
    readable(bots)
    done = arena(
        mode, "run", "--rounds", "1", "--bots", str(bots), "--out", str(out), *RULES, "--move-time", "500"
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    why = not_entered(done.stderr)
    assert "not mix them (got 'grееdy': CYRILLIC and LATIN" in why.get("grееdy.py", ""), done.stderr
    assert "its name 'cop' looks like 'сор' (сор.py)" in why.get("cop.py", ""), done.stderr
    assert "its name 'сор' looks like 'cop' (cop.py)" in why.get("сор.py", ""), done.stderr
    assert "two bots are named" in why.get("Solo.py", "") and "two bots are named" in why.get("solo.py", "")
    names = {g[side] for g in exported(mode, out) for side in ("south", "north")}
    assert names == {"greedy", "random", "αλφα", "café"}


# --- 9. terminal escapes in what a bot prints -------------------------------------------------------------

# Sets the terminal's title, writes its clipboard (OSC 52), clears its screen, a C1 CSI and a right-to-left
# override; then crashes at its first move, so that this is its last stderr line.
ESCAPES = "\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[3J\x9b2J\u202eevil"
NOISY = f"""import sys
for line in sys.stdin:
    if line.startswith("MOVE"):
        sys.stderr.write({ESCAPES!r} + "crashed\\n")
        sys.exit(3)
"""
NOISY_BUILD = f"""#!/bin/sh
printf '%s' '{ESCAPES}'
echo 'error: not today'
exit 1
"""


@pytest.mark.slow
def test_control_characters_from_a_bot_never_reach_the_terminal(mode: str, workdir: Path) -> None:
    """A crash's last stderr line, a build's errors and a bot's file names reached the teacher's terminal
    raw through `arena play`, `run`, `replay` and `check`: a window title, the clipboard (OSC 52), a cleared
    screen. Now every control character is shown as its escape."""
    bots, out = workdir / "bots", workdir / "reports"
    reference_bots(bots)
    (bots / "noisy.py").write_text(NOISY)
    folder_bot(bots / "noisybuild", toml='build = "./build.sh"\ncommand = "./bot"\n')
    (bots / "noisybuild" / "build.sh").write_text(NOISY_BUILD)
    shutil.copy(ROOT / "bots" / "greedy.py", bots / "evil\x1b]0;title\x07.py")  # a name with escapes
    readable(bots)
    (bots / "noisybuild" / "build.sh").chmod(0o755)
    quick = (*RULES, "--move-time", "500")
    commands = {
        "play": ("play", "noisy", "random", "--bots", str(bots), *quick),
        "play a build": ("play", "noisybuild", "random", "--bots", str(bots), *quick),
        "run": ("run", "--rounds", "1", "--bots", str(bots), "--out", str(out), *quick, "--openings", "0"),
        "replay": ("replay", "{crashed}", "--out", str(out)),
        "check": ("check", "noisy", "--bots", str(bots), *quick),
        "check a build": ("check", "noisybuild", "--bots", str(bots), *quick),
    }
    said = {}
    for what, args in commands.items():
        if what == "replay":  # a game the noisy bot lost by its crash
            crashed = next(g["id"] for g in exported(mode, out) if g["faulty"] == "noisy")
            args = tuple(a.format(crashed=crashed) for a in args)
        done = arena(mode, *args)
        said[what] = done.stdout + done.stderr
        assert "Traceback" not in said[what], (what, said[what])
    said["export to a terminal"] = on_a_terminal("export", "--format", "csv", "--out", str(out))
    raw = {what: text for what, text in said.items() if any(c in text for c in "\x1b\x07\x9b\u202e")}
    assert raw == {}
    for what, text in said.items():
        assert "\\x1b]52;c;cHduZWQ=\\x07" in text, (what, text)  # shown, as its escape
    assert "not entered: evil\\x1b]0;title\\x07.py" in said["run"], said["run"]


def on_a_terminal(*args: str) -> str:
    """What `arena ARGS` prints on stdout when that is a terminal (a pty)."""
    main, sub = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "arena", *args], stdout=sub, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(sub)
    assert done.returncode == 0, done.stderr
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the other side is closed and everything read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    return b"".join(chunks).decode()


def test_printable_shows_each_control_character_as_its_escape() -> None:
    """The one function behind it: C0 (newline kept in a block of lines, tab kept), DEL, C1 and the controls
    that reorder text are shown as escapes; letters of any script and the rest of the text stay as they are.
    """
    text = "ok\tя\x1b]52;c;eA==\x07\x7f\x9b2J\u202e\u2066\r\x00\nnext"
    assert (
        printable(text, lines=True) == "ok\tя\\x1b]52;c;eA==\\x07\\x7f\\x9b2J\\u202e\\u2066\\x0d\\x00\nnext"
    )
    assert printable(text).endswith("\\x00\\x0anext") and "\n" not in printable(text)
    assert printable("grееdy αλφα café") == "grееdy αλφα café"
