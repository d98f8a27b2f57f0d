"""A KGP client that behaves as the course's Java library (KWARC kalah-game, client/jkgp) with its MinMaxAgent
does where it matters to a server, written for arena's tests from what that library was seen to do (its code
is not copied): `python3 kgp_java_client.py HOST PORT [--token TOKEN] [--race-every K]`.

The library has three threads: one reads lines, one searches, and the main one handles what the other two
report. On a `state` the main thread queues a search job and only then notes the state as running; the
search first submits a move (its first legal pit), which the library sends only for a state noted as
running, then checks whether it should stop (a state not running), else submits its best; when the search
is done the main thread says `yield` unless the state was stopped. On a loaded machine the search thread,
woken by the job, can run before the main thread notes the state: then its move is dropped, the search stops
at once, and the main thread, having noted the state meanwhile, says `yield` with no move sent.

With --race-every K, that interleaving is forced on every Kth state it is sent (the main thread notes the
state only once the search is done); the others are answered normally. It writes to stderr `dropped STATE`
for each move it dropped, and at its end `states S dropped D`; at its start, how it is scheduled
(`scheduled as SCHED_BATCH`).
"""

import os
import queue
import re
import socket
import sys
import threading

sys.path.insert(0, __file__.rpartition("/")[0] or ".")
from kgp_agent import board_of, gain, greet  # noqa: E402

COMMAND = re.compile(
    r"^\s*(?:(?P<id>\d+)?(?:@(?P<ref>\d+))?\s+)?(?P<cmd>[a-z0-9]+)\s*(?P<args>.*?)\s*$", re.I
)
RUNNING = 1 << 31  # the library's mark for a state noted as running with no move sent yet


def main(argv):
    token = argv[argv.index("--token") + 1] if "--token" in argv else None
    every = int(argv[argv.index("--race-every") + 1]) if "--race-every" in argv else 0
    sock = socket.create_connection((argv[1], int(argv[2])))
    reader, out = sock.makefile("r", newline=""), sock.makefile("w", newline="")
    lock = threading.Lock()
    ident = [1]
    running: dict[int, int] = {}  # state id -> the last move sent for it
    events: queue.Queue = queue.Queue()
    jobs: queue.Queue = queue.Queue()
    dropped = [0]

    def send(text, ref=None):
        with lock:
            out.write(f"{ident[0]}{'@' + str(ref) if ref is not None else ''} {text}\r\n")
            out.flush()
            ident[0] += 2

    def submit(pit, ref):
        last = running.get(ref)
        if last is None:
            dropped[0] += 1
            print(f"dropped {ref}", file=sys.stderr, flush=True)
        elif last != pit:
            send(f"move {pit}", ref)
            running[ref] = pit

    def network():
        for line in reader:
            events.put(("line", line))
        events.put(("closed", None))

    def search():
        while (job := jobs.get()) is not None:
            ref, board, done = job
            store, _theirs, south, north = board_of(board)
            legal = [p for p in range(1, len(south) + 1) if south[p - 1]]
            submit(legal[0], ref)
            if ref in running:
                submit(max(legal, key=lambda p: gain(store, list(south), list(north), p)), ref)
            done.set()
            events.put(("finished", ref))

    policy = {getattr(os, n, -1): n for n in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE")}
    print(f"scheduled as {policy.get(os.sched_getscheduler(0), '?')}", file=sys.stderr, flush=True)
    threading.Thread(target=network, daemon=True).start()
    threading.Thread(target=search, daemon=True).start()
    states = 0
    while True:
        kind, value = events.get()
        if kind == "closed":
            break
        if kind == "finished":
            if value in running:
                send("yield", value)
            continue
        match = COMMAND.match(value)
        if not match:
            continue
        cid = int(match.group("id")) if match.group("id") else None
        ref = int(match.group("ref")) if match.group("ref") else None
        name, args = match.group("cmd"), match.group("args").split()
        if name == "kgp":
            greet(send, "java-like", token)
        elif name == "state":
            states += 1
            done = threading.Event()
            jobs.put((cid, args[0], done))
            if every and states % every == 0:
                done.wait()  # the search ran before the state was noted
            running[cid] = RUNNING
        elif name == "stop":
            running.pop(ref, None)
        elif name == "ping":
            send("pong", cid)
        elif name == "goodbye":
            break
    jobs.put(None)
    print(f"states {states} dropped {dropped[0]}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv)
