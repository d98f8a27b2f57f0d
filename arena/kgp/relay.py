"""The relay a KGP agent connects to, run inside the agent's sandbox: `python3 -I kgp_relay.py PORT AGENT...`.

A KGP agent is a network client: it connects to a server's port (2671) and speaks KGP there. In the sandbox
its network is a private loopback, so the relay listens on that loopback, starts the agent, takes its one
connection and copies bytes both ways between it and the relay's own stdin and stdout, which are the
referee's pipes. The referee (arena/match/kgp_wire.py) thus speaks KGP over the same process pipes as every
other protocol, and the agent's process, limits and faults are handled as every bot's. The relay reads
nothing into the lines (the referee trusts none of them). The agent's stdout, which is not the game's
channel here, goes to stderr with its logs. Standard library only: it runs by its path, with no arena
import, under the sandbox's Python.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import threading

_WAIT = 0.05  # seconds between looks at an agent that has not connected yet
GOODBYE = b"goodbye\r\n"  # the referee's last line to an agent
CONNECTED = "kgp relay: the agent connected"  # on stderr: the referee tells "never connected" from "silent"


def _listen(port: int) -> list[socket.socket]:
    """Listening sockets on the loopback, IPv4 and (where there is one) IPv6, as an agent may try either."""
    listeners = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(1)
        except OSError as e:
            sock.close()
            if family == socket.AF_INET:
                raise SystemExit(f"kgp relay: cannot listen on {host}:{port}: {e.strerror}") from None
            continue
        listeners.append(sock)
    return listeners


def _to_agent(conn: socket.socket) -> None:
    """The referee's lines to the agent, until the referee says goodbye or closes the pipe: then the
    connection is closed, as a KGP server closes it after its goodbye (an agent may wait for that)."""
    while chunk := os.read(0, 65536):
        try:
            conn.sendall(chunk)
        except OSError:
            return
        if chunk == GOODBYE or chunk.endswith(b"\n" + GOODBYE):
            break
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _quick_ack(conn: socket.socket) -> None:
    """Acknowledge the agent's lines at once (Linux, where the kernel turns it off again now and then): an
    agent that writes `move`, `move`, `yield` as small writes on a socket with Nagle's algorithm (the
    default) holds the second until the first is acknowledged, and a delayed acknowledgement takes 40 ms."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if quickack is not None:
        conn.setsockopt(socket.IPPROTO_TCP, quickack, 1)


def _batch() -> None:
    """In the agent's process before it starts: its threads scheduled as a batch job (SCHED_BATCH, which its
    children inherit), so that a thread it wakes waits for its turn instead of preempting the thread that
    woke it. The course's Java library queues a search and then notes its state as running; on a busy
    machine the woken search thread took the CPU first, found no state running, dropped its moves and
    stopped (a position in five in `arena run`). On the idle machine of a student, where the course
    server's agents run, the two threads run side by side and the library notes the state first."""
    with contextlib.suppress(OSError, AttributeError):  # where there is no SCHED_BATCH, as it was
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def main(argv: list[str]) -> int:
    if len(argv) < 3 or not argv[1].isdigit():
        print("usage: kgp_relay.py PORT AGENT-COMMAND...", file=sys.stderr)
        return 2
    listeners = _listen(int(argv[1]))
    agent = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL, stdout=2, preexec_fn=_batch)
    conn = None
    while conn is None:
        ready, _, _ = select.select(listeners, [], [], _WAIT)
        if ready:
            conn, _ = ready[0].accept()
        elif agent.poll() is not None:
            print(
                f"kgp relay: the agent exited (code {agent.returncode}) without connecting", file=sys.stderr
            )
            return agent.returncode or 1
    for sock in listeners:  # one connection: the agent's
        sock.close()
    print(CONNECTED, file=sys.stderr, flush=True)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a line goes out at once, not with the next
    threading.Thread(target=_to_agent, args=(conn,), daemon=True).start()
    while True:
        try:
            _quick_ack(conn)
            chunk = conn.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        os.write(1, chunk)
    os.close(1)  # the referee sees the connection's end as the end of stdout
    return agent.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
