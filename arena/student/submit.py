"""`arena submit`'s side of the wire: a bot (a file, or a folder zipped) sent to the class's server with
the student's token, and its check waited for. Standard library only: a student needs no server extra.

The token is a password: never in a command's arguments, which every user of the machine reads (ps). It
comes from ARENA_TOKEN or from the file `arena submit --login` writes (LOGIN, 0600 in a 0700 folder).
"""

from __future__ import annotations

import io
import json
import os
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from pathlib import Path
from typing import Any

from arena.match.bots import STAMP

DONE = ("passed", "failed")
LOGIN = "submit.json"  # in $XDG_CONFIG_HOME/arena (~/.config/arena): the server and the token


class SubmitError(RuntimeError):
    """The upload or the wait failed; the message is one line (the server's own, when it said one)."""


def login_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "arena" / LOGIN


def save_login(server: str, token: str) -> Path:
    """Keep the server and the token for the next `arena submit`, readable by this user alone."""
    path = login_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    aside = path.with_name(f".{LOGIN}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        json.dump({"server": server, "token": token}, f)
    os.replace(aside, path)
    return path


def saved_login() -> dict[str, str]:
    """The server and token `arena submit --login` kept ({} if none); SubmitError if others can read it."""
    path = login_file()
    try:
        info = path.stat()
        if info.st_mode & 0o077:
            raise SubmitError(f"{path} is readable by other users: chmod 600 it (it holds your token)")
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise SubmitError(f"{path}: cannot read it ({e}); run arena submit --login again") from None
    return (
        {k: str(v) for k, v in data.items() if k in ("server", "token") and v}
        if isinstance(data, dict)
        else {}
    )


def check_token(server: str, token: str) -> None:
    """SubmitError unless the server takes the token (asked for a version no one has: 404 means yes)."""
    url = f"{server.rstrip('/')}/api/versions/0"
    try:
        _call(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}))
    except SubmitError as e:
        if "no such version" not in str(e):
            raise


def packed(path: Path) -> tuple[str, bytes]:
    """The bot at `path` as (file name, bytes): a file as it is, a folder as a zip of its files (not its
    build's stamp, caches or hidden files) inside a folder of its name."""
    path = Path(path)
    if path.is_file():
        return path.name, path.read_bytes()
    if not path.is_dir():
        raise SubmitError(f"{path}: no such bot file or folder")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for name in sorted(files):
                full = Path(root) / name
                if name.startswith(".") or name == STAMP or full.is_symlink():
                    continue
                z.write(full, f"{path.name}/{full.relative_to(path)}")
    return f"{path.name}.zip", buf.getvalue()


def _multipart(name: str, data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    safe = name.replace('"', "_").replace("\r", "_").replace("\n", "_")
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="bot"; filename="{safe}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _call(request: urllib.request.Request, timeout: float = 60) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (the class's own URL)
            data: dict[str, Any] = json.loads(answer.read())
            return data
    except urllib.error.HTTPError as e:
        try:
            said = json.loads(e.read()).get("error")
        except ValueError:
            said = None
        raise SubmitError(said or f"the server answered {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise SubmitError(f"cannot reach the server at {request.full_url}: {reason}") from None


def submit(server: str, token: str, path: Path) -> dict[str, Any]:
    """Upload the bot; the server's answer (its version number and id, status 'queued')."""
    name, data = packed(path)
    body, kind = _multipart(name, data)
    request = urllib.request.Request(
        server.rstrip("/") + "/api/submit",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": kind},
    )
    return _call(request)


def wait(server: str, token: str, ident: int, seconds: float = 600, every: float = 1.0) -> dict[str, Any]:
    """The version's status once its check is done (or as it stands after `seconds`)."""
    url = f"{server.rstrip('/')}/api/versions/{int(ident)}"
    deadline = time.monotonic() + seconds
    while True:
        status = _call(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}))
        if status.get("status") in DONE or time.monotonic() > deadline:
            return status
        time.sleep(every)
