"""A lab's `dask worker` or `dask scheduler` started without the class's certificates (docs/lab.md's command
with `--preload arena.lab.guard`) says so in one line, naming the flags it lacks, and exits before
Dask's start-up would end in a traceback; one started as docs/lab.md says is let through (the end-to-end
tests of tests/test_cluster_lab.py start every process with the guard)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from arena.lab import guard

pytest.importorskip("distributed")
WORKER = [sys.executable, "-m", "distributed.cli.dask_worker"]
SCHEDULER = [sys.executable, "-m", "distributed.cli.dask_scheduler"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "lacks"),
    [
        ([*WORKER, "tls://127.0.0.1:9"], "--tls-ca-file, --tls-cert, --tls-key"),
        ([*WORKER, "tls://127.0.0.1:9", "--tls-ca-file", __file__], "--tls-cert, --tls-key"),
        ([*SCHEDULER, "--protocol", "tls", "--host", "127.0.0.1", "--port", "0"],
         "--tls-ca-file, --tls-cert, --tls-key"),
    ],
    ids=["worker", "worker with the authority only", "scheduler"],
)  # fmt: skip
def test_a_lab_process_without_certificates_is_one_line(args: list[str], lacks: str) -> None:
    out = subprocess.run(
        [*args, "--dashboard-address", "127.0.0.1:0", "--preload", "arena.lab.guard"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    which = "scheduler" if args[:3] == SCHEDULER else "worker"
    line = out.stderr.splitlines()[-1]
    assert line.startswith(f"arena: this dask {which} speaks TLS but has no {lacks}: "), line
    for flag in lacks.split(", "):
        assert f"{flag} certs/" in line.partition("adding ")[2], line


def test_only_a_tls_process_of_the_lab_is_checked() -> None:
    dask_worker = ["/usr/bin/dask", "worker"]
    assert guard.lacking([*dask_worker, "tcp://10.0.0.1:8786"], {}) == []  # refused by the coordinator
    assert guard.lacking(["python", "-c", "x"], {}) == []  # a nanny's worker process: its TLS is handed
    assert (
        guard.lacking([*dask_worker, "tls://h:1"], {"ca-file": "c", "worker": {"cert": "w", "key": "k"}})
        == []
    )
    assert guard.lacking([*dask_worker, "tls://h:1", "--tls-cert=w.pem"], {"ca-file": "c"}) == ["--tls-key"]


@pytest.mark.slow
def test_the_guard_sets_arenas_dask_settings_but_not_over_the_labs_own() -> None:
    """Importing the preload quiets Dask's background work (background.SETTINGS); a setting the lab gave
    itself (a DASK_* variable) stays, even one equal to Dask's default."""
    from arena.lab.background import SETTINGS

    keys = ["distributed.worker.profile.enabled", "distributed.admin.tick.interval"]
    code = f"import distributed, arena.lab.guard, dask; print([dask.config.get(k) for k in {keys!r}])"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    ours = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert ours.stdout.strip() == repr([SETTINGS[k] for k in keys]), ours.stderr
    own = {**env, "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "True"}
    theirs = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=own, timeout=60)
    assert theirs.stdout.strip() == repr([True, SETTINGS[keys[1]]]), theirs.stderr
