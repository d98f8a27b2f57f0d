"""Signing a bot folder's build stamp (bots.STAMP), so that arena believes only the stamps it wrote.

The stamp names the files a build made, and those are left out of the bot's version: a student who could
write one would list a source there (bot.c, or the program itself), edit it, and keep the old version and
its results. The stamp sits in the student's folder, so it carries an HMAC-SHA256 over its content and the
folder's real path, keyed by a secret of this machine's arena: 32 random bytes made once and kept 0600 in
arena's own cache folder (~/.cache/arena, $XDG_CACHE_HOME/arena), which no sandbox shows a bot. Where that
folder cannot be written, the key is this process's own: stamps then hold for one run and bots are built
again the next. A stamp that fails the check is not believed (arena/match/build.py builds the bot again).
A cluster's worker signs the stamp it is shipped again with its own key: it trusts its coordinator, which
checked the stamp with its own.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

KEY_FILE = "build.key"
_KEY_BYTES = 32
MAC = "mac"  # the stamp's field holding the signature


def key_path() -> Path:
    """Where this machine's arena keeps the key: its own cache folder, beside the cluster's bot cache."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "arena" / KEY_FILE


def _kept(path: Path) -> bytes | None:
    """The key at `path` if it is one arena made: a regular file of this user's, 0600 or tighter, 32 bytes;
    else None (missing, or open to others, who may have read it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        ours = stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077
        key = f.read(_KEY_BYTES + 1)
    return key if ours and len(key) == _KEY_BYTES else None


def _make(path: Path) -> None:
    """A new key at `path`, written whole aside first (0600 from its creation), then put in place: linked
    where there is none (two arenas starting at once keep the first), renamed over one that is not ours."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    aside = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(_KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            if _kept(path) is None:
                os.replace(aside, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(aside)


@functools.cache
def _key() -> bytes:
    """This machine's key, made on first use; this process's own where arena's cache cannot keep one."""
    path = key_path()
    with contextlib.suppress(OSError):
        if (key := _kept(path)) is not None:
            return key
        _make(path)
        if (key := _kept(path)) is not None:
            return key
    return secrets.token_bytes(_KEY_BYTES)


def _mac(folder: Path, body: dict[str, object]) -> str:
    content = {k: v for k, v in body.items() if k != MAC}
    message = json.dumps([os.path.realpath(folder), content], sort_keys=True).encode()
    return hmac.new(_key(), message, hashlib.sha256).hexdigest()


def sign(folder: Path, body: dict[str, object]) -> dict[str, object]:
    """`body` with its signature for the bot folder `folder`, as arena writes it into the stamp."""
    return {**{k: v for k, v in body.items() if k != MAC}, MAC: _mac(folder, body)}


def signed(folder: Path, stamp: object) -> bool:
    """Whether `stamp` (the stamp's parsed JSON) is one this machine's arena wrote for `folder`."""
    if not isinstance(stamp, dict) or not isinstance(stamp.get(MAC), str):
        return False
    return hmac.compare_digest(stamp[MAC], _mac(folder, stamp))


def resigned(text: bytes, folder: Path) -> bytes:
    """A stamp shipped by a cluster's coordinator, signed again for `folder` with this machine's key (a
    text that is no stamp is left as it is: not believed here either)."""
    try:
        body = json.loads(text)
    except ValueError:
        return text
    if not isinstance(body, dict):
        return text
    return (json.dumps(sign(folder, body), indent=1, sort_keys=True) + "\n").encode()
