"""An upload made a bot folder (arena/server/versions/unpack.py): each bad zip is refused in one line,
leaving nothing.

Plain Python: these run without the server's extra.
"""

from __future__ import annotations

import io
import os
import stat
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from arena.match.clock import TimeControl
from arena.server.versions.unpack import Caps, Rejected, unpack

GOOD_TOML = b'command = "python3 bot.py"\n'
PLAYS = b"import sys\nfor line in sys.stdin:\n    pass\n"


def zipped(*entries: tuple[str, bytes], infos: Sequence[tuple[zipfile.ZipInfo, bytes]] = ()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            with warnings.catch_warnings():  # a name twice is one of the bad zips
                warnings.simplefilter("ignore")
                z.writestr(name, data)
        for info, data in infos:
            z.writestr(info, data)
    return buf.getvalue()


def attempt(tmp_path: Path, name: str, data: bytes, caps: Caps = Caps()) -> Path:
    target = tmp_path / "alice"
    unpack(name, io.BytesIO(data), len(data), target, caps)
    return target


def refused(tmp_path: Path, name: str, data: bytes, words: str, caps: Caps = Caps()) -> None:
    with pytest.raises(Rejected) as e:
        attempt(tmp_path, name, data, caps)
    assert words in str(e.value)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "alice").exists(), "a refused upload leaves nothing behind"
    written = [name for _, folders, files in os.walk(tmp_path.parent) for name in (*folders, *files)]
    assert not [n for n in written if n.startswith("evil")], "nothing written outside the folder"


def test_a_zipped_folder_is_unwrapped_and_loaded(tmp_path: Path) -> None:
    data = zipped(("mybot/bot.toml", GOOD_TOML), ("mybot/bot.py", PLAYS), ("__MACOSX/._bot.py", b"x"))
    target = attempt(tmp_path, "mybot.zip", data)
    assert sorted(p.name for p in target.iterdir()) == ["bot.py", "bot.toml"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert stat.S_IMODE((target / "bot.py").stat().st_mode) == 0o644


def test_a_zip_of_the_files_themselves_works_too(tmp_path: Path) -> None:
    target = attempt(tmp_path, "x.zip", zipped(("bot.toml", GOOD_TOML), ("bot.py", PLAYS)))
    assert (target / "bot.toml").is_file()


def test_a_single_python_file_gets_its_bot_toml(tmp_path: Path) -> None:
    target = attempt(tmp_path, "my_bot.py", PLAYS)
    assert (target / "my_bot.py").read_bytes() == PLAYS
    assert "python3 -P -u my_bot.py" in (target / "bot.toml").read_text()


def test_a_single_c_file_gets_a_build(tmp_path: Path) -> None:
    target = attempt(tmp_path, "../../evil/main.c", b"int main(void){return 0;}\n")
    assert (target / "main.c").is_file()
    assert 'build = "cc -O2 -o bot main.c"' in (target / "bot.toml").read_text()


def test_a_file_name_that_is_no_name_is_replaced(tmp_path: Path) -> None:
    target = attempt(tmp_path, "-rf $(x).py", PLAYS)
    assert (target / "bot.py").is_file()


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("evil.zip", zipped(("../evil.py", PLAYS), ("bot.toml", GOOD_TOML)), "climbs out"),
        ("evil.zip", zipped(("a/../../evil.py", PLAYS), ("bot.toml", GOOD_TOML)), "climbs out"),
        ("evil.zip", zipped(("/tmp/evil.py", PLAYS), ("bot.toml", GOOD_TOML)), "absolute path"),
        ("evil.zip", zipped(("C:/evil.py", PLAYS), ("bot.toml", GOOD_TOML)), "absolute path"),
        ("evil.zip", zipped(("a\\..\\evil.py", PLAYS), ("bot.toml", GOOD_TOML)), "absolute path"),
        ("bad.zip", b"PK\x03\x04 this is no zip at all", "not a zip file"),
        ("bot.rb", b"puts 1\n", "unknown language"),
        ("bot.zip", zipped(("bot.py", PLAYS)), "no bot.toml"),
        ("bot.zip", zipped(("bot.toml", b"command = [unclosed"), ("bot.py", PLAYS)), "bot.toml is not TOML"),
        ("bot.zip", zipped(("bot.toml", b'command = "ruby bot.rb"'), ("bot.rb", b"")), "not installed"),
        ("bot.zip", zipped(("bot.toml", b'comand = "./x"'), ("bot.py", PLAYS)), "unknown key"),
        ("bot.zip", zipped(("a/bot.toml", GOOD_TOML), ("a/bot.toml", GOOD_TOML)), "twice"),
    ],
)
def test_bad_uploads_are_refused_in_one_line(tmp_path: Path, name: str, data: bytes, words: str) -> None:
    refused(tmp_path, name, data, words)


def _info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    return info


def test_a_link_is_refused(tmp_path: Path) -> None:
    data = zipped(("bot.toml", GOOD_TOML), infos=[(_info("bot.py", stat.S_IFLNK | 0o777), b"/etc/shadow")])
    refused(tmp_path, "bot.zip", data, "link")


@pytest.mark.parametrize("kind", [stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK])
def test_a_device_is_refused(tmp_path: Path, kind: int) -> None:
    data = zipped(("bot.toml", GOOD_TOML), infos=[(_info("dev", kind | 0o666), b"")])
    refused(tmp_path, "bot.zip", data, "device")


def test_a_zip_bomb_is_refused_by_its_total(tmp_path: Path) -> None:
    data = zipped(("bot.toml", GOOD_TOML), ("bot.py", PLAYS), ("big.bin", b"\0" * (40 << 20)))
    assert len(data) < 1 << 20  # a small upload
    refused(tmp_path, "bot.zip", data, "zip bomb")


def test_a_zip_bomb_that_lies_about_its_size_is_stopped_while_unpacking(tmp_path: Path) -> None:
    data = bytearray(zipped(("bot.toml", GOOD_TOML), ("big.bin", b"\0" * (4 << 20))))
    # Shrink big.bin's declared size in both headers (local and central) to 10 bytes.
    real = (4 << 20).to_bytes(4, "little")
    assert data.count(real) == 2
    data = data.replace(real, (10).to_bytes(4, "little"))
    refused(tmp_path, "bot.zip", bytes(data), "unpack")


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    data = zipped(("bot.toml", GOOD_TOML), *((f"f{k}.txt", b"") for k in range(20)))
    refused(tmp_path, "bot.zip", data, "entries", Caps(files=10))


def test_an_upload_too_big_is_refused_before_it_is_read(tmp_path: Path) -> None:
    refused(tmp_path, "bot.py", PLAYS * 100, "upload too big", Caps(upload_bytes=1000))


def test_an_executable_bit_is_kept_and_the_build_stamp_is_not(tmp_path: Path) -> None:
    infos = [
        (_info("run.sh", stat.S_IFREG | 0o755), b"#!/bin/sh\n"),
        (_info(".arena-build.json", stat.S_IFREG | 0o644), b"{}"),
    ]
    target = attempt(tmp_path, "b.zip", zipped(("bot.toml", b'command = "./run.sh"'), infos=infos))
    assert stat.S_IMODE((target / "run.sh").stat().st_mode) == 0o755
    assert not (target / ".arena-build.json").exists()


SHADOWS = b"""\
import random
import sys

for line in sys.stdin:
    w = line.split()
    if w and w[0] == "MOVE":
        b = [int(x) for x in w[2:]]
        print(random.choice([p for p in range(1, len(b) // 2) if b[p - 1]]))
    elif w and w[0] == "QUIT":
        break
"""


def test_a_single_file_named_like_a_stdlib_module_plays_as_arena_run_plays_it(tmp_path: Path) -> None:
    """random.py that imports random passed in `arena run` (python3 -P) and failed its check on the server,
    which ran `python3 random.py` (the file imported itself); and it prints without flushing, which arena
    run's line-buffered Python sends at once. The server's copy must play as the file does."""
    from arena.match.bots import load_bot
    from arena.student.check import check
    from arena.tournament.settings import Settings

    alone = tmp_path / "mine" / "random.py"
    alone.parent.mkdir()
    alone.write_bytes(SHADOWS)
    settings = Settings(clock=TimeControl(move_ms=2000), openings=0)
    verdicts = {}
    for where, bot in (
        ("arena run", load_bot(alone)),
        ("server", load_bot(attempt(tmp_path, "random.py", SHADOWS))),
    ):
        report = check(bot, settings)
        verdicts[where] = [(item.name, item.status) for item in report.items]
        assert not report.fails, (where, report.to_dict())
    assert verdicts["arena run"] == verdicts["server"]
