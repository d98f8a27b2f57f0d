"""Which arena a machine runs: its package version and a digest of its code.

Every commit of arena says version 0.1.0, so the version alone cannot tell a lab machine that kept an older
checkout from an up-to-date one; the digest of arena's own source files can. A cluster worker announces
both with every result, and the coordinator refuses a worker whose arena is not its own.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import arena

PACKAGE = Path(arena.__file__).resolve().parent


def code_digest() -> str:
    """A digest of every Python source and template of the installed arena package (path and content)."""
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".html") and p.is_file()):
        h.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def version() -> str:
    """'0.1.0 (code 1a2b3c4d5e6f7a8b)': what a worker announces and a refusal names."""
    try:
        number = importlib.metadata.version("arena")
    except importlib.metadata.PackageNotFoundError:
        number = "unknown"
    return f"{number} (code {code_digest()})"
