"""The bot processes kept alive between games: a worker's `Pool` of `Player`s."""

from __future__ import annotations

import threading
import time

from arena.match.bots import Bot
from arena.match.referee import Player
from arena.sandbox import Warden

MAX_IDLE_PLAYERS = 16  # bot processes a worker keeps alive between games, per game slot


class Pool:
    """The bot processes a worker keeps alive between games: a game takes the players it needs out and
    gives them back, and at most `keep` wait idle (the least recently used are ended first). Thread-safe,
    since a cluster worker plays several games at once."""

    def __init__(self, warden: Warden | None, grace_ms: int, keep: int = MAX_IDLE_PLAYERS) -> None:
        self.warden = warden
        self.grace_ms = grace_ms
        self.keep = keep
        self._idle: list[tuple[Player, float]] = []  # oldest first, with when each came back
        self._busy: set[Player] = set()
        self._lock = threading.Lock()
        self._closed = False

    def take(self, bot: Bot) -> Player:
        """An idle player of this bot version (its process may have ended after a fault), else a new one."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the bot processes of this worker have been ended: it plays no more games")
            found = next((i for i, (p, _) in enumerate(self._idle) if p.bot == bot), None)
            player = self._idle.pop(found)[0] if found is not None else Player(bot, warden=self.warden)
            self._busy.add(player)
            return player

    def give(self, player: Player, keep: bool = True) -> None:
        """A game is over: keep the player for the next game of its bot, or end its process."""
        with self._lock:
            self._busy.discard(player)
            # a remote agent is lent to one game at a time: its bridge ends with the game
            ending = [player] if not keep or self._closed or player.bot.remote else []
            if not ending:
                self._idle.append((player, time.monotonic()))
            while len(self._idle) > self.keep:
                ending.append(self._idle.pop(0)[0])
        for p in ending:
            p.close(self.grace_ms)

    def end_idle(self, older_than: float) -> None:
        """End the processes that have waited more than `older_than` seconds for a game."""
        cut = time.monotonic() - older_than
        with self._lock:
            ending = [p for p, since in self._idle if since < cut]
            self._idle = [(p, since) for p, since in self._idle if since >= cut]
        for p in ending:
            p.close(self.grace_ms)

    def kill(self) -> None:
        """End every process now, also those of games still being played (which then end in a fault whose
        record nobody wants); the pool takes no player back after this."""
        with self._lock:
            self._closed = True
            players = [p for p, _ in self._idle] + list(self._busy)
            self._idle = []
        for p in players:
            p.kill()
