"""A store written before the clock became one record still reads, reports, exports and resumes.

tests/data/store-flat-clock/arena.sqlite was written by `arena run` of the code before the change (the
settings kept flat, `move_ms` beside `seed`), as:
    arena run --rounds 1 --openings 2 --move-time 300 --startup-ms 2000 --time-bank 5 --seed 7
              --no-sandbox --memory 256 --name today     (bots: greedy, random)
Real CLI runs in subprocesses on a copy of it in tmp_path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_kit import arena

from arena.cli.options import ClockAsked
from arena.match.clock import TimeControl
from arena.store.writer import STORE_FILE, Store
from arena.tournament.settings import NAMES, Settings, resolve

ROOT = Path(__file__).resolve().parent.parent
OLD = Path(__file__).resolve().parent / "data" / "store-flat-clock" / STORE_FILE
ASKED = Settings(
    clock=TimeControl(move_ms=300, startup_ms=2000, bank_ms=5000),
    seed=7,
    memory_mb=256,
    sandbox=False,
    openings=2,
)


@pytest.fixture
def old(tmp_path: Path) -> Path:
    """A copy of the old store as tournament 'today' under tmp_path/reports, and its two bots."""
    (tmp_path / "reports" / "today").mkdir(parents=True)
    shutil.copy(OLD, tmp_path / "reports" / "today" / STORE_FILE)
    (tmp_path / "bots").mkdir()
    for name in ("greedy", "random"):
        shutil.copy(ROOT / "bots" / f"{name}.py", tmp_path / "bots" / f"{name}.py")
    return tmp_path


def test_an_old_store_reads_its_clock_and_the_rest_of_its_settings(old: Path) -> None:
    with Store(old / "reports" / "today" / STORE_FILE, create=False) as store:
        assert store.settings() == ASKED
        assert len(list(store.records())) == 2


def test_an_old_store_is_reported_and_exported(old: Path) -> None:
    report = arena("report", "--name", "today", cwd=old)
    assert report.returncode == 0, report.stderr
    page = (old / "reports" / "today" / "index.html").read_text()
    assert "300 ms" in page and "5000 ms per bot per game" in page
    export = arena("export", "--name", "today", cwd=old)
    assert export.returncode == 0, export.stderr
    games = [json.loads(line) for line in export.stdout.splitlines()]
    assert sorted(g["south"] for g in games) == ["greedy", "random"]


@pytest.mark.slow
def test_an_old_store_resumes_under_its_own_clock_and_refuses_another(old: Path) -> None:
    other = arena("run", "--rounds", "2", "--name", "today", "--move-time", "400", "--quiet", cwd=old)
    assert other.returncode != 0
    assert "move_ms 300 (asked: 400)" in other.stderr, other.stderr
    again = arena("run", "--rounds", "2", "--name", "today", "--move-time", "300", "--quiet", cwd=old)
    assert again.returncode == 0, again.stderr
    with Store(old / "reports" / "today" / STORE_FILE, create=False) as store:
        assert store.settings() == ASKED
        assert len(list(store.records())) == 4


def test_a_new_store_keeps_the_clock_as_one_object_and_reads_it_back(tmp_path: Path) -> None:
    settings = Settings("kalah,pie", TimeControl(move_ms=250, bank_ms=4000), seed=3, read_only=("/opt/data",))
    with Store(tmp_path / STORE_FILE) as store:
        store.fix_settings(settings)
        raw = json.loads(store.meta()["settings"])
    assert raw["clock"] == {"move_ms": 250, "startup_ms": 10_000, "bank_ms": 4000} and "move_ms" not in raw
    with Store(tmp_path / STORE_FILE, create=False) as store:
        assert store.settings() == settings


def test_the_cli_asks_the_clock_by_its_fields_and_the_referee_gets_the_same_record() -> None:
    asked = ClockAsked.of(move_ms=300, startup_ms=None, bank_ms=None)
    assert asked.changes() == {"move_ms": 300}
    stored = Settings(clock=TimeControl(move_ms=700, startup_ms=50))
    settings = resolve(stored, asked.changes())  # a resumed tournament keeps what was not asked
    assert settings.clock == TimeControl(move_ms=300, startup_ms=50)
    assert settings.limits().clock is settings.clock
    with pytest.raises(TypeError, match="unknown setting 'margin_ms'"):
        resolve(None, {"margin_ms": 10})  # the referee's own, not the tournament's
    assert len(set(NAMES)) == len(NAMES), "a clock field named as another setting would shadow it"


def test_a_script_giving_the_clock_as_numbers_is_told_how_to_give_it() -> None:
    with pytest.raises(TypeError, match=r"Settings\(clock=TimeControl\(move_ms=200\)\)"):
        Settings("kalah", 1000)  # type: ignore[arg-type]
