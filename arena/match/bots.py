"""Finding bots in a folder and knowing how to start them.

Three kinds, named by their file name: `NAME.py` runs with the Python that runs arena; an executable file
runs as is; a folder `NAME/` with a `bot.toml` manifest (command, optional author) serves compiled languages,
whose `build` command arena runs before the bot plays (arena/match/build.py).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from arena.match import names
from arena.match import stamp as signature

MANIFEST = "bot.toml"
# What arena/match/build.py knows of a bot folder's last build: the digest of its sources and the files the
# build made. Hidden, so that the bots folder passes it over, and kept out of the bot's digest with them.
STAMP = ".arena-build.json"
# bot.toml `protocol`: arena's own (protocol.md), Manchester agents', KGP agents' (Kalah Game Protocol)
PROTOCOLS = ("v1", "mankalah", "kgp")
NO_MOVE = ("random", "forfeit")  # bot.toml `no_move` of a KGP agent: its default first
# A bot's name: what a file system and a Python module name accept (letters of any script, digits, _), and
# . + - inside; no spaces, no slashes.
_NAME = re.compile(r"[^\W_][\w.+-]{0,63}")
# Files a teacher may keep beside the bots without them being taken for bots.
_NOT_BOTS = {".md", ".txt", ".rst", ".json", ".toml", ".csv", ".cfg", ".ini", ".pdf", ".html"}
# What only a shell understands in a command line: arena runs the command itself, with no shell.
_BUILD_SHELL_SYNTAX = re.compile(r"&&|\|\||[;|<>`]|\$\(|\$\{")
# A build's wildcards are expanded by arena (`*.java`, arena/match/build.py), a command's by nobody.
_SHELL_SYNTAX = re.compile(_BUILD_SHELL_SYNTAX.pattern + r"|\*")
# Files that show a folder holds a program (so a folder of them without a bot.toml is a bot half made).
_PROGRAMS = {".py", ".c", ".cc", ".cpp", ".java", ".class", ".jar", ".js", ".mjs", ".rs", ".go", ".sh"}


# How a NAME.py bot is run: with arena's Python; -P keeps the bot's folder off sys.path (so bots/random.py
# does not shadow the standard library's random); stdout line-buffered, so a print() reaches the referee
# at once as one write even if the student forgot to flush (-u would flush too, but in two writes a line).
# An exception's traceback starts at the bot's own file: the launcher's frames (and runpy's) are left out,
# so a student reads the same traceback as from `python3 bots/mybot.py`; an error before the bot's first
# frame (a SyntaxError, a file that cannot be read) shows no frames at all, as Python shows a SyntaxError.
PY_LAUNCHER = (
    "import runpy, sys, traceback; sys.argv = sys.argv[1:]; sys.stdout.reconfigure(line_buffering=True)\n"
    "try: runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "except Exception as e:\n"
    "    tb = e.__traceback__\n"
    "    while tb is not None and tb.tb_frame.f_code.co_filename != sys.argv[0]: tb = tb.tb_next\n"
    "    traceback.print_exception(type(e), e, tb); sys.exit(1)"
)


class Where(NamedTuple):
    """Where a bot version was found and the command it ran with (its `Bot.argv`; None when a store made
    before commands were kept does not know it), as the store keeps them for the reproduce command."""

    path: Path
    argv: tuple[str, ...] | None = None


_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")  # python, python3, python3.11 (arena's own is any of them)


def python_kind(argv: tuple[str, ...]) -> str:
    """Which Python runs a bot, for what its timeout hint says of output buffers: "launcher" when arena's
    launcher runs it (a print() reaches the referee at each end of line), "python" when its command runs
    Python itself (a print() waits in a buffer unless flushed), "" for any other program."""
    if PY_LAUNCHER in argv:
        return "launcher"
    return "python" if argv and _PYTHON.fullmatch(os.path.basename(argv[0])) else ""


def run_command(path: Path, argv: tuple[str, ...] | None = None, here: Path | None = None,
                named: str | None = None) -> str:  # fmt: skip
    """How a person runs the bot at `path` from a shell, short and real: `python3 -P bots/mybot.py` for a
    single-file Python bot (-P as arena runs it, so bots/random.py cannot shadow the standard library),
    `bots/mybot` for a program, `(cd bots/mybot && ./run)` for a folder with its bot.toml command (`argv`,
    when known). The path is shown relative to `here` (the current folder) when it lies inside it.
    `named`: a folder bot's folder as its author has it, shown instead of where it lies here (the class
    server's copy); '' when they are in it (an uploaded file, which the server wrapped in a folder)."""
    shown = _shown(path, here or Path.cwd()) if named is None else named
    if path.suffix == ".py" and not path.is_dir():
        return f"python3 -P {shlex.quote(shown)}"
    if path.is_dir():
        run = "the command in its bot.toml" if argv is None else shlex.join(_short(argv, path))
        return f"(cd {shlex.quote(shown)} && {run})" if shown else run
    return shlex.quote(shown if "/" in shown else f"./{shown}")


def reproduce_command(lines: tuple[str, ...] | list[str], path: Path, argv: tuple[str, ...] | None = None,
                      here: Path | None = None, named: str | None = None) -> str:  # fmt: skip
    """The one command, everywhere arena prints one (the page, `arena replay`, `arena check`), that feeds
    the bot the referee's `lines` of a game: `printf '...' | python3 -P bots/mybot.py` (`named`: as in
    run_command)."""
    text = shlex.quote("".join(line + "\\n" for line in lines))
    run = run_command(path, argv, here, named)
    if run.startswith("(cd "):  # the pipe goes into the command inside the brackets
        folder, _, command = run[1:-1].partition(" && ")
        return f"({folder} && printf {text} | {command})"
    return f"printf {text} | {run}"


def _shown(path: Path, here: Path) -> str:
    try:
        return str(path.relative_to(here)) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def _short(argv: tuple[str, ...], folder: Path) -> list[str]:
    """A folder bot's command as its bot.toml says it: its programs relative to the folder, python3 for
    arena's Python."""
    out = []
    for k, arg in enumerate(argv):
        if k == 0 and arg == sys.executable:
            out.append("python3")
        elif arg.startswith(str(folder) + os.sep):
            out.append("./" + arg[len(str(folder)) + 1 :])
        else:
            out.append(arg)
    return out


class BotError(ValueError):
    """A bot that cannot be run as given; the message says which file and what to do."""


@dataclass(frozen=True, slots=True)
class Bot:
    """How to run one bot. `digest` hashes its code, so a changed bot is a new version."""

    name: str
    argv: tuple[str, ...]
    cwd: Path
    path: Path
    digest: str
    author: str | None = None
    protocol: str = "v1"
    paths: tuple[str, ...] = ()  # read-only paths the sandbox shows it beside its own (bot.toml `paths`)
    memory_mb: int | None = None  # its own memory allowance (bot.toml `memory`, MiB); None: the tournament's
    build: tuple[tuple[str, ...], ...] = ()  # bot.toml `build`: commands run in order before it plays
    anytime: bool = False  # bot.toml `anytime`: a v1 bot writes several moves per MOVE, the last legal counts
    port: int | None = None  # bot.toml `port`: where a KGP agent connects in its sandbox (None: KGP's 2671)
    # An agent connected to the class server (arena/server/kgp_ranked.py): `argv` is arena's own bridge to it,
    # run outside the sandbox (the agent computes elsewhere); made by the server only, never from a bot.toml.
    remote: bool = False
    # bot.toml `no_move` (KGP agents): what a position the agent gave no legal move for costs it. "random": a
    # random legal move is played for it, as the course server does (its spec: the server MUST); "forfeit":
    # the game is lost on time. A position with one legal move is played without asking either way.
    no_move: str = "random"


class BuildError(BotError):
    """A bot whose build failed: the message is one line (with the compiler's first error), `output` the
    tail of what the build printed."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True, slots=True)
class BotFile:
    """One of a bot's files, found without following a link: its path from the folder that holds the bot
    ("mybot/bot.c", or "greedy.py" for a bot that is one file), its permission bits and modification time."""

    rel: str
    mode: int
    mtime_ns: int


def open_regular(path: Path | str, dir_fd: int | None = None) -> BufferedReader:
    """`path` open for reading if it is a regular file, never through a link and never blocking on a fifo
    or a device; OSError otherwise (ELOOP for a link, EINVAL for anything but a regular file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({_kind(info.st_mode)})", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    kinds = {
        stat.S_IFDIR: "a folder",
        stat.S_IFLNK: "a link",
        stat.S_IFIFO: "a fifo",
        stat.S_IFSOCK: "a socket",
    }
    return kinds.get(
        stat.S_IFMT(mode), "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"
    )


def bot_files(path: Path, *, strict: bool = True) -> Iterator[tuple[BotFile, BufferedReader]]:
    """Every regular file of the bot at `path` (a file, or a folder and all below it but __pycache__),
    sorted by path, each open for reading until the next is asked for. What arena hashes into a bot's
    version, copies for its build and ships to a cluster's workers is this and only this: each file is
    opened relative to its folder's descriptor, without following a link, so that a link in a bot's folder
    (to /etc/shadow, to /proc/kmsg) is never read. BotError, naming the file, for a link, a fifo, a device
    or a socket (`strict`; else they are passed over) and for a file or folder that cannot be read: a bot
    must be the same files wherever it runs, and a link's target is neither hashed nor shipped."""
    path = Path(path)
    try:
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                yield from _walk(top, path, path.name, strict)
            finally:
                os.close(top)
            return
    except OSError as e:
        raise _unreadable(path, e) from None
    if not stat.S_ISREG(info.st_mode):
        raise BotError(f"{path}: {_kind(info.st_mode)}, not a bot's file: {_NOT_FOLLOWED}")
    try:
        f = open_regular(path)
    except OSError as e:
        raise _unreadable(path, e) from None
    with f:
        yield BotFile(path.name, info.st_mode & 0o7777, info.st_mtime_ns), f


_NOT_FOLLOWED = "arena reads a bot's own files only, never through a link; put the file itself there"


def _walk(fd: int, path: Path, rel: str, strict: bool) -> Iterator[tuple[BotFile, BufferedReader]]:
    try:
        names = sorted(os.listdir(fd))
    except OSError as e:
        raise _unreadable(path, e) from None
    for name in names:
        at, below = path / name, f"{rel}/{name}"
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                if name == "__pycache__":  # Python's own, written as the bot runs
                    continue
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                sub = os.open(name, flags, dir_fd=fd)
                try:
                    yield from _walk(sub, at, below, strict)
                finally:
                    os.close(sub)
                continue
            if not stat.S_ISREG(info.st_mode):
                if not strict:
                    continue
                what = _kind(info.st_mode)
                if stat.S_ISLNK(info.st_mode):
                    with contextlib.suppress(OSError):
                        what += f" to {os.readlink(name, dir_fd=fd)}"
                raise BotError(f"{at}: {what}, not a bot's file: {_NOT_FOLLOWED}")
            f = open_regular(name, dir_fd=fd)
        except OSError as e:
            raise _unreadable(at, e) from None
        with f:
            yield BotFile(below, info.st_mode & 0o7777, info.st_mtime_ns), f


def _unreadable(path: Path, e: OSError) -> BotError:
    if e.errno == errno.ELOOP:  # replaced by a link since it was looked at
        return BotError(f"{path}: a link, not a bot's file: {_NOT_FOLLOWED}")
    if e.errno in (errno.EACCES, errno.EPERM):
        return BotError(f"{path}: cannot be read (check its permissions)")
    return BotError(f"{path}: cannot be read: {e.strerror or e}")


def read_own(folder: Path, name: str) -> bytes | None:
    """The file `name` of a bot's folder (bot.toml, the stamp) read without following a link; None if it
    is not there. BotError if it is a link, not a regular file, or cannot be read."""
    try:
        with open_regular(folder / name) as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.EINVAL:
            raise BotError(f"{folder / name}: {e.strerror}: {_NOT_FOLLOWED}") from None
        raise _unreadable(folder / name, e) from None


def build_stamp(folder: Path) -> dict[str, object] | None:
    """The folder's build stamp if arena on this machine wrote it (arena/match/stamp.py checks its
    signature), else None: missing, unreadable, or written by anyone else (the student's folder is theirs),
    and then the bot is built again."""
    stamp = _stamp_text(folder)
    return stamp if stamp is not None and signature.signed(folder, stamp) else None


def _stamp_text(folder: Path) -> dict[str, object] | None:
    """What the folder's stamp says, whoever wrote it; None if there is none or it is no JSON object."""
    try:
        stamp = json.loads(read_own(folder, STAMP) or b"null")
    except (BotError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def built_outputs(folder: Path) -> dict[str, str]:
    """The files the folder's last build made (path relative to the folder -> sha256), from its stamp if
    arena wrote it (`build_stamp`); empty otherwise. Never bot.toml: a build cannot make the manifest."""
    return _outputs(build_stamp(folder))


def claimed_outputs(folder: Path) -> dict[str, str]:
    """The files a stamp arena did not write says a build made: not believed, but kept out of the next
    build's copy of the folder, so that what a build makes is what the build made (arena/match/build.py)."""
    believed = built_outputs(folder)
    return {k: v for k, v in _outputs(_stamp_text(folder)).items() if k not in believed}


def _outputs(stamp: dict[str, object] | None) -> dict[str, str]:
    outputs = stamp.get("outputs") if stamp is not None else None
    if not isinstance(outputs, dict):
        return {}
    return {
        rel: sha for rel, sha in outputs.items() if rel != MANIFEST and isinstance(sha, str) and _inside(rel)
    }


def _inside(rel: str) -> bool:
    """Whether a path from a stamp names a file inside the folder (the stamp is in the student's hands)."""
    path = PurePosixPath(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts


def _digest(path: Path, built: bool = False) -> str:
    """The bot's version: a hash of its files' names and contents. For a bot with a build, the sources only
    (the stamp and the files the build made are left out), so that a rebuild of the same sources is the same
    version. BotError for a link or a file that cannot be read."""
    h = hashlib.sha256()
    skip = {STAMP, *built_outputs(path)} if built else {STAMP}
    for file, f in bot_files(path):
        if file.rel.partition("/")[2] in skip:
            continue
        h.update(file.rel.encode())
        h.update(b"\0")
        while chunk := f.read(1 << 20):
            h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:16]


def check_name(name: str, path: Path) -> str:
    """The bot's name (NFC), or BotError: one character not allowed, or scripts mixed (arena.match.names)."""
    name = names.normal(name)
    if not _NAME.fullmatch(name):
        better = re.sub(r"[^\w.+-]", "_", name).strip("_.+-")[:64] or "mybot"
        renamed = path.with_name(better + (path.suffix if path.is_file() and path.suffix == ".py" else ""))
        raise BotError(
            f"{path}: a bot's name may use letters, digits and _ . + - only, starting with a letter or digit "
            f"(got {name!r}); rename it, e.g. to {renamed.name}"
        )
    if mixed := names.mixed(name):
        raise BotError(
            f"{path}: a bot's name may use letters of any script, but not mix them (got {name!r}: {mixed}, "
            "letters that look alike on a leaderboard); rename it in one script"
        )
    return name


def _from_folder(path: Path) -> Bot:
    manifest = path / MANIFEST
    text = read_own(path, MANIFEST)
    if text is None:
        raise BotError(f'{path}: a bot folder needs a {MANIFEST} with a command, e.g. command = "./bot"')
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BotError(f"{manifest}: not valid TOML: {e}") from None
    unknown = set(data) - {
        "command",
        "author",
        "protocol",
        "paths",
        "memory",
        "build",
        "anytime",
        "port",
        "no_move",
    }
    if unknown:
        raise BotError(
            f"{manifest}: unknown key {sorted(unknown)[0]!r}; "
            "known: command, build, author, protocol, paths, memory, anytime, port, no_move"
        )
    memory = data.get("memory")
    if memory is not None and (not isinstance(memory, int) or isinstance(memory, bool) or memory < 16):
        raise BotError(f"{manifest}: 'memory' is the bot's memory in MiB, a whole number of at least 16")
    paths = data.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise BotError(f"{manifest}: 'paths' must be a list of folders, e.g. paths = [\"/opt/conda\"]")
    for extra in paths:
        if not os.path.isabs(extra) or not os.path.exists(extra):
            raise BotError(
                f"{manifest}: paths: {extra!r} must be an absolute path that exists on this machine"
            )
    build = _build_commands(manifest, data.get("build"))
    command = data.get("command")
    if isinstance(command, str) and (shell := _SHELL_SYNTAX.search(command)):
        raise BotError(
            f"{manifest}: command {command!r} uses shell syntax ({shell.group()!r}), but no shell runs it: "
            "put the steps in a script (e.g. run.sh starting with #!/bin/sh, chmod +x) and make that the "
            'command; compile steps go in build = "..."'
        )
    if isinstance(command, str):
        argv = _split(manifest, "command", command)
    elif isinstance(command, list) and all(isinstance(a, str) for a in command):
        argv = list(command)
    else:
        raise BotError(f"{manifest}: 'command' must be a string such as \"./bot\" or a list of strings")
    if not argv:
        raise BotError(f"{manifest}: 'command' is empty")
    author = data.get("author")
    if author is not None and not isinstance(author, str):
        raise BotError(f"{manifest}: 'author' must be a string")
    protocol = data.get("protocol", "v1")
    if protocol not in PROTOCOLS:
        raise BotError(f"{manifest}: unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    anytime = data.get("anytime", False)
    if not isinstance(anytime, bool):
        raise BotError(f"{manifest}: 'anytime' is true or false")
    if anytime and protocol != "v1":
        raise BotError(
            f"{manifest}: 'anytime' is for protocol v1 bots (a KGP agent is anytime by its protocol)"
        )
    port = data.get("port")
    if port is not None and (protocol != "kgp" or not isinstance(port, int) or not 1 <= port <= 65535):
        raise BotError(
            f"{manifest}: 'port' is the port a KGP agent connects to, 1..65535, with protocol = \"kgp\""
        )
    no_move = data.get("no_move", NO_MOVE[0])
    if no_move not in NO_MOVE or ("no_move" in data and protocol != "kgp"):
        raise BotError(
            f"{manifest}: 'no_move' is what a KGP agent's position without a move costs it, "
            f'"random" (a random legal move, as the course server plays) or "forfeit", with protocol = "kgp"'
        )
    # A program the build makes is looked for once it has run (check_command), the others now.
    argv[0] = _program(manifest, "command", argv[0], path, present=not build)
    name = check_name(path.name, path)
    digest = _digest(path, built=bool(build))
    return Bot(
        name, tuple(argv), path, path, digest, author, protocol, tuple(paths), memory, build, anytime, port,
        no_move=no_move,
    )  # fmt: skip


def _split(manifest: Path, key: str, line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as e:
        raise BotError(f"{manifest}: cannot split {key} {line!r}: {e}") from None


def _program(
    manifest: Path,
    key: str,
    program: str,
    folder: Path,
    present: bool = True,
    hint: str = 'build it first, or have arena build it: build = "..." in bot.toml (protocol.md)',
) -> str:
    """The program of a command as it is run: a path in the bot's folder (which must be there and
    executable, unless not yet `present`: the build makes it), arena's Python for python, or an installed
    program."""
    if "/" in program:
        if not present:
            return program
        target = (folder / program).resolve()
        if not target.is_file():
            raise BotError(f"{manifest}: {key} {program!r} not found in {folder}; {hint}")
        if not os.access(target, os.X_OK):
            raise BotError(f"{manifest}: {key} {program!r} is not executable (chmod +x it)")
    elif program in ("python", "python3"):
        return sys.executable  # the Python that runs arena, whatever the machine calls it
    elif shutil.which(program) is None:
        raise BotError(f"{manifest}: {key} program {program!r} is not installed on this machine")
    return program


def _build_commands(manifest: Path, value: object) -> tuple[tuple[str, ...], ...]:
    """bot.toml `build`: one command line, or a list of command lines run in order; each split into words
    like `command`, with no shell."""
    if value is None:
        return ()
    lines = [value] if isinstance(value, str) else value
    if not isinstance(lines, list) or not lines or not all(isinstance(line, str) for line in lines):
        raise BotError(
            f"{manifest}: 'build' must be a command line such as \"cc -O2 -o bot bot.c\", or a list of "
            "command lines run in order"
        )
    commands = []
    for line in lines:
        if shell := _BUILD_SHELL_SYNTAX.search(line):
            raise BotError(
                f"{manifest}: build {line!r} uses shell syntax ({shell.group()!r}), but no shell runs it: "
                'give the steps as a list, build = ["step one", "step two"], or put them in a script '
                "(e.g. build.sh starting with #!/bin/sh, chmod +x) and make that the build"
            )
        argv = _split(manifest, "build", line)
        if not argv:
            raise BotError(f"{manifest}: 'build' has an empty command")
        if argv[0].startswith("-"):
            raise BotError(
                f"{manifest}: build {line!r} is not a command: a list here is of whole command lines, run in "
                f'order; write build = "{" ".join(lines)}"'
            )
        argv[0] = _program(manifest, "build", argv[0], manifest.parent, hint="it belongs beside bot.toml")
        commands.append(tuple(argv))
    return tuple(commands)


def check_command(bot: Bot) -> None:
    """BotError unless the bot's program is there to run: for a bot with a build, once it has run."""
    if bot.cwd == bot.path and bot.path.is_dir():
        _program(bot.path / MANIFEST, "command", bot.argv[0], bot.path, hint="the build did not make it")


def load_bot(path: Path) -> Bot:
    """The bot at `path` (a .py file, an executable, or a folder with bot.toml), or BotError."""
    path = Path(path).absolute()
    try:
        info = os.lstat(path)
    except OSError:
        raise BotError(f"{path}: no such file or folder") from None
    if stat.S_ISDIR(info.st_mode):
        return _from_folder(path)
    if not stat.S_ISREG(info.st_mode):
        what = _kind(info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            with contextlib.suppress(OSError):
                what += f" to {os.readlink(path)}"
        raise BotError(f"{path}: {what}, not a bot: {_NOT_FOLLOWED}")
    if not os.access(path, os.R_OK):
        raise BotError(f"{path}: cannot be read (check its permissions)")
    if path.suffix == ".py":
        argv = (sys.executable, "-P", "-c", PY_LAUNCHER, str(path))
        return Bot(check_name(path.stem, path), argv, path.parent, path, _digest(path))
    if not os.access(path, os.X_OK):
        raise BotError(
            f"{path}: not a .py file and not executable; chmod +x it, or for a compiled bot make a "
            f"folder with a {MANIFEST}"
        )
    return Bot(check_name(path.name, path), (str(path),), path.parent, path, _digest(path))


def _is_candidate(entry: Path) -> bool:
    if entry.name.startswith((".", "_")):
        return False
    return entry.is_dir() or entry.suffix.lower() not in _NOT_BOTS


def _looks_like_a_bot(entry: Path) -> bool:
    """Whether an entry of a bots folder is meant as a bot: a .py file, an executable, a file with a #!
    line (a script someone forgot to chmod), a folder with a bot.toml or with a program in it. Sources,
    compiled classes, data and notes beside the bots are not."""
    if not _is_candidate(entry):
        return False
    try:
        info = entry.lstat()
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode):
        try:
            return os.path.lexists(entry / MANIFEST) or any(
                f.suffix.lower() in _PROGRAMS for f in entry.iterdir() if f.is_file()
            )
        except OSError:  # a folder it cannot list: said when it is loaded
            return True
    if not stat.S_ISREG(info.st_mode) or entry.suffix == ".py" or os.access(entry, os.X_OK):
        return True  # a link or a fifo where a bot could be is refused with why (load_bot), never read
    try:
        with open_regular(entry) as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class Survey:
    """What a bots folder holds: the bots that can play, and the entries meant as bots that cannot, each
    with what is wrong and how to fix it (the tournament goes on without them)."""

    bots: tuple[Bot, ...]
    broken: tuple[tuple[str, str], ...]  # (entry name, why and what to do)


def survey(folder: Path) -> Survey:
    """Every bot in `folder` that can play, sorted by name, and every entry meant as a bot that cannot; other
    entries (sources, data, notes) are passed over. BotError only for a folder that is not there."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BotError(f"{folder}: no such bots folder")
    found: dict[str, list[Bot]] = {}
    broken: list[tuple[str, str]] = []
    for entry in sorted(folder.iterdir()):
        if not _looks_like_a_bot(entry):
            continue
        try:
            bot = load_bot(entry)
        except BotError as e:
            why = str(e).removeprefix(f"{entry.absolute()}: ")  # the entry is named beside it
            broken.append((entry.name, why.removeprefix(f"{entry.absolute().parent}/")))
            continue
        found.setdefault(names.key(bot.name), []).append(bot)
    unique = []
    for same in found.values():  # one name, as arena compares names: case and width aside (NFKC, casefold)
        if len(same) == 1:
            unique.append(same[0])
            continue
        places = " and ".join(b.path.name for b in same)
        for b in same:
            broken.append((b.path.name, f"two bots are named {b.name!r} ({places}): rename or remove one"))
    alike: dict[str, list[Bot]] = {}
    for bot in unique:  # names that look alike (Unicode's confusables): neither plays, as for one name
        alike.setdefault(names.skeleton(bot.name), []).append(bot)
    bots = []
    for same in alike.values():
        if len(same) == 1:
            bots.append(same[0])
            continue
        for b in same:
            others = ", ".join(f"{o.name!r} ({o.path.name})" for o in same if o is not b)
            broken.append((b.path.name, f"its name {b.name!r} looks like {others}: rename one of them"))
    return Survey(tuple(sorted(bots, key=lambda b: b.name)), tuple(sorted(broken)))


def discover(folder: Path) -> list[Bot]:
    """Every bot in `folder`, sorted by name; BotError naming the first entry meant as a bot that cannot
    play (use `survey` to go on without it)."""
    found = survey(folder)
    if found.broken:
        entry, why = found.broken[0]
        raise BotError(f"{Path(folder) / entry}: {why}")
    return list(found.bots)


def find_bot(name_or_path: str, folder: Path) -> Bot:
    """A bot named on the command line: a path to one, or the name of one in `folder`."""
    given = Path(name_or_path)
    if "/" in name_or_path or given.suffix == ".py" and given.exists():
        return load_bot(given)
    folder = Path(folder)
    candidates = [folder / f"{name_or_path}.py", folder / name_or_path]
    found = [c for c in candidates if os.path.lexists(c)]
    if not found:
        known = ""
        if folder.is_dir():
            entries = [e for e in folder.iterdir() if _is_candidate(e)]
            names = sorted({e.stem if e.suffix == ".py" else e.name for e in entries})
            known = f"; bots there: {', '.join(names)}" if names else "; that folder has no bots"
        raise BotError(f"no bot named {name_or_path!r} in {folder}{known}")
    if len(found) > 1:
        raise BotError(f"two bots are named {name_or_path!r}: {found[0]} and {found[1]}")
    return load_bot(found[0])
