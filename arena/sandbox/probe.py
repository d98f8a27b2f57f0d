"""Whether the sandbox runs on this machine: a real bubblewrap started once, as a bot's would be."""

from __future__ import annotations

import os
import subprocess

from arena.sandbox import bwrap
from arena.sandbox.command import _SHELL, SEALED, _bwrap_base, _drop_to
from arena.sandbox.environment import environment
from arena.sandbox.values import UID_BASE

PROBE_MB = 64  # the memory sandbox_problem's probe is sized for: `true` needs next to nothing


def sandbox_problem() -> str | None:
    """None if bubblewrap runs here, else why not (in words for the terminal and the report)."""
    found = bwrap.find()
    if found.path is None:
        return f"{found.problem}: bots run without a sandbox ({bwrap.INSTALL})"
    if not os.path.exists(_SHELL):
        return f"{_SHELL} is not installed: bots run without a sandbox (it hands a sandboxed bot its pipes)"
    try:
        root = os.geteuid() == 0
        probe = [*_bwrap_base(PROBE_MB, root), *SEALED, *(_drop_to(UID_BASE) if root else []), "true"]
        done = subprocess.run(probe, capture_output=True, timeout=10, env=environment(PROBE_MB))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not run here ({e}): bots run without a sandbox"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        reason = why[-1] if why else f"exit code {done.returncode}"
        return f"bubblewrap does not work here ({reason}): bots run without a sandbox"
    return None
