"""An upload made a bot folder: a single source file wrapped with its bot.toml, or a zip of a bot folder
unpacked with nothing trusted (paths, links, devices, sizes, counts), then loaded by arena's own rules.

Everything here is plain Python, no web framework: the server calls it on an uploaded file, the tests on
hand-made zips. Each refusal is one line, `Rejected`, said to the student as it is.
"""

from __future__ import annotations

import re
import shutil
import stat
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from arena.match.bots import MANIFEST, STAMP, Bot, BotError, load_bot

CHUNK = 1 << 16
# A single uploaded file by its extension: how arena builds and runs it (as `arena new`'s starters do).
# {file} is the uploaded name, {stem} the name without its extension (a Java class is its file's name).
SINGLE = {
    # A .py file runs as `arena run` runs one (bots.py's launcher): -P, so that random.py does not import
    # itself for the standard library's random, and its prints reach the referee without a flush (-u).
    ".py": ('command = "python3 -P -u {file}"',),
    ".c": ('build = "cc -O2 -o bot {file}"', 'command = "./bot"'),
    ".cpp": ('build = "c++ -O2 -o bot {file}"', 'command = "./bot"'),
    ".cc": ('build = "c++ -O2 -o bot {file}"', 'command = "./bot"'),
    ".java": ('build = "javac -d out {file}"', 'command = "java -cp out {stem}"'),
    ".js": ('command = "node {file}"',),
}
_SAFE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")
_SKIPPED = ("__MACOSX/", ".DS_Store")  # what a Mac's zip adds beside the folder


class Rejected(ValueError):
    """An upload that is no bot: the one line says what is wrong and what to upload instead."""


@dataclass(frozen=True, slots=True)
class Caps:
    """How much one upload may be: its own size, and unpacked, its total and its number of files."""

    upload_bytes: int = 1 << 20
    total_bytes: int = 32 << 20
    files: int = 500


def _kib(n: int) -> str:
    return f"{(n + 1023) // 1024} KiB"


def unpack(name: str, data: IO[bytes], size: int, target: Path, caps: Caps = Caps()) -> Bot:
    """Make `target` (a folder that must not exist; its name is the bot's) the bot uploaded as the file
    `name` of `size` bytes, and load it as arena does; Rejected (nothing left behind) if it is none."""
    if size > caps.upload_bytes:
        raise Rejected(f"upload too big: {_kib(size)}; this class takes at most {_kib(caps.upload_bytes)}")
    target.mkdir(mode=0o755)
    try:
        if name.lower().endswith(".zip") or _is_zip(data):
            _unzip(data, target, caps)
        else:
            _single(name, data, target)
        return _loaded(target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise


def zip_folder(name: str, data: IO[bytes]) -> str:
    """The one folder a zip upload holds its bot in (crashbot/ in bob.zip), as unpack unwraps it; '' for a
    single file, or a zip of a folder's contents. `data` is left at its start."""
    if not (name.lower().endswith(".zip") or _is_zip(data)):
        return ""
    try:
        with zipfile.ZipFile(data) as archive:
            entries = [i for i in archive.infolist() if not i.filename.startswith(_SKIPPED)]
            paths = [_entry_path(i) for i in entries]
            return paths[0].parts[0] if paths and _common_top(paths, entries) else ""
    except (zipfile.BadZipFile, OSError, ValueError):
        return ""  # unpack says what is wrong with it
    finally:
        data.seek(0)


def _is_zip(data: IO[bytes]) -> bool:
    head = data.read(4)
    data.seek(0)
    return head == b"PK\x03\x04"


def _single(name: str, data: IO[bytes], target: Path) -> None:
    """One source file: kept under its own name (a safe one) beside the bot.toml its language needs."""
    file = PurePosixPath(name.replace("\\", "/")).name
    suffix = PurePosixPath(file).suffix.lower()
    if suffix not in SINGLE:
        known = ", ".join(SINGLE)
        raise Rejected(
            f"unknown language: {file!r} is not a file arena can run; upload a {known} file, or a zip of a "
            "bot folder with its bot.toml"
        )
    if not _SAFE_FILE.fullmatch(file) or file.startswith(MANIFEST):
        file = "Bot.java" if suffix == ".java" else f"bot{suffix}"
    stem = PurePosixPath(file).stem
    if suffix == ".java" and not stem.isidentifier():
        raise Rejected(f"{file!r}: a Java file is named after its class (e.g. MyBot.java); rename it")
    lines = [line.format(file=file, stem=stem) for line in SINGLE[suffix]]
    _write(target / MANIFEST, ("\n".join(lines) + "\n").encode(), 0o644)
    with (target / file).open("xb") as out:
        shutil.copyfileobj(data, out, CHUNK)
    (target / file).chmod(0o644)


def _unzip(data: IO[bytes], target: Path, caps: Caps) -> None:
    """A zip of a bot folder, its entries checked before a byte is written and counted as they are."""
    try:
        archive = zipfile.ZipFile(data)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise Rejected(
            f"not a zip file that can be read ({e}); zip the bot's folder and upload that"
        ) from None
    with archive:
        entries = [i for i in archive.infolist() if not i.filename.startswith(_SKIPPED)]
        if len(entries) > caps.files:
            raise Rejected(f"the zip holds {len(entries)} entries; at most {caps.files} are taken")
        declared = sum(i.file_size for i in entries)
        if declared > caps.total_bytes:
            raise Rejected(
                f"the zip unpacks to {_kib(declared)}, over the {_kib(caps.total_bytes)} a bot may be "
                "(a zip bomb, or build outputs and data that do not belong in it)"
            )
        paths = [_entry_path(i) for i in entries]
        top = _common_top(paths, entries)
        written = 0
        for info, path in zip(entries, paths, strict=True):
            rel = PurePosixPath(*path.parts[top:]) if len(path.parts) > top else None
            if rel is None or rel.name == STAMP:
                continue
            if info.is_dir():
                (target / rel).mkdir(mode=0o755, parents=True, exist_ok=True)
                continue
            written += _extract(archive, info, target / rel, caps.total_bytes - written)
    if not (target / MANIFEST).is_file():
        raise Rejected(
            f"the zip has no {MANIFEST} at its top: zip the bot's folder (bot.toml and sources), or upload "
            "a single source file"
        )


def _entry_path(info: zipfile.ZipInfo) -> PurePosixPath:
    """The entry's path, or Rejected for one that would land outside the folder or is not a plain file."""
    name = info.filename
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        raise Rejected(f"the zip holds a link ({name!r}); put the file itself in the folder")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise Rejected(f"the zip holds a device, fifo or socket ({name!r}), not a file")
    path = PurePosixPath(name)
    if "\\" in name or name.startswith("/") or re.match(r"[A-Za-z]:", name) or path.is_absolute():
        raise Rejected(f"the zip holds an absolute path ({name!r}); zip the folder from inside its parent")
    if ".." in path.parts:
        raise Rejected(f"the zip holds a path that climbs out of the folder ({name!r})")
    if "\0" in name or any(len(p.encode()) > 255 for p in path.parts) or len(path.parts) > 32:
        raise Rejected(f"the zip holds a name no file may have ({name!r})")
    return path


def _common_top(paths: list[PurePosixPath], entries: list[zipfile.ZipInfo]) -> int:
    """1 when every entry lies in one top folder (a zipped bot folder, unwrapped), else 0."""
    tops = {p.parts[0] for p in paths if p.parts}
    if len(tops) != 1:
        return 0
    only = next(iter(tops))
    inside = all(len(p.parts) > 1 or i.is_dir() for p, i in zip(paths, entries, strict=True))
    return 1 if inside and only != MANIFEST else 0


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, room: int) -> int:
    """Write one file, counting the bytes really unpacked (a header may lie about them); its bytes."""
    dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
    count = 0
    try:
        with archive.open(info) as src, dest.open("xb") as out:
            while chunk := src.read(CHUNK):
                count += len(chunk)
                if count > room or count > info.file_size:
                    raise Rejected(f"the zip's {info.filename!r} unpacks to more than it says (a zip bomb)")
                out.write(chunk)
    except FileExistsError:
        raise Rejected(f"the zip holds {info.filename!r} twice") from None
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as e:
        raise Rejected(f"the zip's {info.filename!r} cannot be unpacked: {e}") from None
    dest.chmod(mode)
    return count


def _write(path: Path, data: bytes, mode: int) -> None:
    with path.open("xb") as out:
        out.write(data)
    path.chmod(mode)


def _loaded(target: Path) -> Bot:
    """The folder loaded by arena's rules (bot.toml, names, programs), its errors said without the path."""
    manifest = target / MANIFEST
    try:
        tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise Rejected(f"bot.toml is not TOML: {e}") from None
    try:
        return load_bot(target)
    except BotError as e:
        text = (
            str(e).replace(f"{manifest}: ", "bot.toml: ").replace(f"{target}/", "").replace(f"{target}", "")
        )
        raise Rejected(text.removeprefix(": ")) from None
