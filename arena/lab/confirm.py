"""A result a replay cannot check is not taken on one machine's word. A bot's timeout, crash or garbled
answer leaves nothing in the record that the rules engine can test, and an illegal move only its answer,
which the replay shows illegal but not that the bot gave it: a machine that says "the opponent timed
out before its first move" forges a win a replay accepts. So such a forfeit, which decides its game, is held
and the game played again on another machine before it counts: the same bot forfeiting there confirms it
(the first record is stored); otherwise the game as the second machine played it is stored, and the
disagreement is named with both accounts, and the bot is kept off that machine (its games go elsewhere,
`kept_off`): a bot that fails on one machine only (it may recognise the machine) costs that machine
nothing, and a machine that forges against one bot gets to play it no more. A machine whose claims are
mostly not confirmed, for several bots that play elsewhere (UNCONFIRMED of them, more claims than it had
confirmed), is dropped and named; an honest machine with a bot that times out now and then is not.

"Another machine" is another as the run tells machines apart (Membership.machine: the machine the
scheduler certified), never another worker process of the same machine, which would confirm its own
forgery; the claims are counted by machine, all of its processes together."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from arena.match.record import GameRecord, Reason
from arena.tournament.schedule import Slot

# Forfeits a replay cannot test: that a timeout, a crash or a garbled answer happened, that the bot gave
# the illegal answer its record keeps (the replay checks the answer is illegal there, audit.py)
UNCHECKABLE = (Reason.TIMEOUT, Reason.CRASH, Reason.GARBLED, Reason.ILLEGAL)
UNCONFIRMED = 3  # bots whose claims on a machine were not confirmed (more than its confirmed) that drop it


@dataclass(frozen=True, slots=True)
class Claim:
    """A held forfeit: where it was played, and its record."""

    address: str
    machine: str  # as the run tells machines apart
    shown: str  # the machine in words
    record: GameRecord


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to do with a game that came back: `record` to store (None: hold it and play it again on
    another machine), and a worker to drop (`drop`, with `why`)."""

    record: GameRecord | None
    drop: str | None = None
    why: str = ""


class Confirm:
    """The run's held forfeits and each machine's confirmed and unconfirmed claims."""

    def __init__(self) -> None:
        self.held: dict[int, Claim] = {}  # game -> the claim waiting for a second machine
        self.confirmed: Counter[str] = Counter()  # machine -> its claims confirmed
        self.unconfirmed: Counter[str] = Counter()  # machine -> its claims not confirmed
        self.replayed = 0  # games played twice to confirm a claim (a held one that the bench then
        # recorded without play is not)
        self.disputes: list[str] = []  # each disagreement, both accounts in words
        # bot name -> the machines it is kept off: its claims there were not confirmed, or it failed to be
        # set up there but not elsewhere (blame.py)
        self.kept_off: dict[str, set[str]] = {}

    def keep_off(self, bot: str, machine: str) -> int:
        """Bot `bot` played no more on `machine`: how many bots that machine is now kept from."""
        self.kept_off.setdefault(bot, set()).add(machine)
        return sum(machine in machines for machines in self.kept_off.values())

    def settle(
        self, i: int, slot: Slot, address: str, machine: str, shown: str, record: GameRecord
    ) -> Outcome:
        """Game `i` as the worker at `address`, of `machine` (`shown`: in words), played it."""
        claim = self.held.pop(i, None)
        if claim is None:
            if record.reason in UNCHECKABLE:
                self.held[i] = Claim(address, machine, shown, record)
                return Outcome(None)
            return Outcome(record)
        self.replayed += 1
        if machine == claim.machine or record.faulty == claim.record.faulty:
            # (played twice on one machine only if it is the only one the game may go to)
            self.confirmed[claim.machine] += 1
            return Outcome(claim.record)
        said = f"{claim.record.faulty} forfeited ({claim.record.reason}: {claim.record.detail})"
        there = (
            f"{record.faulty} forfeited ({record.reason})" if record.faulty else f"it ended {record.reason}"
        )
        dispute = (
            f"round {slot.round}, {slot.south.name} (south) against {slot.north.name}: {claim.shown} said "
            f"{said}; played again on {shown}, {there}, which is stored"
        )
        self.disputes.append(dispute)
        self.unconfirmed[claim.machine] += 1
        n = self.unconfirmed[claim.machine]
        bots = self.keep_off(claim.record.faulty, claim.machine) if claim.record.faulty else 0
        if bots >= UNCONFIRMED and n > self.confirmed[claim.machine]:
            why = (
                f"{n} of its forfeits, of {bots} bots that play elsewhere, were not confirmed by other "
                f"machines (the last: {dispute}): its results cannot be trusted"
            )
            return Outcome(record, claim.address, why)
        return Outcome(record)
