"""`arena --help` and every command's help as snapshots (tests/snapshots/help/, as fastchess keeps its CLI's):
a change to a flag, a default or a help text shows up in the diff of a review, not in a user's terminal.

After a change meant to alter the help, write the snapshots anew and read their diff:
    ARENA_SNAPSHOTS=write .venv/bin/python -m pytest -q tests/test_help.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import cli

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots" / "help"
COMMANDS = ["", *sorted(cli.commands)]  # "": arena --help itself


def help_text(command: str) -> str:
    args = [command, "--help"] if command else ["--help"]
    result = CliRunner().invoke(cli, args, prog_name="arena", terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c or "arena")
def test_help_is_as_its_snapshot(command: str) -> None:
    snapshot = SNAPSHOTS / f"{command or 'arena'}.txt"
    text = help_text(command)
    if os.environ.get("ARENA_SNAPSHOTS") == "write":
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.exists(), (
        f"no snapshot of {command or 'arena'} --help: write it (see this file's docstring)"
    )
    assert text == snapshot.read_text(encoding="utf-8")


def test_every_snapshot_is_of_a_command() -> None:
    """A command removed or renamed leaves no stale snapshot behind."""
    assert {p.stem for p in SNAPSHOTS.glob("*.txt")} == {c or "arena" for c in COMMANDS}
