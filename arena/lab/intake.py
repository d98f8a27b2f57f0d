"""What comes back from a task: its answer read as plain data, every game replayed by the rules engine
against its slot (arena/lab/audit.py) before it is stored, once; a worker whose answer is not
arena's, whose games fail or that forges one is dropped and named, and its games wait again."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from arena.lab.blame import BOT, MACHINE, Blame
from arena.lab.context import Context
from arena.lab.dispatch import Dispatch, Task
from arena.lab.membership import Membership, greeted
from arena.lab.plumbing import answer, line, machine
from arena.lab.retry import Tries

if TYPE_CHECKING:
    from arena.match.record import GameRecord
    from arena.tournament.backend import Machine
    from arena.tournament.schedule import Slot

log = logging.getLogger("arena")


def accept(
    said: dict[str, Any], batch: tuple[int, ...], slots: Sequence[Slot], ctx: Context, address: str
) -> tuple[Machine | None, list[tuple[int, GameRecord]], float, str]:
    """A task's answer checked: its machine, its records, seconds, and why to drop the worker ("": keep
    it; then the machine is a Machine)."""
    from arena.game.rules import parse_rules
    from arena.lab import audit
    from arena.lab.workers import Refused

    try:
        found = machine(said["machine"], address)
    except (KeyError, TypeError, ValueError) as e:
        return None, [], 0.0, f"its answer names no machine ({type(e).__name__}: {line(str(e))})"
    if why := ctx.unfit(found):
        return found, [], 0.0, why
    records: list[tuple[int, GameRecord]] = []
    rules = parse_rules(ctx.conditions.spec)
    try:
        seconds = float(said["seconds"])
        for k, data in said["played"]:
            if type(k) is not int or not 0 <= k < len(batch) or k in {j for j, _ in records}:
                raise audit.Forged(f"a game numbered {k!r} that its task did not have")
            slot = slots[batch[k]]
            # Where and how it was played, as the machine said of itself (checked above)
            record = audit.rebuild(data, worker=found.host, sandboxed=found.sandbox)
            try:
                audit.check(slot, ctx.conditions.spec, record, rules)
            except audit.Forged as e:
                raise audit.Forged(
                    f"its game of round {slot.round}, {slot.south.name} (south) against "
                    f"{slot.north.name}: {e}"
                ) from None
            records.append((k, record))
    except (audit.Forged, KeyError, TypeError, ValueError, Refused) as e:
        return found, [], 0.0, f"it returned a game the rules engine rejects: {line(str(e))}"
    return found, records, seconds, ""


class Intake:
    """The tasks that came back, settled: stored, or their games played again elsewhere."""

    def __init__(
        self, ctx: Context, members: Membership, dispatch: Dispatch, tries: Tries, blame: Blame
    ) -> None:
        self.ctx = ctx
        self.members = members
        self.dispatch = dispatch
        self.tries = tries
        self.blame = blame

    def settle(self, future: Any, task: Task, address: str) -> None:
        """A task that came back from the worker at `address` (the scheduler's word): its games stored, or
        played again elsewhere."""
        ctx, dispatch = self.ctx, self.dispatch
        dispatch.last_news = time.monotonic()
        if future.status != "finished":  # its worker died or left under it, or Dask gave up on it
            ctx.patience.alive(ctx.client)
            self.tries.died(task.games, future.status)
            dispatch.again(task.games)
            return
        # A dropped worker's answer is not even read (it may be gone with it): its games are played elsewhere.
        said = "" if address in ctx.dropped else answer(future)
        future.release()
        if address in ctx.dropped:
            dispatch.again(task.games)
        elif isinstance(said, str):
            self.members.drop(address, None, said)
            dispatch.again(task.games)
        elif said.get("lost"):  # its worker does not have the run set up (it started again): greet it
            self.members.accepted.pop(address, None)
            dispatch.again(task.games)
        elif isinstance(said.get("shipment"), dict):
            self.garbled(address, said, task)
        elif failure := said.get("refused") or said.get("error"):
            found, _ = greeted(said, address, self.members.slots(address))
            bot = said.get("bot") if said.get("bot") in self.blame.names else None
            self.failed_there(address, found, task, line(str(failure)), bool(said.get("refused")), bot)
        else:
            self.store(address, said, task)

    def garbled(self, address: str, said: dict[str, Any], task: Task) -> None:
        """A worker that received a bot's shipment garbled (it does not match the seal its task carried):
        charged to the machine that served it (arena/lab/shipments.py), never to the finder; the bot is
        shipped again under a new key, and the games go elsewhere than the accused machine."""
        bad = said["shipment"]
        digest, key, served = bad.get("bot"), bad.get("key"), bad.get("served")
        name = self.blame.names.get(digest) if isinstance(digest, str) else None
        from arena.lab.workers import SHIPMENT

        if name is None or not isinstance(key, str) or not key.startswith(f"{SHIPMENT}{digest}-"):
            self.members.drop(address, None, "it named a shipment its task did not carry")
            self.dispatch.again(task.games)
            return
        served = served if isinstance(served, str) else None
        self.dispatch.shipped.pop((name, digest), None)  # the next task's copy: a new key, a fresh scatter
        if served is not None and served in self.ctx.dropped:  # charged already: its copy is not read again
            self.dispatch.again(task.games)
            return
        verdict = self.dispatch.shipments.garbled(address, name, key, served, self.dispatch.seals[digest])
        if verdict.culprit is not None:
            found = self.ctx.machines.get(verdict.culprit) or self.members.known.get(verdict.culprit)
            self.members.drop(verdict.culprit, found, verdict.why)
        elif served is not None:
            for i in task.games:
                self.dispatch.avoid.setdefault(i, set()).add(self.members.machine(served))
        self.dispatch.again(task.games)

    def failed_there(
        self, address: str, found: Machine | None, task: Task, failure: str, refused: bool, bot: str | None
    ) -> None:
        """A task whose worker answered that its games failed (an error) or that it will not play them
        (refused), setting up `bot` if it said so: charged to the bot once the failure follows it to a
        second machine (its games forfeited), to the machine once it stays there (dropped and named);
        meanwhile its games go to another worker. A game that has failed on `tries` workers ends the run."""
        why = failure if refused else f"its games fail there: {failure}"
        members = self.members
        mine = members.machine(address, found)
        verdict = self.blame.failed(
            address, mine, members.shown(address, found), found, task.games, bot, failure, why
        )
        if verdict == MACHINE:
            members.drop(address, found, why)
        elif verdict is None:
            for i in task.games:
                self.dispatch.avoid.setdefault(i, set()).add(mine)
        if verdict != BOT:
            self.tries.failed_on(task.games, address, failure)
        self.dispatch.again(task.games)

    def store(self, address: str, said: dict[str, Any], task: Task) -> None:
        """A task's games, checked by the rules engine, reported; those it left unplayed wait again."""
        ctx = self.ctx
        found, records, seconds, why = accept(said, task.games, ctx.slots, ctx, address)
        if why or found is None:
            self.members.drop(address, found, why)
            self.dispatch.again(task.games)
            return
        self.dispatch.pace.see(seconds, len(records))
        members = self.members
        found = dataclasses.replace(found, certified=members.certified.get(address, ""))
        mine, shown = members.machine(address, found), members.shown(address, found)
        if found.identity != found.host:  # its games are the certified machine's, whatever it calls itself
            records = [(k, dataclasses.replace(r, worker=found.identity)) for k, r in records]
        if found.address not in ctx.machines:
            ctx.machines[found.address] = found
            if ctx.on_machine:
                ctx.on_machine(found)
        held: list[int] = []
        distrusted: dict[str, str] = {}
        with ctx.together() if ctx.together else contextlib.nullcontext():
            self.report(address, mine, shown, task, records, held, distrusted)
        for strike in self.blame.played(mine, tuple(task.games[k] for k, _ in records)):
            if strike.address in members.accepted:  # a game it failed is played here: the failure was its own
                members.drop(strike.address, strike.found, strike.why)
        for other, why in distrusted.items():
            if other not in ctx.dropped:
                self.members.drop(other, ctx.machines.get(other) or self.members.known.get(other), why)
        self.tries.played += len(records)
        unplayed = sorted(set(range(len(task.games))) - {k for k, _ in records})
        self.dispatch.again(tuple(held) + tuple(task.games[k] for k in unplayed))

    def report(
        self,
        address: str,
        machine: str,
        shown: str,
        task: Task,
        records: list[tuple[int, GameRecord]],
        held: list[int],
        distrusted: dict[str, str],
    ) -> None:
        """A task's checked games reported, or held (in `held`) until another machine confirms a forfeit;
        the machines a confirmation distrusts, in `distrusted`."""
        ctx = self.ctx
        for k, record in records:
            i = task.games[k]
            before = len(ctx.confirm.disputes)
            outcome = ctx.confirm.settle(i, ctx.slots[i], address, machine, shown, record)
            if len(ctx.confirm.disputes) > before:
                log.warning(f"a forfeit not confirmed by a second machine: {ctx.confirm.disputes[-1]}")
            if outcome.drop:
                distrusted[outcome.drop] = outcome.why
            if outcome.record is None:  # held: played again on another machine before it counts
                held.append(i)
                self.dispatch.avoid.setdefault(i, set()).add(machine)
            else:
                ctx.on_game(ctx.slots[i], outcome.record)
