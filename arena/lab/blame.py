"""Whose fault a failed task is: its bot's or its machine's. A worker cannot tell (a bot whose files no
machine can keep fails on every machine, a machine whose disk is full fails every bot), but the run can:
a failure that follows a bot to a second machine is the bot's, and its games are forfeited by it with the
failure and the machines named; a bot's failure whose game is then played elsewhere is the pair's: the bot
is kept off that machine (Confirm.kept_off), which costs neither. A failure that stays with a machine is
the machine's, which is dropped and named: it fails for several bots that play elsewhere (SEVERAL), or
twice without naming a bot, or a game that failed there without naming a bot is played elsewhere. Until
one of those is known, a failed game waits for another machine, and nobody is charged.

Machines are told apart as the run knows them (Membership.machine: the machine the scheduler certified,
not the name a worker gives itself): a bot that fails on two worker processes of one machine is not
charged, however each names itself, and two failures on one machine are its, whichever process had them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arena.game.rules import parse_rules
from arena.lab.confirm import Confirm
from arena.match.record import GameRecord, Reason

if TYPE_CHECKING:
    from arena.tournament.backend import Machine
    from arena.tournament.schedule import Slot

BOT, MACHINE = "bot", "machine"  # the verdicts of `Blame.failed`; None: not known yet
SEVERAL = 3  # bots that fail on a machine and play elsewhere that make the failures the machine's


@dataclass(frozen=True, slots=True)
class Strike:
    """A failure on one worker that nobody has been charged with yet."""

    address: str  # the worker it failed on
    games: frozenset[int]  # the task's games (indices of the run's slots)
    bot: str | None  # the digest of the bot the worker was setting up when it failed, if it said
    why: str  # why to drop the worker, should the failure turn out to be its machine's
    found: Machine | None  # the machine, as it said of itself


class Blame:
    """The failures of one run's tasks, and who is charged with them."""

    def __init__(self, slots: Sequence[Slot], spec: str, confirm: Confirm) -> None:
        self.slots = slots
        self.confirm = confirm  # where the run keeps which bots are kept off which machines
        self.rules = parse_rules(spec)
        self.names = {b.digest: b.name for s in slots for b in (s.south, s.north)}
        self.hosts: dict[str, dict[str, str]] = {}  # bot digest -> machine it failed on -> it in words
        self.strikes: dict[str, list[Strike]] = {}  # machine -> its failures not yet charged
        self.broken: dict[str, str] = {}  # bot name -> why its games are forfeited (their detail)

    def failed(
        self,
        address: str,
        machine: str,
        shown: str,
        found: Machine | None,
        games: tuple[int, ...],
        bot: str | None,
        failure: str,
        why: str,
    ) -> str | None:
        """A task failed on the worker at `address`, of `machine` (`shown`: in words), setting up the bot
        `bot` if the worker said so: BOT if that bot is now charged with it (its games are forfeited:
        `instead`), MACHINE if the machine is (the caller drops it), None if it is not known yet (its games
        go to another machine)."""
        if bot is not None:
            seen = self.hosts.setdefault(bot, {})
            seen[machine] = shown
            if len(seen) >= 2:
                name = self.names.get(bot, bot)
                self.broken.setdefault(
                    name,
                    f"bot {name} could not be started on {len(seen)} machines "
                    f"({', '.join(sorted(seen.values()))}): "
                    f"{failure}; its games of this run are forfeited: check that its files are ones any "
                    "machine can keep and run (the next run tries it again)",
                )
                for strikes in self.strikes.values():  # the machines it failed on are cleared of it
                    strikes[:] = [s for s in strikes if s.bot != bot]
                return BOT
        these = frozenset(games)
        if any(s.games & these for m, strikes in self.strikes.items() if m != machine for s in strikes):
            return None  # these games failed on another machine too: it follows them, not the machine
        mine = self.strikes.setdefault(machine, [])
        if bot is None and any(s.bot is None for s in mine):
            return MACHINE  # a second failure there of no bot in particular
        if bot is not None and len(self.failing(machine) | {bot}) >= SEVERAL:
            return MACHINE  # it fails for several bots
        mine.append(Strike(address, these, bot, why, found))
        return None

    def failing(self, machine: str) -> set[str]:
        """The bots (digests) that failed on `machine`, or are kept off it, so far."""
        off = {d for d, name in self.names.items() if machine in self.confirm.kept_off.get(name, ())}
        return {s.bot for s in self.strikes.get(machine, []) if s.bot is not None} | off

    def played(self, machine: str, games: tuple[int, ...]) -> list[Strike]:
        """Games played on `machine`: a failure of another machine on one of them that named no bot is
        that machine's own, and so are those of a machine that now fails for several bots (the caller
        drops their workers); one that named a bot keeps that bot off that machine."""
        done = set(games)
        guilty = []
        for other, strikes in list(self.strikes.items()):
            if other == machine:
                continue
            for hit in [s for s in strikes if s.games & done]:
                if hit.bot is None or self.confirm.keep_off(self.names[hit.bot], other) >= SEVERAL:
                    guilty.append(hit)
                    del self.strikes[other]
                    break
                strikes.remove(hit)
        return guilty

    def instead(self, slot: Slot) -> GameRecord | None:
        """The forfeit to record for a game of a bot charged with its failures, or None to play it."""
        culprit = next((b.name for b in (slot.south, slot.north) if b.name in self.broken), None)
        if culprit is None:
            return None
        return slot.unplayed(self.rules, culprit, Reason.CRASH, self.broken[culprit])
