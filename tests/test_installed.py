"""arena installed from its wheel, not run from a checkout: what it needs besides its code (the reference
bots `arena check` and `arena serve`'s checks play against) comes with it, as package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with arena's wheel in it: the python of that venv. Its dependencies are this venv's
    (a .pth line), not its code: the checkout is neither on its path nor the folder it runs in."""
    base = tmp_path_factory.mktemp("installed")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if built.returncode != 0:  # pip builds in isolation: it fetches setuptools unless cached
        pytest.skip(f"no wheel built (offline?): {built.stderr.strip().splitlines()[-1:]}")
    (wheel,) = (base / "dist").glob("arena-*.whl")
    env = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
        capture_output=True,
        check=True,
        timeout=300,
    )
    return python


@pytest.mark.slow
def test_arena_check_from_a_wheel_finds_its_reference_bots(installed: Path, tmp_path: Path) -> None:
    """Fails when the references are looked for beside a checkout (parents[2] / "bots"): an installed
    arena then says "no reference bots" and checks nothing."""
    where = subprocess.run(
        [installed, "-c", "import arena, arena.student.check as c; print(arena.__file__, c.ARENA_BOTS)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.split()
    assert not where[0].startswith(str(ROOT)), where  # the wheel's arena, not the checkout's
    refs = Path(where[1])
    assert sorted(p.name for p in refs.glob("*.py")) == ["greedy.py", "random.py"]
    assert not any(p.is_symlink() for p in refs.glob("*.py"))  # the wheel holds the files, not the links
    assert (refs / "greedy.py").read_bytes() == (ROOT / "bots" / "greedy.py").read_bytes()

    mine = tmp_path / "mine.py"
    shutil.copyfile(ROOT / "bots" / "random.py", mine)
    run = subprocess.run(
        [installed.parent / "arena", "check", str(mine), "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert '"fails": false' in run.stdout, run.stdout


@pytest.mark.slow
def test_arena_serve_copies_the_reference_bots_into_a_class_from_a_wheel(
    installed: Path, tmp_path: Path
) -> None:
    """The class folder's references/, which every check of `arena serve` plays against, from the wheel."""
    made = subprocess.run(
        [installed, "-c", "import sys, pathlib; from arena.server.classdir import ClassDir; "
         "ClassDir(pathlib.Path(sys.argv[1])).make()", str(tmp_path / "class")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    refs = tmp_path / "class" / "references"
    assert sorted(p.name for p in refs.iterdir()) == ["greedy.py", "random.py"]
    assert (refs / "random.py").read_bytes() == (ROOT / "bots" / "random.py").read_bytes()
