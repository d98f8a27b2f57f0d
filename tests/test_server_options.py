"""`arena serve`'s rules and clock are arena run's: the same option declarations, the same validation
(a bad rule set is refused in one line before anything is made), the defaults of Settings, and every
setting handed to the workers whole."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from arena.cli import cli
from arena.tournament.settings import Settings, resolve


def test_bad_rules_are_refused_as_arena_run_refuses_them(tmp_path: Path) -> None:
    for args, said in (
        (["--rules", "kalah,pits=0"], "Invalid value for '--rules'"),
        (["--move-time", "0"], "Invalid value for '--move-time'"),
    ):
        ran = CliRunner().invoke(cli, ["serve", str(tmp_path / "class"), *args])
        assert ran.exit_code == 2 and said in ran.output, ran.output
    assert not (tmp_path / "class").exists()


def test_the_workers_get_the_settings_arena_run_would_play(tmp_path: Path) -> None:
    from arena.server.serve import Options, environment

    asked = {"rules": "kalah,pits=4,seeds=3", "bank_ms": 30_000}
    settings = resolve(None, asked)
    sent = json.loads(environment(Options(tmp_path, settings=settings))["ARENA_SETTINGS"])
    assert Settings.from_dict(sent) == settings
    assert settings.clock.move_ms == 30_000, "a bank without a move time: as arena run resolves it"
    assert Settings.from_dict(json.loads(environment(Options(tmp_path))["ARENA_SETTINGS"])) == Settings()


def test_the_kgp_port_is_off_unless_asked_and_never_the_pages_port(tmp_path: Path) -> None:
    from arena.server.serve import Options, commands

    assert "kgp" not in commands(Options(tmp_path)), "no KGP port unless --kgp-port"
    assert commands(Options(tmp_path, kgp_port=2671))["kgp"][-1] == "kgp"
    ran = CliRunner().invoke(cli, ["serve", str(tmp_path / "class"), "--port", "8123", "--kgp-port", "8123"])
    assert ran.exit_code == 1 and "must differ: [8123, 8123]" in ran.output, ran.output
    assert not (tmp_path / "class").exists()
