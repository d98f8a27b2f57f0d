"""Building a compiled bot: the `build` commands of its bot.toml, run before its first game and again only
when its sources change.

The build is the student's code running, so it is confined as the bot is (the sandbox with no network,
memory and process limits, an unprivileged uid when arena is root, a clean environment), with a time limit,
and it may write its own folder only: it runs in a copy of the folder, at /bot in a tmpfs of the build's own
namespace whose size is the build's cap (BUILD_BYTES: no host filesystem, no shared /dev/shm, holds what it
writes, and its blocks are what the cap counts), and the files it made are copied back, at most BUILD_FILES
files and folders, none named with a control character (a terminal would obey it).
The files that were there before it (but the last build's outputs) are the bot's sources,
bot.toml among them: a build that changes one fails, so that no build rewrites its own manifest (to widen
its limits) or turns a source into an output (out of the bot's version). A stamp in the folder
(bots.STAMP) records the digest of the sources and a hash of every file the build made; whether a build is
needed is then a few hashes of a small folder: sources edited, outputs deleted or changed -> build again.
The stamp is signed with a key of this machine's arena (arena/match/stamp.py): one arena did not write
(a student's edit listing a source as built) is not believed, and the files it lists are left out of the
next build, which makes them again if they are the build's.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from arena.match import stamp as signature
from arena.match.bots import (
    MANIFEST,
    STAMP,
    Bot,
    BotError,
    BuildError,
    bot_files,
    build_stamp,
    built_outputs,
    check_command,
    claimed_outputs,
    load_bot,
    open_regular,
)
from arena.match.carry import Carry, Use, control_name, too_many
from arena.match.printable import printable
from arena.sandbox import Confinement, Jail, Warden, seccomp
from arena.sandbox.stage import INSIDE

BUILD_SECONDS = 120.0  # a bot's whole build, all its commands, at most
# A bot's folder after its build, and the build's copy of it while it runs, at most: a build that writes
# without end is stopped and its files dropped, so that nothing big stays in a class's folder.
BUILD_BYTES = 256 * 1024 * 1024
# Files and folders a build's folder may hold: each is memory in its tmpfs, and a file copied back into the
# bot's folder (266,000 empty files kept `arena check` copying for minutes).
BUILD_FILES = 10_000
_LOOK = 0.1  # seconds between two looks at the use of a running build's folder
_TAIL_LINES = 40  # of the build's output, kept for the student
_TAIL_BYTES = 4000
_HEAD_BYTES = 65536  # where the first error line is looked for
_ERROR = re.compile(r"\berror\b", re.I)
# Lines the build's runtimes print because of arena's clean environment, not because of the student's code.
_NOISE = ("Picked up JAVA_TOOL_OPTIONS",)


def ensure_built(
    bot: Bot,
    conf: Confinement,
    *,
    seconds: float = BUILD_SECONDS,
    max_bytes: int | None = None,
    say: Callable[[str], None] | None = None,
    max_files: int = BUILD_FILES,
) -> Bot:
    """The bot, built if its bot.toml has a `build` and its stamp says the sources or outputs changed since
    the last build, re-loaded (its command checked, its digest that of its sources); BuildError, one line
    with the compiler's output in `.output`, when the build fails or does not make the command's program.
    `say` hears of a build before it runs; `max_bytes` (default BUILD_BYTES) bounds the folder during and
    after the build, `max_files` its files and folders."""
    if not bot.build:
        return bot
    with _locked(bot.path):
        built = load_bot(bot.path)
        if needed(built):
            if say is not None:
                say(f"building {bot.name}: {'; '.join(shlex.join(argv) for argv in built.build)}")
            _build(built, conf, seconds, BUILD_BYTES if max_bytes is None else max_bytes, max_files)
            built = load_bot(bot.path)
            _write_stamp(bot.path, built, built_outputs(bot.path))
    try:
        check_command(built)
    except BotError as e:  # a build that made no program to run failed too
        raise BuildError(str(e)) from None
    return built


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One build of a folder at a time (two arenas on one bots folder): a lock on the folder itself, so no
    lock file joins the bot's files; the second waits, then finds the bot built."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def needed(bot: Bot) -> bool:
    """Whether the bot's build must run: no stamp arena wrote here, other build commands or sources than the
    stamp's, or an output of the last build missing or changed."""
    stamp = build_stamp(bot.path)
    if stamp is None or stamp.get("build") != [list(argv) for argv in bot.build]:
        return True
    if stamp.get("sources") != bot.digest:
        return True
    return any(_sha(bot.path / rel) != sha for rel, sha in built_outputs(bot.path).items())


def _sha(path: Path) -> str | None:
    """The sha256 of the regular file at `path`; None if it is missing, a link or anything else."""
    try:
        with open_regular(path) as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def _files(folder: Path) -> dict[str, tuple[int, int, str]]:
    """The regular files under the build's copy `folder` (links and the like, which are not copied back,
    passed over): path relative to it -> (mode, mtime, sha256)."""
    return {
        file.rel.partition("/")[2]: (file.mode, file.mtime_ns, hashlib.file_digest(f, "sha256").hexdigest())
        for file, f in bot_files(folder, strict=False)
    }


def _copy_in(folder: Path, copy: Path, left_out: Collection[str]) -> None:
    """The bot's files but its stamp and `left_out` into `copy`, as bot_files reads them (no link
    followed), with their modes and modification times (a make-based build compares them)."""
    copy.mkdir()
    for file, f in bot_files(folder):
        rel = file.rel.partition("/")[2]
        if rel == STAMP or rel in left_out:
            continue
        target = copy / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(_create(target, file.mode & 0o777), "wb") as out:
            shutil.copyfileobj(f, out)
        os.utime(target, ns=(file.mtime_ns, file.mtime_ns))


def _use(folder: Path) -> tuple[int, int]:
    """The bytes of the files under `folder` (their sizes, or their blocks where more: a sparse file counts
    as what copying it writes, a file allocated past its end as what it holds) and its files and folders, as
    it is at this moment: a running build adds and removes files while this looks."""
    total, count = 0, 0
    for top, folders, names in os.walk(folder):
        count += len(folders)
        for name in names:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(top, name))
                total += max(info.st_size, info.st_blocks * 512)
                count += 1
    return total, count


def shown_bytes(size: int) -> str:
    """A size as a student reads it: MiB, or GiB from 1 GiB."""
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def _build(
    bot: Bot, conf: Confinement, seconds: float, max_bytes: int = BUILD_BYTES, max_files: int = BUILD_FILES
) -> None:
    """Run the build in a copy of the bot's folder and copy what it made back, recording it in the stamp."""
    folder = bot.path
    manifest = folder / MANIFEST
    warden = Warden(conf)
    jail = warden.jail(folder, bot.memory_mb)
    jail.nofile = seccomp.BUILD_NOFILE
    try:
        # The system's temporary folder, never /dev/shm: the build writes in its own tmpfs, and what comes
        # back here is at most its cap.
        with tempfile.TemporaryDirectory(prefix="arena-build-") as tmp:
            copy = Path(tmp) / folder.name
            # What a stamp arena did not write says a build made is left out: the build makes it again,
            # or it was never made (a source listed there) and the build goes without it.
            claimed = sorted(claimed_outputs(folder))
            _copy_in(folder, copy, claimed)
            before = _files(copy)
            if jail.uid is not None and not conf.sandbox:  # its own uid may write the copy, and only it
                os.chmod(tmp, 0o711)
                for top, dirs, names in os.walk(copy):
                    for name in [top, *(os.path.join(top, n) for n in dirs + names)]:
                        os.lchown(name, jail.uid, jail.uid)
            log = Path(tmp) / "output"
            deadline = time.monotonic() + seconds
            for argv in bot.build:
                try:
                    copy = _step(jail, argv, copy, log, deadline, seconds, manifest, max_bytes, max_files)
                except BuildError as e:
                    raise _with_claims(e, claimed) from None
            size, count = _use(copy)
            if size > max_bytes:
                raise BuildError(
                    f"{manifest}: build failed: the folder held {shown_bytes(size)} after it, more than the "
                    f"{shown_bytes(max_bytes)} a bot's folder may (keep only what the bot needs to run)"
                )
            if count > max_files:
                raise BuildError(f"{manifest}: build failed: {too_many(count, max_files)}")
            after = _files(copy)
            # The files that were there before the build are the bot's sources (bot.toml always), but for
            # the last build's outputs: the build may not change them, and only new files are copied back.
            last = built_outputs(folder)
            sources = {rel for rel in before if rel not in last}
            changed = sorted(rel for rel in sources if rel in after and after[rel][2] != before[rel][2])
            if changed:
                more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
                raise BuildError(
                    f"{manifest}: build failed: it changed {changed[0]}{more}, a file of the bot's own (a "
                    f"build may only make new files; if the build is meant to make {changed[0]}, delete it "
                    f"from {folder})"
                )
            made = {
                rel: v[2]
                for rel, v in after.items()
                if rel not in sources and rel != STAMP and before.get(rel) != v
            }
            if named := next((rel for rel in sorted(made) if printable(rel) != rel), None):
                raise BuildError(f"{manifest}: build failed: {control_name(named)}")
            # Outputs of the last build that this one left as they were are outputs still.
            for rel, sha in last.items():
                if rel not in made and rel in after and after[rel][2] == sha:
                    made[rel] = sha
            try:
                _copy_back(copy, folder, made)
                _write_stamp(folder, None, made)
            except OSError as e:
                raise BuildError(
                    f"{manifest}: cannot write the build's files into {folder}: {e.strerror or e}"
                ) from None
    finally:
        jail.release()
        warden.close()


def _step(
    jail: Jail,
    argv: Sequence[str],
    copy: Path,
    log: Path,
    deadline: float,
    seconds: float,
    manifest: Path,
    max_bytes: int = BUILD_BYTES,
    max_files: int = BUILD_FILES,
) -> Path:
    """Run one build command; the copy of the folder after it (sandboxed, a new one: what came back from
    its tmpfs). BuildError if it cannot start, fails, runs past the build's time limit, or fills its folder
    past `max_bytes` or `max_files` (looked at while it runs; no one file may be larger)."""

    def limited() -> None:
        jail.preexec()
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))  # SIGXFSZ: the one file too big

    shown = shlex.join(argv)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    carry = Carry(copy, max_bytes, max_files, INSIDE) if jail.conf.sandbox else None
    with log.open("wb") as out:
        try:
            popen = subprocess.Popen(
                jail.build_command(_expanded(argv, copy), max_bytes, carry.fds if carry else (-1, -1, -1)),
                cwd=copy,
                env=jail.environment(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=[*jail.passed, *(carry.fds if carry else ())],  # its seccomp filter, its files
                executable=jail.program if carry else None,  # bwrap's path (the command names it "bwrap")
                preexec_fn=limited,
            )
        except (OSError, subprocess.SubprocessError) as e:
            if carry is not None:
                carry.abandon()
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise BuildError(f"{manifest}: build {shown!r} could not be started: {reason}") from None
        finally:
            jail.close_passed()
        if carry is not None:
            carry.start()
        code, over = None, None
        try:
            while True:
                try:
                    code = popen.wait(timeout=min(_LOOK, max(0.0, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= deadline:
                        break
                    use = carry.watch() if carry is not None else Use(*_use(copy), False)
                    if use is not None and (use.full or use.size > max_bytes or use.entries > max_files):
                        over = use
                        break
        finally:
            with contextlib.suppress(OSError):
                os.killpg(popen.pid, signal.SIGKILL)  # whatever it left running in its session
            if jail.cgroups is not None:
                jail.cgroups.kill()  # and in its cgroups, where there are some
            popen.wait()
            if carry is not None:
                carry.finish()
    head, output = _said(log)
    too_big = f"more than the {shown_bytes(max_bytes)} a build may write into its folder: stopped"
    if over is None and carry is not None and carry.use is not None:
        over = carry.use if carry.use.full or carry.use.entries > max_files else None
    if over is not None and over.entries > max_files:
        raise BuildError(f"{manifest}: build {shown!r}: {too_many(over.entries, max_files)}: stopped", output)
    if over is not None and over.full:  # its tmpfs refused the rest
        filled = f"filled its folder: it tried to write {too_big}"
        raise BuildError(f"{manifest}: build {shown!r} {filled}", output)
    if over is not None:
        raise BuildError(f"{manifest}: build {shown!r} wrote {shown_bytes(over.size)}, {too_big}", output)
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):  # bwrap says a death by signal N as 128+N
        raise BuildError(f"{manifest}: build {shown!r} wrote a file of {too_big}", output)
    if code is None:
        raise BuildError(f"{manifest}: build {shown!r} did not finish in {seconds:g} s: stopped", output)
    if code == 0 and carry is not None and not carry.complete:
        problem = carry.problem or "its files did not come back from its sandbox"
        raise BuildError(f"{manifest}: build failed: {shown!r}: {problem}", output)
    if code == 0:
        if carry is not None:
            shutil.rmtree(copy, ignore_errors=True)
            carry.fresh.rename(copy)
        return copy
    if why := jail.breach():
        ended = why
    elif code < 0:
        ended = f"was killed by {signal.Signals(-code).name}"
    else:
        ended = f"exited with status {code}"
    first = _first_error([*head, *output.splitlines()])
    raise BuildError(f"{manifest}: build failed: {shown!r} {ended}" + (f": {first}" if first else ""), output)


def _expanded(argv: Sequence[str], folder: Path) -> list[str]:
    """The words of a build command with wildcards expanded in the bot's folder, as a shell would:
    `javac -d classes *.java` (`**` goes into subfolders); a pattern that matches nothing stays as it is."""
    words = [argv[0]]
    for word in argv[1:]:
        wild = any(c in word for c in "*?[")
        found = sorted(glob.glob(word, root_dir=folder, recursive=True)) if wild else []
        words += found or [word]
    return words


def _first_error(lines: list[str]) -> str:
    """The line a student should read first: the first that says error, else the first one."""
    head = [line.strip() for line in lines if line.strip()]
    first = next((line for line in head if _ERROR.search(line)), head[0] if head else "")
    return first if len(first) <= 200 else first[:197] + "..."


def _said(log: Path) -> tuple[list[str], str]:
    """What the build printed: the lines of its start (where the first error is) and its last lines,
    read without loading all of a build that printed without end."""
    with log.open("rb") as f:
        head = f.read(_HEAD_BYTES)
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - _TAIL_BYTES))
        end = f.read()
    lines = [
        [line for line in text.decode(errors="replace").splitlines() if not line.startswith(_NOISE)]
        for text in (head, end)
    ]
    tail = "\n".join(lines[1][-_TAIL_LINES:])
    return lines[0], tail if size <= _TAIL_BYTES else "...\n" + tail


def _copy_back(copy: Path, folder: Path, made: dict[str, str]) -> None:
    """Copy the files the build made into the bot's folder, readable by all (a bot may run as a uid of its
    own); never through a link, so that the build cannot make arena write outside the folder."""
    real = folder.resolve()
    for rel in sorted(made):
        source, target = copy / rel, folder / rel
        for parent in reversed(Path(rel).parents[:-1]):
            step = folder / parent
            if step.is_symlink() or step.exists() and not step.is_dir():
                raise OSError(f"{step} is in the way of the build's file {rel}")
            if not step.exists():
                step.mkdir()
                step.chmod(0o755)
        if target.parent.resolve() != real / Path(rel).parent:
            raise OSError(f"the build's file {rel} would land outside {folder}")
        if not target.is_symlink() and _sha(target) == made[rel]:
            continue  # already there, as it was (an output the build left alone)
        aside = target.with_name(f".{target.name}.arena-{os.getpid()}")
        # Read without following a link, and write a file made new here (O_EXCL): a link planted at either
        # name (by the build, or among the bot's own files) cannot make arena, often root, write elsewhere.
        src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            info = os.fstat(src)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(f"the build's file {rel} is not a regular file")
            mode = info.st_mode & 0o755  # never setuid or setgid
            dst = _create(aside, mode | 0o444 | (0o111 if mode & 0o100 else 0))
            with open(src, "rb", closefd=False) as reader, open(dst, "wb") as writer:
                shutil.copyfileobj(reader, writer)
        finally:
            os.close(src)
        os.replace(aside, target)  # replaces a link at `target` rather than writing through it


def _with_claims(error: BuildError, claimed: Sequence[str]) -> BuildError:
    """A failed build's error, saying which files a stamp arena did not write had listed as built (and so
    were left out of the build), if any: the likely cause."""
    if not claimed:
        return error
    names = ", ".join(claimed[:3]) + (f" and {len(claimed) - 3} more" if len(claimed) > 3 else "")
    return BuildError(
        f"{error} ({STAMP} was not written by arena here: it lists {names} as built, left out of the build)",
        error.output,
    )


def _write_stamp(folder: Path, bot: Bot | None, outputs: dict[str, str]) -> None:
    """Write the stamp whole (aside, then renamed), signed for this machine (arena/match/stamp.py): the
    build's commands, the sources' digest (none until the bot is loaded again with these outputs left out
    of it), and the outputs."""
    stamp = signature.sign(
        folder,
        {
            "build": [list(argv) for argv in bot.build] if bot is not None else None,
            "sources": bot.digest if bot is not None else None,
            "outputs": outputs,
        },
    )
    aside = folder / f"{STAMP}.{os.getpid()}"
    with open(_create(aside, 0o644), "w", encoding="utf-8") as f:
        f.write(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    os.replace(aside, folder / STAMP)


def _create(path: Path, mode: int) -> int:
    """A file made new at `path` (never an existing one, never through a link: the bot's folder is its
    author's, and arena is often root), open for writing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, mode)
    return fd
