"""The seccomp filter's narrowings beyond Docker's list (issue 28, items 9 and 11), in arena's real sandbox as
root and as an ordinary user: no socket family but AF_UNIX, and personality() only with Docker's values.

One driver per mode starts the probe twice in a Warden's sandbox, with the filter and without it (as on a
machine without libseccomp): the second run shows that each refused call works here when nothing refuses it,
so every assertion below could fail.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_redteam import as_nobody

from arena.report import page
from arena.sandbox import sandbox_problem, seccomp

# name: (family, type, protocol); each made with socket.socket() in the sandbox.
FAMILIES = {
    "AF_INET": (2, 2, 0),  # SOCK_DGRAM
    "AF_INET6": (10, 2, 0),
    "AF_VSOCK": (40, 1, 0),  # SOCK_STREAM: a port the machine, every sandbox and the hypervisor share
    "AF_NETLINK": (16, 3, 0),  # SOCK_RAW, NETLINK_ROUTE
    "AF_PACKET": (17, 2, 0),
    "AF_ALG": (38, 5, 0),  # SOCK_SEQPACKET: the kernel's crypto API
    "AF_KEY": (15, 3, 2),  # PF_KEY_V2
}
READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO = 0x0400000, 0x0040000, 0x0100000
REFUSED = {"READ_IMPLIES_EXEC": READ_IMPLIES_EXEC, "ADDR_NO_RANDOMIZE": ADDR_NO_RANDOMIZE}
REFUSED |= {"MMAP_PAGE_ZERO": MMAP_PAGE_ZERO, "UNAME26|ADDR_NO_RANDOMIZE": 0x8 | ADDR_NO_RANDOMIZE}

PROBE = """import ctypes, json, socket
def made(make):
    try:
        got = make()
    except OSError as e:
        return e.errno
    for one in got if isinstance(got, tuple) else (got,):
        one.close()
    return 0
found = {{"socket": {{}}, "socketpair": {{}}, "personality": {{}}}}
for name, (family, kind, proto) in {families!r}.items():
    found["socket"][name] = made(lambda: socket.socket(family, kind, proto))
found["socket"]["AF_UNIX"] = made(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
found["socketpair"]["AF_UNIX"] = made(lambda: socket.socketpair(socket.AF_UNIX))
found["socketpair"]["AF_INET"] = made(lambda: socket.socketpair(socket.AF_INET))
found["socketpair"]["AF_UNIX_DGRAM"] = made(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
def listener(backlog):
    with socket.socket(socket.AF_INET) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(backlog)
    return ()
found["listen"] = {{str(n): made(lambda: listener(n)) for n in (1, 7, 8, 64)}}
one, other = socket.socketpair()
default = one.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
one.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
found["sndbuf"] = one.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == default
one.close(), other.close()
libc = ctypes.CDLL(None, use_errno=True)
libc.personality.argtypes, libc.personality.restype = [ctypes.c_ulong], ctypes.c_int
for value in {values!r}:
    ctypes.set_errno(0)
    answer = libc.personality(value)
    found["personality"][hex(value)] = ctypes.get_errno() if answer == -1 else 0
    libc.personality(0)
print(json.dumps(found), flush=True)
"""
# Runs the probe in arena's sandbox (resolved as arena run resolves it), then in a KGP agent's (TCP on its
# private loopback), then again without the filter.
DRIVER = """import sys, time
from pathlib import Path
from arena.sandbox import seccomp
from arena.sandbox import Confinement, Warden, capabilities
from arena.match.process import BotProcess
conf, _ = capabilities(Confinement(memory_mb=512), want_sandbox=True)
assert conf.sandbox, "no sandbox"
warden = Warden(conf)
for run in ("filtered", "loopback", "unfiltered"):
    if run == "unfiltered":
        seccomp._built = lambda: (b"", "no seccomp filter for bots (the test's)")
    jail = warden.jail(Path(sys.argv[1]), loopback=run == "loopback")
    bot = BotProcess.start([sys.executable, sys.argv[1]], cwd=Path(sys.argv[1]).parent, jail=jail)
    print(bot.read_line(time.monotonic() + 20), flush=True)
    bot.kill()
warden.close()
"""


def values() -> list[int]:
    return [*seccomp.PERSONALITIES, *REFUSED.values()]


@pytest.fixture(scope="module", params=["root", "user"])
def probed(request: pytest.FixtureRequest) -> Iterator[dict[str, dict]]:
    """What the probe found in the sandbox, 'filtered', 'loopback' (a KGP agent's) and 'unfiltered', as root
    or as uid 65534."""
    if os.geteuid() != 0:
        pytest.skip("run as root: the test runs the sandbox as root and, dropping privileges, as a user")
    if sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {sandbox_problem()}")
    if seccomp.problem():
        pytest.skip(seccomp.problem())
    folder = Path(tempfile.mkdtemp(prefix="arena-calls-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        probe, driver = folder / "probe.py", folder / "driver.py"
        probe.write_text(PROBE.format(families=FAMILIES, values=values()), encoding="utf-8")
        driver.write_text(DRIVER, encoding="utf-8")
        for path in (probe, driver):
            path.chmod(0o644)
        command = [sys.executable, str(driver), str(probe)]
        if request.param == "user":
            command = as_nobody(
                command, [Path(sys.base_prefix), Path(sys.prefix), Path(page.__file__).parents[2]]
            )
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=folder)
        lines = done.stdout.splitlines()
        assert done.returncode == 0 and len(lines) == 3, (done.stdout, done.stderr)
        yield dict(zip(("filtered", "loopback", "unfiltered"), map(json.loads, lines), strict=True))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_bot_makes_no_socket_but_a_unix_one(probed: dict[str, dict], family: str) -> None:
    """socket() of any family but AF_UNIX answers EAFNOSUPPORT, as a kernel without the family would; without
    the filter the same call is made, or refused otherwise (EPERM for a raw family: no capability)."""
    assert probed["filtered"]["socket"][family] == errno.EAFNOSUPPORT, probed
    if family in ("AF_ALG", "AF_KEY") and probed["unfiltered"]["socket"][family] == errno.EAFNOSUPPORT:
        pytest.skip(f"this kernel has no {family}: the filter's answer is the kernel's own")
    assert probed["unfiltered"]["socket"][family] != errno.EAFNOSUPPORT, probed


def test_a_bot_makes_only_pairs_of_unix_streams_with_the_default_buffers(probed: dict[str, dict]) -> None:
    """Pipes between a bot's own processes (asyncio's self-pipe, multiprocessing.Pipe) keep working; socket()
    of AF_UNIX too is refused (a listener's backlog or a bound datagram socket queues what many senders
    send: issue 40), so is a pair of datagrams, and SO_SNDBUF is answered as set but left at the default
    (the buffers of 261 pairs held 2 GiB under --memory 512). Without the filter each of these is made."""
    assert probed["filtered"]["socket"]["AF_UNIX"] == errno.EAFNOSUPPORT, probed
    assert probed["filtered"]["socketpair"]["AF_UNIX"] == 0, probed
    assert probed["filtered"]["socketpair"]["AF_INET"] == errno.EAFNOSUPPORT, probed
    assert probed["filtered"]["socketpair"]["AF_UNIX_DGRAM"] == errno.EPROTONOSUPPORT, probed
    assert probed["filtered"]["sndbuf"] is True, probed
    assert probed["unfiltered"]["socket"]["AF_UNIX"] == 0, probed
    assert probed["unfiltered"]["socketpair"]["AF_INET"] != errno.EAFNOSUPPORT, probed
    assert probed["unfiltered"]["socketpair"]["AF_UNIX_DGRAM"] == 0, probed
    assert probed["unfiltered"]["sndbuf"] is False, probed


def test_a_kgp_agents_listener_holds_a_backlog_of_seven_at_most(probed: dict[str, dict]) -> None:
    """A listening socket holds what every connection not yet accepted was sent: a KGP agent (whose sandbox
    has TCP, for arena's relay, which listens with a backlog of 1) may listen with a backlog under 8, no
    more (a negative one, the most there is to the kernel, sets bit 31: refused too; Python's listen() makes
    it 0); without the filter, any backlog is taken."""
    assert probed["loopback"]["listen"] == {"1": 0, "7": 0, "8": 1, "64": 1}, probed  # EPERM
    assert probed["unfiltered"]["listen"] == {"1": 0, "7": 0, "8": 0, "64": 0}, probed


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_kgp_agent_makes_tcp_on_its_loopback_and_nothing_else(probed: dict[str, dict], family: str) -> None:
    """A KGP agent and arena's relay speak TCP inside the sandbox's own network namespace (its one interface
    a private loopback), so AF_INET and AF_INET6 are theirs; every other family but AF_UNIX stays refused,
    vsock's ports (shared with every sandbox and the hypervisor) first."""
    got = probed["loopback"]["socket"][family]
    if family in ("AF_INET", "AF_INET6"):
        assert got == 0, probed
        assert probed["filtered"]["socket"][family] == errno.EAFNOSUPPORT, probed
    else:
        assert got == errno.EAFNOSUPPORT, probed
    assert probed["loopback"]["socket"]["AF_UNIX"] == 0, probed


def test_the_family_rules_match_everything_but_the_allowed() -> None:
    """The union of one-comparison rules for a KGP agent is exactly "not AF_UNIX, AF_INET or AF_INET6"."""
    allowed = set(seccomp.LOOPBACK_FAMILIES)
    rules = seccomp.family_denials(seccomp.LOOPBACK_FAMILIES)
    cases = [*range(64), 1 << 32, (1 << 32) | 2, (1 << 64) - 1]
    wrong = [v for v in cases if any(v > a if op == "GT" else v == a for op, a in rules) == (v in allowed)]
    assert not wrong, wrong


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_personality_refuses_what_docker_refuses(probed: dict[str, dict], name: str) -> None:
    """READ_IMPLIES_EXEC (every readable page executable), ADDR_NO_RANDOMIZE (no ASLR for what the bot
    starts next) and MMAP_PAGE_ZERO are refused with EPERM; without the filter the kernel takes them."""
    value = hex(REFUSED[name])
    assert probed["filtered"]["personality"][value] == errno.EPERM, probed
    assert probed["unfiltered"]["personality"][value] == 0, probed


def test_personality_takes_dockers_values(probed: dict[str, dict]) -> None:
    """Linux, UNAME26, PER_LINUX32 (alone and with UNAME26) and the query still work."""
    for value in seccomp.PERSONALITIES:
        assert probed["filtered"]["personality"][hex(value)] == 0, (hex(value), probed)


def denied(value: int) -> bool:
    """Whether `seccomp.personality_denials` matches `value`, evaluated as the kernel's filter would."""
    rules = seccomp.personality_denials()
    return any(value > a if op == "GT" else value & a == b for op, a, b in rules)


def test_the_personality_rules_match_everything_but_dockers_values() -> None:
    """The union of one-comparison rules is exactly "not one of the five": checked on every value with at most
    two bits set or two bits clear, values past 32 bits, and a sample of the rest."""
    allowed = set(seccomp.PERSONALITIES)
    ones = [(1 << i) | (1 << j) for i in range(32) for j in range(32)]
    sample = random.Random(28).sample(range(1 << 32), 20_000)
    cases = [
        *allowed,
        *ones,
        *(0xFFFFFFFF ^ v for v in ones),
        *sample,
        1 << 32,
        (1 << 32) | 0x8,
        (1 << 64) - 1,
    ]
    wrong = [hex(v) for v in cases if denied(v) == (v in allowed)]
    assert not wrong, wrong[:10]
