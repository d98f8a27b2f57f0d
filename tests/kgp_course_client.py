"""A KGP client that behaves as the course's Python library (KWARC kalah-game, client/pykgp) does where it
matters to a server, written for arena's tests from what that library was seen to do (its code is not
copied): `python3 kgp_course_client.py HOST PORT [--websocket] [--token TOKEN] [--hold S] [--no-yield]
[--miss N]`.

- It reads a command with the library's pattern: a command without arguments (`stop`, `goodbye`) is read
  only when a line end follows it, and is dropped otherwise (the library then fails to split its missing
  arguments). Over a WebSocket, each message is one such line.
- Each `state` is searched apart from the reader (the library starts a process), which answers with its
  first legal pit, then its best by a one-move look-ahead, then `yield`. Every line goes out through one
  send lock (the library's queue): the search takes it for its answer, and the reader's own lines (`pong`,
  the greeting) wait for it, the reader reading on meanwhile.
- With --hold S the search keeps the lock S seconds after its last line (the library's search process,
  its lines written, not yet let go of its queue's lock on a busy machine). A `stop` for that state read
  meanwhile kills the search holding the lock (the library kills it on `stop`): the lock is never let go,
  and nothing the client sends afterwards goes out, not even `pong`. It writes `stuck` to stderr then.
- With --no-yield the search never says `yield` (a search still deepening when its time runs out).
- With --miss N it gives no answer to its Nth state (and then answers the others): an agent that missed one.

It writes to stderr `one legal move` for a state with a single legal pit, and on every `stop` (read or
dropped) and at its end `stops S states T dropped D`: commands read, and dropped for want of a line end.
"""

import itertools
import queue
import re
import socket
import sys
import threading
import time

sys.path.insert(0, __file__.rpartition("/")[0] or ".")
from kgp_agent import board_of, gain, greet  # noqa: E402

# The library's pattern: an id, maybe a reference, the command, and its arguments after white space.
COMMAND = re.compile(r"^\s*(?:(?P<id>\d+)(?:@(?P<ref>\d+))?\s+)?(?P<cmd>\w+)(?:\s+(?P<args>.*?))?\s*$")


def main(argv):
    def option(name):
        return argv[argv.index(name) + 1] if name in argv else None

    token, miss = option("--token"), int(option("--miss") or 0)
    hold, answers = float(option("--hold") or 0), "--no-yield" not in argv
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

    lock = threading.Lock()  # the send queue's: whoever writes holds it
    guard = threading.Lock()  # over `holding` and `killed`
    holding: set[int] = set()  # states whose search holds the send lock after its last line
    killed: set[int] = set()  # states whose search was killed holding it
    outbox: queue.Queue = queue.Queue()
    ident = itertools.count(1, 2)

    def line(text, ref=None):
        return f"{next(ident)}{'@' + str(ref) if ref is not None else ''} {text}\r\n"

    def sender():  # the reader's lines, each once the lock is free
        while (text := outbox.get()) is not None:
            with lock:
                write(text)

    def search(cid, legal, best):
        lock.acquire()
        write(line(f"move {legal[0]}", cid))
        write(line(f"move {best}", cid))
        if answers:
            write(line("yield", cid))
        if hold:
            with guard:
                holding.add(cid)
            time.sleep(hold)
            with guard:
                holding.discard(cid)
                if cid in killed:
                    return  # killed holding the lock: it is never let go
        lock.release()

    threading.Thread(target=sender, daemon=True).start()
    stops = states = dropped = 0
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
            greet(lambda text: outbox.put(line(text)), "course-like", token)
        elif name == "state":
            states += 1
            store, _theirs, south, north = board_of(args.split()[0])
            legal = [p for p in range(1, len(south) + 1) if south[p - 1]]
            if len(legal) == 1:
                print("one legal move", file=sys.stderr, flush=True)
            if states == miss:
                continue
            best = max(legal, key=lambda p: gain(store, list(south), list(north), p))
            threading.Thread(target=search, args=(cid, legal, best), daemon=True).start()
        elif name == "stop":
            stops += 1
            print(f"stops {stops} states {states} dropped {dropped}", file=sys.stderr, flush=True)
            with guard:
                if ref in holding:
                    killed.add(ref)
                    print("stop came while its search held the send lock: stuck", file=sys.stderr, flush=True)
        elif name == "ping":
            outbox.put(line("pong", cid))
        elif name == "goodbye":
            break
    print(f"stops {stops} states {states} dropped {dropped}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv)
