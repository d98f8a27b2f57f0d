"""A free TCP port for a test's server (a scheduler, `arena serve`, a KGP port), one place for every test.

Asking the kernel for port 0 gives one of the ephemeral range (32768-60999 on Linux), the range it also takes
the source port of every outgoing connection from: freed again for the server to bind, it was taken by a
connection in between (CI: a scheduler's "Address already in use", and the test's client talked for 30 s to
whatever held the port). A port below that range is never given to a connection by the kernel."""

from __future__ import annotations

import random
import socket

LOW, HIGH = 20_000, 32_767  # below Linux's default ephemeral range (net.ipv4.ip_local_port_range)


def free_port() -> int:
    """A port of 127.0.0.1 below the ephemeral range that no one listens on or holds now."""
    pick = random.Random()  # not the tests' seeded one: two test processes must not walk the same ports
    for _ in range(200):
        port = pick.randint(LOW, HIGH)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port of 127.0.0.1 between {LOW} and {HIGH}")
