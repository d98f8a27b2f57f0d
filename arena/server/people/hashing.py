"""Password hashing: Argon2id first, as Django's documentation recommends (memory-hard: a stolen database
costs an attacker's GPUs far more than PBKDF2's), with Django's own parameters (2 passes over 100 MiB, 8
lanes); PBKDF2 kept to read the hashes made before, each upgraded at its owner's next sign-in.

Either costs about a quarter second of a core a sign-in here (measured side by side: 230 ms both), so a
class signing in at once is bound by the CPU. A web process hashes for at most HASHING sign-ins at once:
the other sign-ins wait their turn instead of sharing the cores with the pages (a page then waits behind
one hash per process, not behind every thread's), and Argon2's memory stays at 100 MiB a process.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from django.contrib.auth.hashers import Argon2PasswordHasher, PBKDF2PasswordHasher

HASHING = 1
_turns = threading.BoundedSemaphore(HASHING)
_mine = threading.local()  # a thread already holding a turn (PBKDF2's verify calls its own encode)


@contextlib.contextmanager
def _turn() -> Iterator[None]:
    if getattr(_mine, "held", False):
        yield
        return
    with _turns:
        _mine.held = True
        try:
            yield
        finally:
            _mine.held = False


class Argon2(Argon2PasswordHasher):
    """Django's Argon2id hasher, one hash at a time per process."""

    def encode(self, password: str, salt: str) -> str:
        with _turn():
            return super().encode(password, salt)

    def verify(self, password: str, encoded: str) -> bool:
        with _turn():
            return super().verify(password, encoded)


class PBKDF2(PBKDF2PasswordHasher):
    """Django's PBKDF2 hasher, for the hashes made before Argon2; one hash at a time per process."""

    def encode(self, password: str, salt: str, iterations: int | None = None) -> str:
        with _turn():
            return super().encode(password, salt, iterations)

    def verify(self, password: str, encoded: str) -> bool:
        with _turn():
            return super().verify(password, encoded)

    def harden_runtime(self, password: str, encoded: str) -> None:
        with _turn():
            super().harden_runtime(password, encoded)
