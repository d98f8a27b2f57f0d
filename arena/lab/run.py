"""One `Cluster.play`: membership, dispatch, retry and intake together, in one loop until every game is
stored, and the run's traces on the workers ended after it."""

from __future__ import annotations

import contextlib
import itertools
import time
from typing import Any

from arena.lab.blame import Blame
from arena.lab.context import Context
from arena.lab.dispatch import Dispatch
from arena.lab.intake import Intake
from arena.lab.membership import Membership
from arena.lab.plumbing import UNKNOWN, ClusterError, game_workers, where
from arena.lab.retry import Tries


class Run:
    """A worker is greeted once when it shows up: accepted if it runs this arena and can play as asked,
    else dropped. Tasks and bots go to accepted workers only (Dask's `workers=`); a worker that forges a
    game, fails its games or refuses them is dropped too, its games played elsewhere. A game whose task
    died with its worker or never answered is counted, and tried at most `tries` times; one that failed on
    `tries` workers ends the run, as does having no worker left to play for `workers_s`."""

    def __init__(self, ctx: Context) -> None:
        serial = itertools.count(1)
        self.ctx = ctx
        self.tries = Tries(ctx.slots, ctx.patience.tries)
        self.blame = Blame(ctx.slots, ctx.conditions.spec, ctx.confirm)
        self.members = Membership(ctx, serial, self.withdraw_from)
        self.dispatch = Dispatch(ctx, self.members, self.tries, self.blame, serial)
        self.intake = Intake(ctx, self.members, self.dispatch, self.tries, self.blame)

    def withdraw_from(self, address: str) -> None:
        self.dispatch.withdraw_from(address)

    def play(self) -> None:
        dispatch = self.dispatch
        try:
            self.look(force=True)
            self.members.wait_for_greetings()
            while dispatch.futures or dispatch.waiting:
                self.look()
                dispatch.feed()
                if not dispatch.futures:
                    self.wait_for_workers()
                elif dispatch.done.has_ready():
                    self.settle(dispatch.done.next_batch(block=False))
                else:
                    self.watch()
                    self.wait()
        finally:
            self.close()

    def settle(self, ready: list[Any]) -> None:
        """The tasks that came back, each settled, their workers asked of the scheduler in one call."""
        dispatch = self.dispatch
        ready = [f for f in ready if f in dispatch.futures]
        held = where(self.ctx.client, [f for f in ready if f.status == "finished"]) if ready else {}
        for future in ready:
            if future in dispatch.futures:  # not taken back with a worker the ones before had dropped
                self.intake.settle(future, dispatch.futures.pop(future), held.get(future.key, UNKNOWN))

    def wait(self) -> None:
        """Until a task is done, at most 50 ms (then the loop looks and watches again): woken by the task's
        own callback, where a sleep would let a finished task wait out its slice."""
        news = self.dispatch.news
        news.wait(0.05)
        news.clear()

    def look(self, force: bool = False) -> None:
        """The workers as the scheduler knows them (at most once a second), and the tasks that only workers
        no longer accepted could run taken back."""
        if self.members.look(force):
            self.dispatch.orphans()

    def wait_for_workers(self) -> None:
        """Games wait and no worker may play them: wait up to `workers_s` for one that may."""
        dispatch, patience = self.dispatch, self.ctx.patience
        dispatch.again(dispatch.draw(len(dispatch.waiting)))  # those `instead` records need no worker
        if not dispatch.waiting:
            return
        deadline = time.monotonic() + patience.workers_s
        while not self.members.accepted:
            if time.monotonic() > deadline:
                raise ClusterError(self.members.none_left())
            patience.alive(self.ctx.client)
            time.sleep(0.2)
            self.look(force=True)
        dispatch.last_news = time.monotonic()

    def watch(self) -> None:
        """While nothing comes back: the scheduler alive, some game back within `result_s`, and a task
        far slower than its games' pace taken back and sent again, to another worker."""
        patience, dispatch = self.ctx.patience, self.dispatch
        patience.alive(self.ctx.client)
        if time.monotonic() - dispatch.last_news > patience.result_s:
            raise ClusterError(
                f"no game came back from the cluster at {patience.address} in {patience.result_s:g} s "
                f"({len(dispatch.futures)} tasks out); the games stored so far are kept: run the same "
                "command again to resume"
            )
        dispatch.late()

    def close(self) -> None:
        """The run's tasks cancelled and its plugin ended on every worker that has it (each ends its
        bots), within a deadline; then the connection closed."""
        from arena.lab import workers

        client, members = self.ctx.client, self.members
        try:
            out = [f for f, _ in members.greeting.values()] + list(self.dispatch.futures)
            if out:
                with contextlib.suppress(Exception):
                    client.cancel(out, force=True)
            with contextlib.suppress(Exception):  # clean-up must not hide why the run stopped
                there = sorted(members.joined & set(game_workers(client)))
                if there:
                    # `callback_timeout` is the client's own deadline for the call (Client.sync)
                    client.run(
                        workers.leave, members.plugin, workers=there, on_error="return", callback_timeout=30
                    )
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=10)
