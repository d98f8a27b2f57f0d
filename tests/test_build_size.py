"""A build's size: a build that writes without end is stopped, one that leaves a folder over the cap fails,
each in one line naming the size, and nothing of it stays in the bot's folder (a class's folder keeps every
version a student uploads: 1 GiB a build would fill its disk)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arena.match import build
from arena.match.bots import STAMP, BuildError, load_bot
from arena.match.build import ensure_built
from arena.sandbox import Confinement, capabilities

CONF, _ = capabilities(Confinement(), want_sandbox=True)
MiB = 1024 * 1024
CAP = 8 * MiB

pytestmark = pytest.mark.skipif(shutil.which("dd") is None, reason="no dd on this machine")


def sh_bot(folder: Path, script: str) -> Path:
    """A bot whose build is `script` (sh); its command is never reached here."""
    folder.mkdir(parents=True)
    (folder / "build.sh").write_text("#!/bin/sh\n" + script)
    (folder / "build.sh").chmod(0o755)
    (folder / "bot.sh").write_text("echo 1\n")
    (folder / "bot.toml").write_text('build = "./build.sh"\ncommand = "sh bot.sh"\n')
    return folder


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def test_one_file_over_the_cap_stops_the_build(tmp_path: Path) -> None:
    """Fails without the cap: the build passes and its 64 MiB file stays in the folder."""
    folder = sh_bot(tmp_path / "big", "dd if=/dev/zero of=blob bs=1M count=64 2>/dev/null\n")
    with pytest.raises(BuildError) as failed:
        ensure_built(load_bot(folder), CONF, max_bytes=CAP)
    message = str(failed.value)
    assert "\n" not in message and "more than the 8 MiB a build may write into its folder" in message, message
    assert not (folder / "blob").exists() and not (folder / STAMP).exists()
    assert folder_bytes(folder) < MiB


def test_many_files_over_the_cap_are_stopped_while_the_build_runs(tmp_path: Path) -> None:
    """Each file under the cap, together over it: the build is stopped by the look at its folder, not at
    its time limit (120 s)."""
    script = "i=0\nwhile true; do dd if=/dev/zero of=part$i bs=1M count=1 2>/dev/null; i=$((i+1)); done\n"
    folder = sh_bot(tmp_path / "many", script)
    stopped = r"build './build.sh' (wrote \d+ MiB,|filled its folder: it tried to write) more than the 8 MiB"
    with pytest.raises(BuildError, match=stopped) as failed:
        ensure_built(load_bot(folder), CONF, max_bytes=CAP, seconds=60)
    assert "\n" not in str(failed.value)
    assert not list(folder.glob("part*"))


def test_a_folder_over_the_cap_after_its_build_keeps_nothing(tmp_path: Path) -> None:
    """Quick enough to finish between two looks, or not: either way it fails naming the size (its tmpfs,
    of the cap's size, refuses what is past it: the build filled its folder)."""
    script = "for i in 1 2 3; do dd if=/dev/zero of=part$i bs=1M count=4 2>/dev/null; done\n"
    folder = sh_bot(tmp_path / "after", script)
    with pytest.raises(BuildError, match=r"((held|wrote) 1[02] MiB|filled its folder).*more than the 8 MiB"):
        ensure_built(load_bot(folder), CONF, max_bytes=CAP)
    assert not list(folder.glob("part*")) and not (folder / STAMP).exists()


def test_under_the_cap_the_build_is_as_before(tmp_path: Path) -> None:
    folder = sh_bot(tmp_path / "small", "dd if=/dev/zero of=model bs=1M count=2 2>/dev/null\n")
    ensure_built(load_bot(folder), CONF, max_bytes=CAP)
    assert (folder / "model").stat().st_size == 2 * MiB


def test_arena_check_fails_such_a_build_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checklist (what the class server keeps for the student) says the size in its build item."""
    from arena.student.check import check
    from arena.tournament.settings import Settings

    monkeypatch.setattr(build, "BUILD_BYTES", CAP)
    folder = sh_bot(tmp_path / "bots" / "huge", "dd if=/dev/zero of=blob bs=1M count=32 2>/dev/null\n")
    report = check(load_bot(folder), Settings(openings=0))
    (item,) = report.items
    assert (item.name, item.status) == ("build", "FAIL"), item
    assert "\n" not in item.problem and "more than the 8 MiB" in item.problem, item.problem
    assert report.fails and folder_bytes(folder) < MiB
