"""A KGP client that behaves as the course's Python library (KWARC kalah-game, client/pykgp) does where it
matters to a server, written for arena's tests from what that library was seen to do (its code is not
copied): `python3 kgp_course_client.py HOST PORT [--websocket] [--token TOKEN] [--race] [--miss N]`.

- It reads a command with the library's pattern: a command without arguments (`stop`, `goodbye`) is read
  only when a line end follows it, and is dropped otherwise (the library then fails to split its missing
  arguments). Over a WebSocket, each message is one such line.
- It answers each `state` with its first legal pit, then its best by a one-move look-ahead, then `yield`.
- With --race it loses every answer after a `stop` that comes within RACE_S of its `yield` (the library
  kills its finished search process while that process still holds its queue's lock, and nothing it sends
  afterwards goes out), as the course's library does over a loopback.
- With --miss N it gives no answer to its Nth state (and then answers the others): an agent that missed one.

It writes to stderr `one legal move` for a state with a single legal pit, and on every `stop` (read or
dropped) and at its end `stops S states T dropped D`: commands read, and dropped for want of a line end.
"""

import re
import socket
import sys
import time

sys.path.insert(0, __file__.rpartition("/")[0] or ".")
from kgp_agent import board_of, gain  # noqa: E402

# The library's pattern: an id, maybe a reference, the command, and its arguments after white space.
RACE_S = 0.03  # a `stop` this soon after the `yield` finds the search process still writing
COMMAND = re.compile(r"^\s*(?:(?P<id>\d+)(?:@(?P<ref>\d+))?\s+)?(?P<cmd>\w+)(?:\s+(?P<args>.*?))?\s*$")


def main(argv):
    def option(name):
        return argv[argv.index(name) + 1] if name in argv else None

    token, race, miss = option("--token"), "--race" in argv, int(option("--miss") or 0)
    host, port = argv[1], int(argv[2])
    if "--websocket" in argv:
        from websockets.sync.client import connect

        ws = connect(f"ws://{host}:{port}/socket")

        def units():
            try:
                while True:
                    yield str(ws.recv())
            except Exception:  # closed
                return

        write = ws.send
    else:
        sock = socket.create_connection((host, port))
        stream = sock.makefile("rw", newline="")

        def units():
            yield from stream

        def write(text):
            stream.write(text)
            stream.flush()

    ident = [1]

    def send(text, ref=None):
        if not stuck:
            write(f"{ident[0]}{'@' + str(ref) if ref is not None else ''} {text}\r\n")
        ident[0] += 2

    stops = states = dropped = 0
    yielded: dict[int, float] = {}  # when it yielded each state
    stuck = False  # the race happened: nothing it sends goes out any more
    for unit in units():
        match = COMMAND.match(unit)
        if not match:
            continue
        cid = int(match.group("id")) if match.group("id") else None
        ref = int(match.group("ref")) if match.group("ref") else None
        name, args = match.group("cmd"), match.group("args")
        if args is None:  # the library's split(None) raises, and the command is dropped
            dropped += 1
            print(f"stops {stops} states {states} dropped {dropped}", file=sys.stderr, flush=True)
            continue
        if name == "kgp":
            send('set info:name "course-like"')
            if token:
                send(f'set auth:token "{token}"')
            send("mode freeplay")
        elif name == "state":
            states += 1
            store, _theirs, south, north = board_of(args.split()[0])
            legal = [p for p in range(1, len(south) + 1) if south[p - 1]]
            if len(legal) == 1:
                print("one legal move", file=sys.stderr, flush=True)
            if states == miss:
                continue
            send(f"move {legal[0]}", cid)
            send(f"move {max(legal, key=lambda p: gain(store, list(south), list(north), p))}", cid)
            send("yield", cid)
            yielded[cid] = time.monotonic()
        elif name == "stop":
            stops += 1
            print(f"stops {stops} states {states} dropped {dropped}", file=sys.stderr, flush=True)
            if race and ref in yielded and time.monotonic() - yielded[ref] < RACE_S:
                stuck = True
                print("stop raced yield: stuck", file=sys.stderr, flush=True)
        elif name == "ping":
            send("pong", cid)
        elif name == "goodbye":
            break
    print(f"stops {stops} states {states} dropped {dropped}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv)
