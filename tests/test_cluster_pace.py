"""How many games a cluster task carries (dispatch.Pace): a machine's first task, which pays for its setup,
does not keep the next tasks small, and the last tasks share the games left evenly."""

from __future__ import annotations

from arena.lab.dispatch import Pace


def test_a_slow_first_task_does_not_keep_the_tasks_after_it_small() -> None:
    pace = Pace(seconds=0.25, most=128)
    assert pace.games(1000, 4) == 1  # nothing timed yet
    pace.see(0.7, 1)  # the first game waited for the worker's setup and its bots' start
    pace.see(0.007, 1)
    assert pace.games(1000, 4) == 35  # 0.25 s of games of 7 ms, not of 0.35 s
    pace.see(0.006, 1)
    pace.see(2.0, 10)  # one odd task of slow games moves it not at all
    assert pace.games(1000, 4) == 35
    assert pace.deadline(35, 600.0) == 60.0  # a task's deadline still at least a minute


def test_the_last_tasks_share_the_games_left_evenly() -> None:
    pace = Pace(seconds=0.25, most=128)
    for _ in range(3):
        pace.see(0.001, 1)
    assert pace.games(1000, 4) == 128  # at most `most`
    assert pace.games(200, 4) == 50  # not one task of 128 and the other slots idle
    assert pace.games(14, 4) == 4 and pace.games(3, 4) == 1
    assert Pace(seconds=0.25).games(3, 4) == 1  # nothing timed: one game a task
