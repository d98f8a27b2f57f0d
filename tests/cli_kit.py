"""The `arena` command as the tests run it: a real process of this Python (`python -m arena`), its output
captured as text, within a timeout. One helper for every test file that runs the command as a user would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def arena(
    *args: object, cwd: Path = ROOT, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`arena ARGS` in `cwd` (the checkout by default), each argument as its str; its exit status is the
    caller's to check."""
    argv = [sys.executable, "-m", "arena", *map(str, args)]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
