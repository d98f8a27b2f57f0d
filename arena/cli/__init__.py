"""The `arena` command: its group and entry point are in arena/cli/main.py, the commands by what they are
for in student.py and tournament.py, the flags they share in options.py."""

from arena.cli.main import cli, main

__all__ = ["cli", "main"]
