"""A Dask worker's side of a tournament played on a cluster (arena/lab/__init__.py is the other side).

For each run the coordinator sets up an `Arena` worker plugin on every worker it accepts (`join`, the end of
its greeting, on a worker that runs the coordinator's arena; `leave` at the run's end): it tells the worker
what the run's games are played under, resolves the run's limits against what this machine can
enforce (`confine.capabilities`, reported back as a `Machine` with every game), and keeps a `Pool` of bot
processes alive across games, ended after a fault, after `idle_s` without a game, and all at once when the
run ends. Games are played on the plugin's own threads, one per game slot: a process started from a thread
is ended with it (the sandbox's --die-with-parent), so that thread must live as long as the bot may.

Bots come by content (`Shipment`) and are kept on disk by digest under ARENA_CACHE (default
~/.cache/arena/bots): DIGEST/NAME.py or DIGEST/NAME/. Before a bot's process starts, its cached files are
hashed again; a copy that does not hash to the tournament's digest never runs: it is replaced by the shipped
files, and if those do not hash to it either (the bot changed after the run read it) the game is `Refused`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import logging
import os
import pickle
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin, get_worker
from distributed.utils import sync

from arena.game.rules import Move, parse_rules
from arena.lab import identity
from arena.match import stamp
from arena.match.bots import STAMP, Bot, BotError, bot_files, load_bot
from arena.match.pool import Pool
from arena.match.record import GameRecord
from arena.match.referee import Player, play_game
from arena.sandbox import Warden, capabilities
from arena.tournament.backend import Conditions, Machine

CACHE_ENV = "ARENA_CACHE"
RESOURCE = "games"  # the Dask worker resource that counts game slots: dask worker ... --resources games=N
log = logging.getLogger("arena")
Game = tuple[str, str, tuple[Move, ...]]  # one game of a task: the south and north bots' digests, the opening
# What a task returns: (place in the task, record) of the games it played, where, and how long it took.
Played = tuple[list[tuple[int, GameRecord]], Machine, float]
MACHINE_ENV = "ARENA_MACHINE"  # a worker's machine name where the host name is not the one to show
SHIPMENT = "Shipment-"  # how a shipment's Dask key begins: Shipment-DIGEST-SERIAL
SETUP_S = 60.0  # how long a worker may take to set a run up (the warden's sweep runs apart, after it)


class Refused(Exception):
    """A worker will not play a game: one line saying which bot, where, and why."""


class Unwritable(Refused):
    """A worker cannot keep any bot (its cache folder): its machine's failure, whichever bot it was setting
    up, so it names no bot and is not charged to one."""


class Unready(Exception):
    """A bot this worker could not set up (cache, check): the bot's digest, and what went wrong, as
    words (a refusal as its message). The coordinator charges it to the bot once it follows the bot to a
    second machine, to this machine if it stays here."""

    def __init__(self, digest: str, refused: str | None, error: str | None) -> None:
        super().__init__(refused or error)
        self.digest, self.refused, self.error = digest, refused, error


@dataclass(frozen=True, slots=True)
class Shipment:
    """A bot's files as the coordinator ships them: `entry` is the bot's file or folder name, and `files`
    (path relative to the folder holding the bot, mode, content) are every file its digest covers."""

    name: str
    digest: str
    entry: str
    files: tuple[tuple[str, int, bytes], ...]

    def plain(self) -> Plain:
        """As it travels between the coordinator and the workers and between workers: plain data, which a
        worker reads from another without unpickling (arena/lab/wire.py refuses anything else)."""
        return (self.name, self.digest, self.entry, self.files)

    @classmethod
    def of(cls, plain: object) -> Shipment:
        """The shipment of `plain` as it arrived (a tuple, the lists of msgpack's reading too); ValueError
        for anything else (what a hostile machine served)."""
        if not isinstance(plain, (tuple, list)) or len(plain) != 4:
            raise ValueError("not a bot's shipment")
        words, files = plain[:3], plain[3]
        try:
            rows = tuple((str(r), int(m), bytes(d)) for r, m, d in files)
        except (TypeError, ValueError) as e:
            raise ValueError(f"not a bot's shipment ({e})") from None
        if not all(isinstance(x, str) for x in words):
            raise ValueError("not a bot's shipment")
        return cls(str(words[0]), str(words[1]), str(words[2]), rows)

    @property
    def seal(self) -> str:
        """A hash of all of the shipment as the coordinator packed it (names, modes, contents, each
        length-prefixed): the task that uses it carries it, so that the machine it arrives at tells a copy
        garbled on the way (by a machine that served it) from the bot's own files."""
        h = hashlib.sha256()
        for word in (self.name, self.digest, self.entry):
            _chunk(h, word.encode())
        for rel, mode, data in self.files:
            _chunk(h, rel.encode())
            _chunk(h, str(mode).encode())
            _chunk(h, data)
        return h.hexdigest()


def _chunk(h: Any, data: bytes) -> None:
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)


def arrived(plain: object, seal: str) -> Shipment | None:
    """The shipment of `plain` if it is whole (it hashes to the `seal` its task carries), else None."""
    try:
        ship = Shipment.of(plain)
    except ValueError:
        return None
    return ship if secrets.compare_digest(ship.seal, seal) else None


Plain = tuple[str, str, str, tuple[tuple[str, int, bytes], ...]]  # a Shipment as plain data


def pack(bot: Bot) -> Shipment:
    """The files of `bot`, read now without following a link (arena.match.bots.bot_files: a link in its
    folder is never shipped, nor what it points to); a bot changed since its digest was taken is refused
    by the workers."""
    files = tuple((file.rel, file.mode & 0o777, f.read()) for file, f in bot_files(bot.path))
    return Shipment(bot.name, bot.digest, bot.path.name, files)


def cache_root() -> Path:
    """Where this machine keeps the bots it was shipped: $ARENA_CACHE, else ~/.cache/arena/bots."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "arena" / "bots"


class Cache:
    """Bots on this machine's disk by digest; every look at one hashes its files again."""

    def __init__(self, root: Path, where: str) -> None:
        self.root = root
        self.where = where  # this worker, for messages
        self._lock = threading.Lock()

    def bot(self, ship: Shipment) -> Bot:
        """The bot of `ship` as this machine runs it, its cached files hashing to `ship.digest`; a cached
        copy that does not is replaced first. Refused if the shipped files do not hash to it either."""
        path = self.root / ship.digest / ship.entry
        # Every worker on this machine shares its cache: one at a time looks at a bot or replaces it, else
        # one worker's replacing a copy removes it under another's feet while that one loads it (seen on
        # CI: two workers caching one bot at once, one refused it as 'cannot be read').
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            machine = open(self.root / ".lock", "a")  # noqa: SIM115 (closed by the with below)
        except OSError as e:
            raise self._unwritable(e) from None
        with machine, self._lock:
            fcntl.flock(machine, fcntl.LOCK_EX)  # released when the file is closed
            if path.exists():
                with contextlib.suppress(BotError):
                    if (bot := load_bot(path)).digest == ship.digest:
                        return bot
                log.warning(f"{self.where}: the cached copy of bot {ship.name!r} at {path} differs from the "
                            "tournament's; replaced by the shipped files")  # fmt: skip
            try:
                self._write(ship)
            except OSError as e:
                raise self._unwritable(e) from None
            try:
                bot = load_bot(path)
            except BotError as e:
                raise Refused(f"{self.where} cannot run bot {ship.name!r}: {e}") from None
            if bot.digest != ship.digest:
                raise Refused(
                    f"{self.where} refused bot {ship.name!r}: its files hash to {bot.digest}, not to the "
                    f"tournament's {ship.digest} (did it change after the run began? run again to play the "
                    "version there is now)"
                )
            return bot

    def _unwritable(self, e: OSError) -> Unwritable:
        return Unwritable(
            f"{self.where} cannot keep bots in {self.root} ({e.strerror}): give it a writable folder in "
            f"${CACHE_ENV}"
        )

    def _write(self, ship: Shipment) -> None:
        """Put the shipped files in place whole: written aside, then renamed into place. Each file is
        written through its folder's descriptor, a name at a time, as the coordinator read it
        (arena.match.bots.bot_files): a bot whose files' paths are longer than the system takes in one
        (PATH_MAX, 4,096 bytes) is cached whole, as it plays locally."""
        self.root.mkdir(parents=True, exist_ok=True)
        aside = self.root / f".{ship.digest}.{os.getpid()}.{secrets.token_hex(4)}"
        # The build stamp, signed by the coordinator's arena, is signed again by this machine's for the
        # folder it will be in: arena believes only stamps its own key signed (arena/match/stamp.py).
        there = Path(os.path.realpath(self.root)) / ship.digest / ship.entry
        try:
            aside.mkdir(mode=0o755)
            top = os.open(aside, _FOLDER)
            try:
                for rel, mode, data in ship.files:
                    if rel == f"{ship.entry}/{STAMP}":
                        data = stamp.resigned(data, there)
                    _put(top, rel, data, mode)
            finally:
                os.close(top)
            aside.chmod(0o755)
            entry = self.root / ship.digest
            if entry.exists():
                shutil.rmtree(entry, ignore_errors=True)
            with contextlib.suppress(OSError):  # another worker on this machine may have put it there
                os.rename(aside, entry)
        finally:
            shutil.rmtree(aside, ignore_errors=True)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _put(top: int, rel: str, data: bytes, mode: int) -> None:
    """Write `data` at `rel` below the folder open as `top`, making its folders, one name at a time (never
    a whole path, which may be longer than the system takes, and never through a link); readable by the
    unprivileged user a sandboxed bot may run as, an executable staying executable."""
    *folders, name = rel.split("/")
    if not name or any(part in ("", ".", "..") for part in (*folders, name)):
        raise OSError(errno.EINVAL, "not a path inside the bot's folder", rel)
    fd = os.dup(top)
    try:
        for part in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            below = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = below
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(name, flags, 0o600, dir_fd=fd), "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode | 0o444 | (0o111 if mode & 0o100 else 0))
    finally:
        os.close(fd)


class Arena(WorkerPlugin):
    """What one run's games need on a worker: the rules, the limits as this machine enforces them, the bot
    cache, the bots' processes and the threads that play. Set up by the coordinator's greeting on each
    worker it accepts (`join`, by name, so that a later run of the same tournament replaces what a killed
    one left) and torn down after the run (`leave`)."""

    def __init__(self, conditions: Conditions, idle_s: float = 30.0) -> None:
        self.conditions = conditions
        self.idle_s = idle_s

    def setup(self, worker: Any) -> None:
        self.worker = worker
        self.served: dict[str, str] = {}  # shipment key -> the worker it was fetched from
        self.sealed: set[str] = set()  # shipment keys whose copy here matched its seal
        self.address = str(worker.address)
        self.rules = parse_rules(self.conditions.spec)
        asked = self.conditions.conf
        if asked is None:
            raise ValueError("a cluster run needs the limits as asked (Conditions.conf)")
        conf, caps = capabilities(asked, asked.sandbox)
        slots = int(worker.state.total_resources.get(RESOURCE, 0))
        cores = os.cpu_count() or 1
        notes = list(caps.notes)
        if slots > cores:
            notes.append(
                f"{slots} game slots on {cores} cores: bots there think slower than on the other machines; "
                f"start it with --resources {RESOURCE}={cores}"
            )
        host = machine_name()
        self.machine = Machine(
            self.address, host, cores, slots, caps.sandbox, caps.cgroups, tuple(notes), identity.version()
        )
        self.cache = Cache(cache_root(), f"worker {host} ({self.address})")
        self.threads = ThreadPoolExecutor(max(1, slots), thread_name_prefix="arena-game")
        self._bots: dict[str, Bot] = {}  # by digest, as this machine runs them
        self._stop = threading.Event()
        self._ready = threading.Event()
        # The warden sweeps what a killed worker left (frozen bots): off Dask's event loop, which must keep
        # answering the scheduler meanwhile; the first game waits for it.
        threading.Thread(target=self._prepare, args=(conf, slots), name="arena-setup", daemon=True).start()

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        """Dask's hook on each of this worker's task transitions: a shipment fetched from another worker
        ('fetch' to 'flight') remembers which worker serves it, so that a garbled copy names its server;
        one that leaves memory is no longer known whole."""
        if not (isinstance(key, str) and key.startswith(SHIPMENT)):
            return
        if start == "memory":  # its copy here is gone: one fetched again is checked again
            self.sealed.discard(key)
        if start == "fetch" and finish == "flight":
            with contextlib.suppress(Exception):
                self.served[key] = str(self.worker.state.tasks[key].coming_from)

    def _prepare(self, conf: Any, slots: int) -> None:
        try:
            self.warden = Warden(conf)
            self.pool = Pool(self.warden, self.conditions.limits.quit_grace_ms, keep=16 * max(1, slots))
        finally:
            self._ready.set()
        threading.Thread(target=self._end_idle, name="arena-idle", daemon=True).start()

    def teardown(self, worker: Any) -> None:
        self._stop.set()
        self.threads.shutdown(wait=False, cancel_futures=True)
        self._ready.wait()
        with contextlib.suppress(AttributeError):  # the warden failed to start: nothing to end
            self.pool.kill()
            self.warden.close()

    def _end_idle(self) -> None:
        """End bot processes that waited `idle_s` for a game: all of them once a run's coordinator is gone
        without a word (kill -9), whose plugin then lingers until the tournament runs again."""
        while not self._stop.wait(max(0.1, self.idle_s / 4)):
            self.pool.end_idle(self.idle_s)

    def play(self, bots: dict[str, Shipment], games: Sequence[Game]) -> Played:
        """Play `games` one after the other on one game slot (the plugin's own thread)."""
        return self.threads.submit(self._games, bots, games).result()

    def answer(self, bots: dict[str, Plain], games: Sequence[Game]) -> str:
        """`play`, its outcome as JSON text: plain data the coordinator reads without running any code
        of this machine's (it rebuilds and checks every record), a refusal as its message."""
        start = time.monotonic()
        bot = None
        try:
            ships = {digest: Shipment.of(plain) for digest, plain in bots.items()}
            played, machine, seconds = self.play(ships, games)
        except Unready as e:
            played, machine, seconds, refused, error, bot = (
                [],
                self.machine,
                0.0,
                e.refused,
                e.error,
                e.digest,
            )
        except Refused as e:
            played, machine, seconds, refused, error = [], self.machine, 0.0, str(e), None
        except Exception as e:  # said in words: the coordinator reads no pickled exception
            played, machine, seconds, refused, error = [], self.machine, 0.0, None, f"{type(e).__name__}: {e}"
        else:
            refused = error = None
        return json.dumps(
            {
                "machine": dataclasses.asdict(machine),
                "seconds": seconds or time.monotonic() - start,
                "played": [[k, record.to_dict()] for k, record in played],
                "refused": refused,
                "error": error,
                "bot": bot,  # the bot being set up when it failed, if any
            }
        )

    def _player(self, ship: Shipment) -> Player:
        """A player of the shipped bot; whenever its process is about to start, its files are hashed again."""
        known = self._bots.get(ship.digest)
        bot = known or self._cached(ship)
        self._bots[ship.digest] = bot
        player = self.pool.take(bot)
        if known is not None and not player.running:
            try:
                self._cached(ship)
            except BaseException:
                self.pool.give(player, keep=False)
                raise
        return player

    def _cached(self, ship: Shipment) -> Bot:
        """`Cache.bot`, a failure of which names the bot (Unready)."""
        try:
            return self.cache.bot(ship)
        except Unwritable:
            raise  # the machine's, not this bot's
        except Refused as e:
            raise Unready(ship.digest, str(e), None) from e
        except Exception as e:
            raise Unready(ship.digest, None, f"{type(e).__name__}: {e}") from e

    def _games(self, bots: dict[str, Shipment], games: Sequence[Game]) -> Played:
        """Play the task's games in order, but none after a bot's game in which it gave no first answer
        (a hang or a crash at start): those go back to the coordinator, whose bench decides about them."""
        start = time.monotonic()
        self._ready.wait()
        played: list[tuple[int, GameRecord]] = []
        silent: set[str] = set()  # digests of bots that gave no first answer in this task
        for k, (south, north, opening) in enumerate(games):
            if self._stop.is_set():  # the run is over: nobody waits for the rest
                break
            if south in silent or north in silent:
                continue
            players: list[Player] = []
            kept = False
            try:
                for digest in (south, north):
                    players.append(self._player(bots[digest]))
                record = play_game(
                    self.rules, players[0], players[1], self.conditions.limits, opening=opening,
                    seed=self.conditions.seed,
                )  # fmt: skip
                kept = not self.conditions.fresh
            finally:
                for player in players:
                    self.pool.give(player, keep=kept)
            played.append(
                (k, dataclasses.replace(record, worker=self.machine.host, sandboxed=self.machine.sandbox))
            )
            if culprit := record.no_first_answer():
                silent.add(south if culprit == record.south else north)
        return played, self.machine, time.monotonic() - start


def machine_name() -> str:
    """This machine's name as the records and the page show it: $ARENA_MACHINE, else its host name."""
    return os.environ.get(MACHINE_ENV) or socket.gethostname()


def join(plugin: str, arena: bytes) -> str:
    """The end of the coordinator's greeting (cluster._greeting), run as a task on a worker that has the
    coordinator's arena: the run's `Arena` plugin (pickled, so that no other arena unpickles it) set up
    here under the name `plugin`, replacing what a killed run of the same tournament left. Its answer is
    JSON text: this machine as it plays the run's games, or why arena cannot play here."""
    worker = get_worker()
    said = {"version": identity.version(), "host": machine_name()}
    try:
        setup = pickle.loads(arena)
        sync(worker.loop, worker.plugin_add, plugin=setup, name=plugin, catch_errors=False,
             callback_timeout=SETUP_S)  # fmt: skip
    except Exception as e:  # said in words: the coordinator reads no pickled exception
        worker.plugins.pop(plugin, None)
        return json.dumps({**said, "error": f"{type(e).__name__}: {e}"})
    return json.dumps({**said, "machine": dataclasses.asdict(setup.machine)})


async def leave(plugin: str, dask_worker: Any) -> None:
    """The run's end on this worker (Client.run): its plugin torn down, which ends the run's bots."""
    if plugin in dask_worker.plugins:
        await dask_worker.plugin_remove(plugin)


def play_task(
    plugin: str, bots: dict[str, Plain], games: Sequence[Game], seals: dict[str, tuple[str, str]]
) -> str:
    """The task of a few games, run by Dask on a worker with a free game slot: `bots` are the files of
    every bot they need, by digest, and `seals` each one's Dask key and seal (`Shipment.seal`). Its answer
    is JSON text (`Arena.answer`); a worker that does not have the run set up (one started again at the
    same address) says so, to be greeted again; a shipment that arrived garbled is not used: the answer
    names it and the worker that served it (`served`, None: the coordinator's own scatter)."""
    arena = get_worker().plugins.get(plugin)
    if not isinstance(arena, Arena):
        return json.dumps({"lost": f"arena's run {plugin} is not set up on this worker"})
    for digest, plain in bots.items():
        key, seal = seals[digest]
        if key in arena.sealed:  # checked by an earlier task (Dask's copy in memory does not change)
            continue
        if arrived(plain, seal) is not None:
            arena.sealed.add(key)
        else:
            served = arena.served.get(key)
            return json.dumps({"machine": dataclasses.asdict(arena.machine),
                               "shipment": {"bot": digest, "key": key, "served": served}})  # fmt: skip
    return arena.answer(bots, games)


def served_by(plugin: str, key: str, dask_worker: Any) -> str | None:
    """Which worker this one fetched its copy of the shipment `key` from (Client.run, asked by the
    coordinator following a garbled copy back; None: the coordinator's own scatter, or not known)."""
    arena = dask_worker.plugins.get(plugin)
    return arena.served.get(key) if isinstance(arena, Arena) else None


def waiting_for(key: str, dask_worker: Any) -> list[str]:
    """The data task `key` waits for on this worker, not here yet (Client.run, asked by the coordinator of
    a task past its deadline): a worker that cannot get a bot's files is not the one to blame."""
    ts = dask_worker.state.tasks.get(key)
    if ts is None:
        return []
    return [str(dep.key) for dep in ts.dependencies if dep.state in ("fetch", "flight", "missing")]
