"""Playing a tournament's games on the workers of a Dask cluster: `arena run --cluster tcp://HOST:8786`.

The machine that runs `arena run` keeps the schedule, the store (its one writer) and the page; the workers
only play. Each game is one Dask task that needs one game slot of its worker (the worker resource `games`:
`dask worker tcp://HOST:8786 --nworkers N --nthreads 1 --resources games=1`, N its cores), so a machine plays
at most one game per core and a move's time means the same on every machine. The worker's side, a plugin
that keeps the bots' processes alive across games and confines them as `arena run` does locally, is
arena/lab/workers.py.

Each worker is greeted before anything of the run goes there (`membership.greeting`, a task whose code
travels with it, so that an older arena runs it too and says which it is): a worker that runs another
arena, cannot set the run up or lacks the sandbox asked for is dropped and named, and the others are
accepted. Tasks and bots
go to accepted workers only. Bots travel by content: each bot's files are scattered to one accepted worker
(the others fetch them from there when a game of theirs needs them), and the workers keep them on disk by
digest. A game whose worker died or left is played again elsewhere (Dask does so by itself; this side sends
it again should Dask give up on it, or should its workers all be gone), and a game is stored when its
result reaches this side, once. Dask is imported only in this package, only when it is used.

This module is the facade; a run's parts are modules of their own: plumbing (what arena asks of Dask),
context (one run's frozen context), membership (greeting, accepting, dropping workers), dispatch (tasks out,
bots shipped, tasks taken back), retry (how often a game may fail), intake (answers audited and stored) and
run (the loop over them).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.lab.confirm import Confirm
from arena.lab.context import Context, Patience
from arena.lab.plumbing import INSTALL, ClusterError, dask_quiet, distributed, game_slots, knock, line
from arena.lab.run import Run

if TYPE_CHECKING:
    from arena.tournament.backend import Conditions, Instead, Machine, OnGame, Together
    from arena.tournament.schedule import Slot

__all__ = ["INSTALL", "Cluster", "ClusterError"]


class Cluster:
    """The back end of a Dask cluster, reached through its scheduler at `address` ('tls://HOST:8786').

    The cluster is trusted only through TLS with the class's certificates (`certs`, a folder made by
    `arena cluster-certs`, else Dask's own TLS configuration); a plain tcp:// address is refused unless
    `insecure`. `connect_s` bounds the wait for the scheduler, `workers_s` the wait for a worker with game
    slots, `result_s` the wait for any game to come back (and for a task's games, until their pace is
    known); `idle_s` is how long a worker keeps a bot process that has no game; a game is tried on at most
    `tries` workers that died under it (or failed it) before the run stops. A worker that runs another
    arena, cannot set the run up, returns a game the rules engine does not replay to its record, answers
    that a game failed or that it will not play it, or (`require_sandbox`) has no sandbox, is dropped from
    the run: its games are played elsewhere, and it is named (`on_machine`, with `refused`); with every
    worker dropped and none other joining in `workers_s`, the run stops. `require_sandbox` is by default on
    when the games ask for the sandbox and this machine has it. `guarded`: a scheduler that does not run
    arena's guard (arena/lab/guard.py, which gives each certificate its role) is refused (`arena run` asks
    it; a test's LocalCluster runs without)."""

    remote = True

    def __init__(
        self,
        address: str,
        *,
        certs: Path | None = None,
        insecure: bool = False,
        require_sandbox: bool | None = None,
        connect_s: float = 10.0,
        workers_s: float = 60.0,
        result_s: float = 600.0,
        idle_s: float = 30.0,
        tries: int = 5,
        guarded: bool = False,
    ) -> None:
        self.address = address
        self.certs = certs
        self.insecure = insecure
        self.require_sandbox = require_sandbox
        self.connect_s = connect_s
        self.workers_s = workers_s
        self.result_s = result_s
        self.idle_s = idle_s
        self.tries = tries
        self.guarded = guarded
        self.machines: dict[str, Machine] = {}  # every worker that reported a game, by address
        self.dropped: dict[str, str] = {}  # worker address or machine name -> why it was dropped
        self.named: dict[str, str] = {}  # each dropped worker once, as 'host (address)' -> why
        self._require = bool(require_sandbox)
        self.confirm = Confirm()  # the last run's forfeits played twice, and its disputes

    @property
    def trust(self) -> str:
        """How the cluster is trusted, in words for the page."""
        if self.insecure and not self.address.startswith("tls://"):
            return (
                f"{self.address}, plain tcp:// without TLS (--insecure-cluster): whoever reached its port "
                "could join as a worker"
            )
        return f"{self.address}, TLS with the class's certificates on both ends"

    def play(
        self,
        slots: Sequence[Slot],
        conditions: Conditions,
        on_game: OnGame,
        instead: Instead | None = None,
        on_machine: Callable[[Machine], None] | None = None,
        together: Together | None = None,
    ) -> None:
        if not slots:
            return
        distributed()
        from arena.lab import identity

        ours = identity.version()
        if self.require_sandbox is None:
            from arena.sandbox import capabilities

            conf = conditions.conf
            self._require = bool(conf and conf.sandbox and capabilities(conf, True)[1].sandbox)
        else:
            self._require = self.require_sandbox
        self.confirm = Confirm()
        with dask_quiet():
            client = self._connect()
            try:
                self._slots(client)
                context = Context(
                    self._patience(), client, ours, slots, conditions, on_game, instead, on_machine,
                    self._require, self.idle_s, self.machines, self.dropped, self.named, self.confirm,
                    together,
                )  # fmt: skip
                run = Run(context)
            except BaseException:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)
                raise
            run.play()

    def _patience(self) -> Patience:
        return Patience(self.address, self.connect_s, self.workers_s, self.result_s, self.tries)

    def _connect(self) -> Any:
        from arena.lab import trust

        try:
            trust.check_address(self.address, self.insecure)
            security = None if self.insecure else trust.security(self.certs)
        except trust.TrustError as e:
            raise ClusterError(str(e)) from None
        try:
            knock(self.address, self.connect_s)  # a refused connection is said at once, not after retries
            from arena.lab import wire

            client = distributed().Client(
                # nothing of the lab unpickled here (the scheduler relays what workers hold): TLS read by
                # arena/lab/wire.py, the messages of every peer plain data only
                wire.plain(self.address) if self.address.startswith("tls://") else self.address,
                timeout=self.connect_s,
                set_as_default=False,
                security=security,
                # What comes back from a worker is read as msgpack, never unpickled: a result object
                # whose unpickling runs code would run it here.
                deserializers=["msgpack"],
            )
        except Exception as e:  # OSError, TimeoutError, ValueError for a bad address: all one line
            raise ClusterError(
                f"cannot reach the Dask scheduler at {self.address} within {self.connect_s:g} s "
                f"({type(e).__name__}: {line(str(e))}); start it there with 'dask scheduler' (see "
                "docs/lab.md, 'Starting the scheduler and the workers'), or check its address and "
                "certificates"
            ) from None
        if self.guarded:
            self._check_guard(client)
        return client

    def _check_guard(self, client: Any) -> None:
        """ClusterError unless the scheduler answers that it runs arena's guard."""
        from arena.lab import trust

        try:
            said = client.sync(getattr(client.scheduler, trust.GUARD_OP), callback_timeout=self.connect_s)
        except Exception:
            said = None
        if said != trust.GUARDED:
            with contextlib.suppress(Exception):
                client.close(timeout=10)
            raise ClusterError(
                f"the Dask scheduler at {self.address} runs without arena's guard, which gives each "
                "certificate its role (without it any lab machine's certificate acts as this one): start it "
                "with --preload arena.lab.guard, as docs/lab.md's 'Starting the scheduler and the workers' "
                "says"
            )

    def _alive(self, client: Any) -> None:
        """Raise ClusterError once the scheduler is gone for more than `connect_s` seconds."""
        self._patience().alive(client)

    def _patiently(self, client: Any, call: Callable[[], Any]) -> Any:
        """`call`, tried again while the cluster has no worker to take it, up to `workers_s` seconds."""
        return self._patience().patiently(client, call)

    def _slots(self, client: Any) -> int:
        """The game slots the cluster's workers offer, waiting up to `workers_s` for one to offer any."""
        deadline = time.monotonic() + self.workers_s
        while True:
            slots = game_slots(client)
            if slots:
                return slots
            if time.monotonic() > deadline:
                from arena.lab.workers import RESOURCE

                raise ClusterError(
                    f"no worker of the cluster at {self.address} offers game slots after "
                    f"{self.workers_s:g} s: start workers with 'dask worker {self.address} --nworkers N "
                    f"--nthreads 1 --resources {RESOURCE}=1', N the machine's cores"
                )
            time.sleep(0.5)
