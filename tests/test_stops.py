"""Every arena process stops on its stop signals, even one that lands while Python runs an at-fork
callback, which drops what it raises: arena forks all the time (game workers, bots, a check's bots). CI
found a killed `arena serve`'s ladder playing on, its SIGTERM lost in the fork of a game worker. Each case
runs in a process of its own, as arena's processes set their stops up in theirs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.server_kit import ROOT, need_extra

# Each process's stop, as it sets it up: (module, its function, the exception it raises).
PROCESSES = {
    "the arena command": ("arena.cli.main", "_stop_on_signals", "KeyboardInterrupt"),
    "a game worker": ("arena.tournament.local", "_stops", "SystemExit"),
    "a server worker": ("arena.server.worker", "stops", "KeyboardInterrupt"),
}

SCRIPT = """
import os, signal, sys, time
from {module} import {function} as stops

stop = stops()


def after_fork():  # the stop lands while Python runs an at-fork callback, which drops what it raises
    os.kill(os.getpid(), signal.{signal})
    time.sleep(0.2)


os.register_at_fork(after_in_parent=after_fork)
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(10)
    print("played on", flush=True)
except BaseException as e:
    print(type(e).__name__, flush=True)
"""


def _run(script: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("process", sorted(PROCESSES))
@pytest.mark.parametrize("sent", ["SIGTERM", "SIGHUP"])
def test_a_stop_that_lands_in_a_fork_still_stops(process: str, sent: str) -> None:
    module, function, raised = PROCESSES[process]
    if module.startswith("arena.server"):
        need_extra()
    began = time.monotonic()
    run = _run(SCRIPT.format(module=module, function=function, signal=sent))
    assert run.stdout == f"{raised}\n", run.stdout + run.stderr
    assert "Exception ignored" not in run.stderr, run.stderr
    assert time.monotonic() - began < 9, "stopped at once, not at the process's next step"


def test_after_the_first_stop_a_worker_finishes_its_clean_up() -> None:
    """A game worker's later signals (the terminal's SIGHUP after the tournament's SIGTERM) must not cut
    short the clean-up that ends its bots."""
    script = """
import os, signal, time
from arena.tournament.local import _stops

stop = _stops()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
except SystemExit as e:
    print("stopped", e.code, flush=True)
    stop.hold()
    os.kill(os.getpid(), signal.SIGHUP)
    time.sleep(0.2)
    print("cleaned up", flush=True)
"""
    run = _run(script)
    assert run.stdout == "stopped 143\ncleaned up\n", run.stdout + run.stderr


def test_a_signal_arena_was_started_ignoring_stays_ignored() -> None:
    """`nohup arena run`: a closed terminal is no stop."""
    script = """
import os, signal, time
signal.signal(signal.SIGHUP, signal.SIG_IGN)
from arena.cli.main import _stop_on_signals

_stop_on_signals()
os.kill(os.getpid(), signal.SIGHUP)
time.sleep(0.2)
print("went on", flush=True)
"""
    run = _run(script)
    assert run.stdout == "went on\n", run.stdout + run.stderr


FORKED = """
import os, signal, sys, time
from {module} import {function} as stops

stop = stops()
try:  # the process's stop comes and is taken; its clean-up then forks (a game worker, a bot)
    os.kill(os.getpid(), signal.{signal})
    time.sleep(5)
except BaseException:
    stop.hold()
pid = os.fork()
if pid == 0:  # the child: still the parent's handler, as between a fork and the child's own stop
    time.sleep(10)
    os._exit(3)
time.sleep(0.2)
os.kill(pid, signal.{signal})  # as multiprocessing's exit handler terminates a daemon child
print(os.waitpid(pid, 0)[1], flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("process", sorted(PROCESSES))
@pytest.mark.parametrize("sent", ["SIGTERM", "SIGHUP"])
def test_a_child_forked_after_the_stop_still_dies_of_its_signal(process: str, sent: str) -> None:
    """A child forked once its parent's stop was taken inherited a stop already held, ignored the SIGTERM
    its parent's exit sent it, and the parent joined it for ever (CI: a killed `arena serve`'s ladder
    worker and the game worker it had just forked, both alive and asleep 30 s later)."""
    module, function, _ = PROCESSES[process]
    if module.startswith("arena.server"):
        need_extra()
    began = time.monotonic()
    run = _run(FORKED.format(module=module, function=function, signal=sent))
    number = getattr(signal, sent)
    assert run.stdout == f"{number}\n", f"the child's wait status: {run.stdout}{run.stderr}"
    assert time.monotonic() - began < 9, "the child slept on"
