"""The bridge from a ranked game to a connected agent: `python3 -I kgp_bridge.py SOCKET SLUG`.

The ladder's referee plays a remote agent (arena/server/kgp_ranked.py) as a KGP bot whose process is this
bridge: it asks the KGP worker, over its Unix socket, for SLUG's agent, waits while the agent plays another
game, and once it has it says so on stderr (as the sandbox's relay does) and copies bytes both ways between
its stdin and stdout (the referee's pipes) and the socket. The worker speaks for the agent where a game's
wire differs from a connection's (the greeting, `goodbye`). Standard library only, as the relay: it runs by
its path, under arena's Python, outside the sandbox, since it runs no student's code.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

CONNECTED = "kgp relay: the agent connected"  # what the referee waits for (arena/match/kgp_wire.py's)
READY = b"ready\n"  # the worker's word that the agent is ours for this game


def _to_worker(sock: socket.socket) -> None:
    """The referee's lines to the worker, until the referee closes the pipe."""
    while chunk := os.read(0, 65536):
        try:
            sock.sendall(chunk)
        except OSError:
            break
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    path, slug = argv
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        sock.sendall(slug.encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 1000:
            chunk = sock.recv(1)
            if not chunk:
                break
            answer += chunk
    except OSError as e:
        print(f"kgp bridge: the class server's KGP port is not running ({e.strerror})", file=sys.stderr)
        return 1
    if answer != READY:
        print(f"kgp bridge: {answer.decode('utf-8', 'replace').strip() or 'no agent'}", file=sys.stderr)
        return 1
    print(CONNECTED, file=sys.stderr, flush=True)
    threading.Thread(target=_to_worker, args=(sock,), daemon=True).start()
    while chunk := sock.recv(65536):
        os.write(1, chunk)
    print("kgp bridge: the agent's connection to the class server ended", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
