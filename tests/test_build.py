"""Compiled bots' `build` in bot.toml: built before their first game, confined, again only when the sources
change, a failed build the bot's fault (not entered in a tournament; one line and the compiler's output in
`arena play`). Real CLI, real compilers, real sandbox."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from botsrc import FIRST_LEGAL_C
from cli_kit import arena
from conftest import said
from procs import processes_mentioning

from arena.match.bots import STAMP, BotError, BuildError, built_outputs, load_bot
from arena.match.build import _copy_back, _write_stamp, ensure_built, needed
from arena.match.clock import TimeControl
from arena.sandbox import Confinement, capabilities

ROOT = Path(__file__).resolve().parent.parent
CONF, CAPS = capabilities(Confinement(), want_sandbox=True)
QUICK = ("--rules", "kalah,pits=3,seeds=2", "--move-time", "200")

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) is installed")

# A build script that counts its runs (each appends its uid to builds.log) before it compiles.
COUNTING = "#!/bin/sh\nid -u >> builds.log\nexec cc -O2 -o bot bot.c\n"


def c_bot(folder: Path, build: str = 'build = "./build.sh"', source: str = FIRST_LEGAL_C) -> Path:
    """A C bot folder: bot.c, the counting build.sh, and a bot.toml with `build` (a TOML line)."""
    folder.mkdir(parents=True)
    (folder / "bot.c").write_text(source, encoding="utf-8")
    (folder / "build.sh").write_text(COUNTING, encoding="utf-8")
    (folder / "build.sh").chmod(0o755)
    (folder / "bot.toml").write_text(f'{build}\ncommand = "./bot"\n', encoding="utf-8")
    return folder


def builds(folder: Path) -> list[str]:
    """The uids of the builds that ran, one a build."""
    log = folder / "builds.log"
    return log.read_text().split() if log.exists() else []


def random_bot(bots: Path) -> None:
    shutil.copy(ROOT / "bots" / "random.py", bots / "random.py")


@pytest.mark.slow
def test_a_c_bot_is_built_before_it_plays_and_again_only_when_its_sources_change(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    cbot = c_bot(bots / "cbot")
    random_bot(bots)
    unbuilt = load_bot(cbot)  # ./bot is not there yet: with a build, it is looked for after the build
    assert unbuilt.build == (("./build.sh",),) and not (cbot / "bot").exists()

    play = arena("play", "cbot", "random", "--bots", str(bots), "--games", "2", *QUICK)
    assert play.returncode == 0, play.stderr
    assert "cbot" in play.stdout.splitlines()[-1] and "forfeits" not in play.stdout
    assert len(builds(cbot)) == 1 and (cbot / "bot").is_file() and (cbot / STAMP).is_file()
    if os.geteuid() == 0 and CONF.drop_root:
        assert builds(cbot)[0] != "0", "as root, the build runs as an unprivileged uid"
    version = load_bot(cbot).digest
    assert version == unbuilt.digest, "the version is the sources', not the build's outputs"

    again = arena("play", "cbot", "random", "--bots", str(bots), *QUICK)
    assert again.returncode == 0, again.stderr
    assert len(builds(cbot)) == 1, "nothing changed: no build"
    assert load_bot(cbot).digest == version

    (cbot / "bot").unlink()  # an output deleted: built again, the same sources are the same version
    assert arena("play", "cbot", "random", "--bots", str(bots), *QUICK).returncode == 0
    assert len(builds(cbot)) == 2 and load_bot(cbot).digest == version

    source = (cbot / "bot.c").read_text().replace("/*HERE*/", "/* edited */")
    (cbot / "bot.c").write_text(source)  # a source edited: built again, a new version
    assert needed(load_bot(cbot))
    assert arena("play", "cbot", "random", "--bots", str(bots), *QUICK).returncode == 0
    assert len(builds(cbot)) == 3
    assert load_bot(cbot).digest != version and not needed(load_bot(cbot))


def test_a_changed_output_is_built_again(tmp_path: Path) -> None:
    """(What the check costs when nothing changed: benchmarks/build_check.py.)"""
    cbot = c_bot(tmp_path / "cbot")
    bot = ensure_built(load_bot(cbot), CONF)
    assert len(builds(cbot)) == 1 and bot.argv == ("./bot",)
    for _ in range(3):
        assert ensure_built(bot, CONF) == bot
    assert len(builds(cbot)) == 1
    (cbot / "bot").write_bytes(b"#!/bin/sh\nexit 1\n")  # someone's hand-made output: built again
    ensure_built(bot, CONF)
    assert len(builds(cbot)) == 2 and (cbot / "bot").read_bytes()[:4] == b"\x7fELF"


def test_two_arenas_building_one_folder_at_once_build_it_once(tmp_path: Path) -> None:
    cbot = c_bot(tmp_path / "cbot")
    (cbot / "build.sh").write_text(COUNTING.replace("exec cc", "sleep 0.3; exec cc"))
    said: list[str] = []  # each build runs in a copy of its own: builds.log cannot tell two at once
    with ThreadPoolExecutor(2) as pool:
        built = list(pool.map(lambda _: ensure_built(load_bot(cbot), CONF, say=said.append), range(2)))
    assert said == ["building cbot: ./build.sh"] and built[0] == built[1]


@pytest.mark.slow
def test_a_tournament_builds_its_bots_and_goes_on_without_one_that_does_not_compile(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    cbot = c_bot(bots / "cbot")
    broken = FIRST_LEGAL_C.replace("/*HERE*/", "undefined_thing = 1;")
    badc = c_bot(bots / "badc", 'build = "cc -O2 -o bot bot.c"', broken)
    random_bot(bots)
    run = (
        "run",
        "--rounds",
        "1",
        "--bots",
        str(bots),
        "--out",
        str(tmp_path / "reports"),
        "--openings",
        "0",
        *QUICK,
    )
    out = arena(*run)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    listed = [line for line in out.stderr.splitlines() if line.startswith("arena: not entered: ")]
    assert len(listed) == 1, out.stderr
    assert listed[0].startswith("arena: not entered: badc: bot.toml: build failed: 'cc -O2 -o bot bot.c'")
    assert "error: " in listed[0] and "undefined_thing" in listed[0]
    assert "arena: building cbot: ./build.sh" in out.stderr and not (badc / "bot").exists()
    assert len(builds(cbot)) == 1
    export = arena("export", "--out", str(tmp_path / "reports"))
    games = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(games) == 2 and {g["south"] for g in games} == {"cbot", "random"}
    assert all(g["faulty"] is None for g in games), games
    page = (tmp_path / "reports" / "default" / "index.html").read_text(encoding="utf-8")
    assert "not entered" in page and "undefined_thing" in page and "build failed" in page
    # and under the leaderboard, where a student looks for their bot, a pointer to why
    leaderboard = page[page.index('id="leaderboard"') : page.index('id="ratings"')]
    assert "Not entered:</span> badc." in leaderboard

    again = arena(*run, "--rounds", "2")  # the same sources: no build, the same version, still not entered
    assert again.returncode == 0, again.stderr
    assert len(builds(cbot)) == 1 and "building cbot" not in again.stderr
    assert "arena: building badc" in again.stderr, "a failed build is tried again: it may have been the host"
    assert "changed version" not in again.stdout and "2 of 4 games to play" in again.stdout
    assert "arena: not entered: badc: " in again.stderr


def test_arena_play_of_a_bot_that_does_not_compile_is_one_line_and_the_compilers_output(
    tmp_path: Path,
) -> None:
    bots = tmp_path / "bots"
    c_bot(bots / "badc", source=FIRST_LEGAL_C.replace("/*HERE*/", "undefined_thing = 1;"))
    random_bot(bots)
    out = arena("play", "badc", "random", "--bots", str(bots), *QUICK)
    assert out.returncode == 1, out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr
    first, *rest = said(out.stderr)
    assert first.startswith(f"arena: error: {bots / 'badc' / 'bot.toml'}: build failed: './build.sh' exited")
    assert "undefined_thing" in first
    assert rest and all(line.startswith("    ") for line in rest)
    assert any("undefined_thing" in line and "error" in line for line in rest)


def test_a_build_that_prints_without_end_gives_its_error_and_the_end_of_its_output(tmp_path: Path) -> None:
    folder = c_bot(tmp_path / "chatty")
    (folder / "build.sh").write_text("#!/bin/sh\nseq 1 300000\necho 'bot.c:9: error: boom' >&2\nexit 3\n")
    with pytest.raises(BuildError) as failed:
        ensure_built(load_bot(folder), CONF)
    assert str(failed.value).endswith("build failed: './build.sh' exited with status 3: bot.c:9: error: boom")
    output = failed.value.output
    assert output.startswith("...\n") and output.endswith("300000\nbot.c:9: error: boom")
    assert len(output) < 5000


def test_a_build_that_hangs_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    folder = c_bot(tmp_path / "hangs", 'build = "sleep 3617"')
    started = time.monotonic()
    with pytest.raises(BuildError, match=r"build 'sleep 3617' did not finish in 1 s: stopped"):
        ensure_built(load_bot(folder), CONF, seconds=1)
    assert time.monotonic() - started < 10
    assert processes_mentioning("sleep 3617") == []
    assert not (folder / STAMP).exists()


@pytest.mark.skipif(not CAPS.sandbox, reason="no bubblewrap sandbox on this machine")
def test_a_build_can_write_only_its_folder_and_has_no_network(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))  # a port any process of this machine could reach
    port = server.getsockname()[1]
    folder = c_bot(tmp_path / "bots" / "nosy")
    (folder / "build.sh").write_text(
        "#!/bin/bash\n"
        "id -u > uid.txt\n"
        f"(echo hi > {tmp_path}/escaped.txt) 2>/dev/null && echo yes > outside.txt || echo no > outside.txt\n"
        "(echo hi > ../escaped.txt) 2>/dev/null; "
        f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo net > net.txt || echo no > net.txt\n"
        "exec cc -o bot bot.c\n"
    )
    try:
        bot = ensure_built(load_bot(folder), CONF)
    finally:
        server.close()
    assert bot.argv == ("./bot",) and (folder / "bot").is_file()
    assert (folder / "outside.txt").read_text() == "no\n"
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "bots" / "escaped.txt").exists()
    assert (folder / "net.txt").read_text() == "no\n"
    if os.geteuid() == 0:
        assert CONF.drop_root and (folder / "uid.txt").read_text().strip() != "0"
    assert (folder / "bot").stat().st_uid == os.geteuid(), "copied back as arena's, not the build's uid"


def test_without_the_sandbox_the_build_runs_with_what_there_is(tmp_path: Path) -> None:
    """--no-sandbox (or no bubblewrap): the build runs in the copy itself, still as its own uid as root."""
    cbot = c_bot(tmp_path / "cbot")
    bot = ensure_built(load_bot(cbot), replace(CONF, sandbox=False))
    assert bot.argv == ("./bot",) and os.access(cbot / "bot", os.X_OK) and not needed(bot)
    if os.geteuid() == 0 and CONF.drop_root:
        assert builds(cbot)[0] != "0"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("build = 3", "'build' must be a command line"),
        ('build = ""', "'build' has an empty command"),
        ("build = []", "'build' must be a command line"),
        ('build = "cc -o bot bot.c && strip bot"', "uses shell syntax ('&&')"),
        ('build = ["cc", "-o", "bot", "bot.c"]', "is not a command: a list here is of whole command lines"),
        ('build = "no-such-compiler bot.c"', "build program 'no-such-compiler' is not installed"),
        ('build = "./missing.sh"', "build './missing.sh' not found"),
    ],
)
def test_a_bad_build_value_is_one_line(tmp_path: Path, line: str, words: str) -> None:
    bots = tmp_path / "bots"
    c_bot(bots / "cbot", line)
    random_bot(bots)
    out = arena("play", "cbot", "random", "--bots", str(bots), *QUICK)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith(f"arena: error: {bots / 'cbot' / 'bot.toml'}: ") and words in out.stderr


def test_a_build_that_does_not_make_the_command_is_the_bots_fault(tmp_path: Path) -> None:
    folder = c_bot(tmp_path / "cbot", 'build = "cc -o other bot.c"')
    with pytest.raises(BuildError, match=r"command './bot' not found in .*; the build did not make it"):
        ensure_built(load_bot(folder), CONF)
    out = arena("play", str(folder), str(ROOT / "bots" / "random.py"), *QUICK)
    assert out.returncode == 1 and len(said(out.stderr)) == 1, out.stderr


def test_the_built_folder_is_what_travels_to_a_cluster_worker(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from arena.lab.workers import Cache, pack

    bot = ensure_built(load_bot(c_bot(tmp_path / "cbot")), CONF)
    ship = pack(bot)
    assert {rel for rel, _, _ in ship.files} >= {"cbot/bot", f"cbot/{STAMP}", "cbot/bot.c"}
    there = Cache(tmp_path / "worker-cache", "a worker").bot(ship)  # the worker's copy: no build there
    assert there.digest == bot.digest and (there.path / "bot").is_file()
    assert os.access(there.path / "bot", os.X_OK) and not needed(there)


def test_a_stamp_another_arena_signed_is_built_again_here_and_a_worker_signs_what_it_is_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stamp is believed only by the arena whose key signed it (arena/match/stamp.py). On another machine
    (or after the key is lost) the bot is built again, its outputs made again and not taken for sources,
    and its version is the same; a cluster's worker signs the stamp it is shipped with its own key, so it
    finds the version the coordinator sent."""
    pytest.importorskip("distributed")
    from arena.lab.workers import Cache, pack
    from arena.match import stamp

    folder = c_bot(tmp_path / "cbot", 'build = "cc -O2 -o bot bot.c"')
    bot = ensure_built(load_bot(folder), CONF)
    ship = pack(bot)
    monkeypatch.setattr(stamp, "_key", lambda: b"another machine's key, 32 bytes")
    assert built_outputs(folder) == {} and needed(load_bot(folder))
    there = Cache(tmp_path / "worker-cache", "a worker").bot(ship)
    assert there.digest == bot.digest and not needed(there)
    again = ensure_built(load_bot(folder), CONF)
    assert again.digest == bot.digest and not needed(again) and set(built_outputs(folder)) == {"bot"}


def test_the_key_is_kept_for_arena_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is made once, 0600 in arena's cache folder; one that others may read is replaced."""
    from arena.match import stamp

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    stamp._key.cache_clear()
    try:
        key = stamp._key()
        path = tmp_path / "arena" / stamp.KEY_FILE
        assert path.stat().st_mode & 0o777 == 0o600 and path.read_bytes() == key
        stamp._key.cache_clear()
        assert stamp._key() == key  # kept
        path.chmod(0o644)
        stamp._key.cache_clear()
        assert stamp._key() != key and path.stat().st_mode & 0o777 == 0o600
    finally:
        stamp._key.cache_clear()


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK (javac) installed")
def test_a_java_bot_is_built_with_javac_and_plays(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    (bots / "javabot").mkdir(parents=True)
    (bots / "javabot" / "bot.toml").write_text(
        'build = ["javac -d classes *.java"]\ncommand = "java -cp classes Bot"\n'
    )  # the wildcard is arena's, no shell's: Bot.java and Pits.java
    (bots / "javabot" / "Bot.java").write_text(
        "public class Bot { public static void main(String[] a) throws Exception {\n"
        "  var in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));\n"
        "  for (String l; (l = in.readLine()) != null;) {\n"
        '    String[] w = l.trim().split(" ");\n'
        '    if (w[0].equals("QUIT")) break;\n'
        '    if (!w[0].equals("MOVE")) continue;\n'
        "    System.out.println(Pits.first(w)); System.out.flush(); } } }\n"
    )
    (bots / "javabot" / "Pits.java").write_text(
        "class Pits { static int first(String[] w) {\n"
        "  int m = 1; while (Integer.parseInt(w[1 + m]) == 0) m++; return m; } }\n"
    )
    random_bot(bots)
    out = arena("play", "javabot", "random", "--bots", str(bots), "--rules", "kalah,pits=3,seeds=2")
    assert out.returncode == 0, out.stderr
    assert "forfeits" not in out.stdout and (bots / "javabot" / "classes" / "Bot.class").is_file()
    outputs = json.loads((bots / "javabot" / STAMP).read_text())["outputs"]
    assert outputs.keys() == {"classes/Bot.class", "classes/Pits.class"}


@pytest.mark.slow
def test_a_cluster_tournament_builds_here_and_the_workers_play_the_built_bot(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from arena.api import Tournament
    from arena.lab import Cluster
    from arena.tournament.settings import Settings

    bots = tmp_path / "bots"
    cbot = c_bot(bots / "cbot")
    random_bot(bots)
    cache = tmp_path / "worker-cache"
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        resources={"games": 1},
        dashboard_address=None,
        host="127.0.0.1",
        env={"ARENA_CACHE": str(cache)},
    ) as cluster:
        settings = Settings(rules="kalah,pits=3,seeds=2", clock=TimeControl(move_ms=500), openings=0)
        with Tournament(tmp_path / "reports" / "lab", settings) as cup:
            back = Cluster(cluster.scheduler_address, insecure=True)  # plain tcp://, as asked for
            result = cup.run(bots, 1, cluster=back)
            played = list(cup.records())
    assert result.played == 2 and len(builds(cbot)) == 1
    assert all(r["faulty"] is None for r in played), played
    shipped = list(cache.glob("*/cbot/bot"))
    assert len(shipped) == 1 and shipped[0].read_bytes() == (cbot / "bot").read_bytes()


@pytest.mark.skipif(not CAPS.cgroups, reason="no cgroups: a build's memory is not bounded as a whole here")
def test_a_build_writing_without_end_is_stopped_by_its_memory_limit_not_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build writes in a tmpfs of its own namespace, charged to its memory cgroup: files it writes count
    against its memory, so a build cannot fill the disk the tournament's store is on. Without the sandbox
    the build writes in arena's copy on the disk, measured in blocks ten times a second, and the cap stops
    it."""
    folder = c_bot(tmp_path / "filler")
    (folder / "bot.toml").write_text('build = "./build.sh"\ncommand = "./bot"\nmemory = 64\n')
    (folder / "build.sh").write_text("#!/bin/sh\nhead -c 400M /dev/zero > big.bin\nexec cc -o bot bot.c\n")
    # a temporary folder of this test's own: another test's build (the suite runs in parallel) has its
    # copy in the system's, and is not this one's left behind
    mine = tmp_path / "tmp"
    mine.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(mine))
    stopped = (
        r"build failed: './build.sh' out of memory|build failed: the folder held \d+ MiB after it"
        r"|build './build.sh' wrote \d+ MiB, more than the \d+ MiB a build may write into its folder"
    )
    with pytest.raises(BuildError, match=stopped):
        ensure_built(load_bot(folder), CONF)
    assert not (folder / "big.bin").exists() and not (folder / "bot").exists()
    assert list(mine.glob("arena-build-*")) == [], "the copy is removed"


@pytest.mark.parametrize("aside", [".bot.arena-{pid}", STAMP + ".{pid}"], ids=["output", "stamp"])
def test_a_link_planted_where_arena_writes_aside_is_not_written_through(tmp_path: Path, aside: str) -> None:
    """A bot's folder may hold a link at the name arena writes an output or the stamp aside under before
    renaming it: arena (often root) must not write through it to a file outside the folder. A link among a
    bot's files keeps it from loading at all; one planted while arena builds it (by another process of the
    bot's author) is not written through either."""
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    folder = c_bot(tmp_path / "planter")
    link = folder / aside.format(pid=os.getpid())
    link.symlink_to(victim)
    with pytest.raises(BotError, match=rf"{re.escape(link.name)}: a link to .*victim.txt, not a bot's file"):
        load_bot(folder)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "bot").write_bytes(b"built")
    with pytest.raises(OSError):
        if aside.startswith(".bot"):
            _copy_back(copy, folder, {"bot": hashlib.sha256(b"built").hexdigest()})
        else:
            _write_stamp(folder, None, {"bot": hashlib.sha256(b"built").hexdigest()})
    assert victim.read_text() == "untouched\n"


def test_a_stamp_naming_files_outside_the_folder_or_bot_toml_as_outputs_is_not_believed(
    tmp_path: Path,
) -> None:
    """The stamp is in the student's hands: outputs it names outside the folder are never read, and bot.toml
    is never an output (so it stays in the bot's version)."""
    cbot = c_bot(tmp_path / "cbot")
    version = load_bot(cbot).digest
    outputs = {"../../etc/passwd": "0" * 64, "/etc/passwd": "0" * 64, "bot.toml": "0" * 64}
    (cbot / STAMP).write_text(json.dumps({"build": [["./build.sh"]], "sources": version, "outputs": outputs}))
    assert built_outputs(cbot) == {}
    assert load_bot(cbot).digest == version
