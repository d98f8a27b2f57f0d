"""A KGP agent written from the spec alone (KWARC kalah-game, spec/: grammar, freeplay, set), standard library
only, as a student's agent would be: `python3 kgp_agent.py [HOST [PORT]] [--style STYLE] [--token TOKEN]
[--version V]`. It connects, says its name (its version and token, given them, as the class server asks),
asks for freeplay, and
answers each `state` as South: its first legal pit at once, then its best
pit by a one-move look-ahead, then `yield`. The tests give it a style that breaks one thing:

    greedy        as above (the default)
    first         its first legal pit only, then `yield` (a weak agent)
    illegal-last  a legal best, then an empty pit last
    illegal-only  a pit beyond the board, and nothing else
    silent        reads the states and answers none
    noisy         writes lines that are not KGP before each answer
    to-the-end    reads on after `goodbye`, until the connection closes (as the course's Python library)
    garbage       writes nothing but lines that are not KGP
    elsewhere     connects to a port where nothing listens, and waits
    deepen        answers its first state, then goes on thinking past `stop` and sends a late move after it
"""

import re
import socket
import sys
import time

LINE = re.compile(r"\s*(?:(\d*)(?:@(\d+))?\s+)?([A-Za-z0-9]+)(?:\s+(.*?))?\s*")


def words(text):
    """The arguments of a command: quoted strings unquoted, the rest split on white space."""
    out, k = [], 0
    while k < len(text):
        if text[k].isspace():
            k += 1
        elif text[k] == '"':
            j, buf = k + 1, []
            while j < len(text) and text[j] != '"':
                if text[j] == "\\":
                    j += 1
                buf.append(text[j])
                j += 1
            out.append("".join(buf))
            k = j + 1
        else:
            j = k
            while j < len(text) and not text[j].isspace():
                j += 1
            out.append(text[k:j])
            k = j
    return out


def board_of(literal):
    numbers = [int(n) for n in literal.strip("<>").split(",")]
    n = numbers[0]
    return numbers[1], numbers[2], numbers[3 : 3 + n], numbers[3 + n : 3 + 2 * n]


def gain(store, south, north, pit):
    """Seeds our store holds after sowing `pit` (1-based), counting a capture, and whether we move again."""
    n = len(south)
    ring = south + [store] + north  # our pits, our store, their pits (their store is skipped)
    i, seeds = pit - 1, ring[pit - 1]
    ring[i] = 0
    while seeds:
        i = (i + 1) % len(ring)
        ring[i] += 1
        seeds -= 1
    if i < n and ring[i] == 1 and ring[2 * n - i]:
        ring[n] += ring[2 * n - i] + 1
    return ring[n] + (i == n) * 2


def greet(send, name, token=None, version=None):
    """The answer to the greeting `kgp 1 ...`: its name, its version and token if it has them, `mode
    freeplay` (the test clients that behave as the course's libraries answer it so too)."""
    send(f'set info:name "{name}"')
    if version is not None:
        send(f'set info:version "{version}"')
    if token is not None:
        send(f'set auth:token "{token}"')
    send("mode freeplay")


def main(argv):
    style = argv[argv.index("--style") + 1] if "--style" in argv else "greedy"
    token = argv[argv.index("--token") + 1] if "--token" in argv else None
    version = argv[argv.index("--version") + 1] if "--version" in argv else None
    args = [a for a in argv[1:] if not a.startswith("--") and a not in (style, token, version)]
    host, port = (args + ["localhost"])[0], int((args + ["", "2671"])[1] or 2671)
    if style == "elsewhere":
        try:
            socket.create_connection((host, port + 1))
        except OSError:
            time.sleep(60)
    sock = socket.create_connection((host, port))
    stream = sock.makefile("rw", newline="")
    ident = [1]

    def send(text, ref=None):
        stream.write(f"{ident[0]}{'@' + str(ref) if ref is not None else ''} {text}\r\n")
        stream.flush()
        ident[0] += 2

    for raw in stream:
        match = LINE.fullmatch(raw.rstrip("\r\n"))
        if not match:
            continue
        cid, _ref, name, rest = match.groups()
        cid = int(cid) if cid else None
        args = words(rest or "")
        if name == "kgp":
            if args[0] != "1":
                send('error "protocol not supported"')
                break
            greet(send, "spec agent", token, version)
        elif name == "state":
            store, _theirs, south, north = board_of(args[0])
            legal = [p for p in range(1, len(south) + 1) if south[p - 1]]
            if style == "silent":
                continue
            if style == "garbage":
                stream.write("not KGP!\r\n" * 100)
                stream.flush()
                continue
            if style == "noisy":
                stream.write("this is not KGP!\r\n")
                stream.flush()
            if style == "illegal-only":
                send(f"move {len(south) + 1}", cid)
                send("yield", cid)
                continue
            send(f"move {legal[0]}", cid)
            if style == "first":
                send("yield", cid)
                continue
            best = max(legal, key=lambda p: gain(store, list(south), list(north), p))
            send(f"move {best}", cid)
            if style == "illegal-last":
                empty = [p for p in range(1, len(south) + 1) if not south[p - 1]]
                send(f"move {empty[0] if empty else len(south) + 1}", cid)
            if style == "deepen":
                time.sleep(0.4)  # the next depth, done after `stop`: its move must be ignored
                send(f"move {legal[0]}", cid)
                style = "greedy"  # once: a search that always overran would miss the states after
            else:
                send("yield", cid)
        elif name == "ping":
            send("pong", cid)
        elif name == "goodbye" and style != "to-the-end":
            break
    sock.close()


if __name__ == "__main__":
    main(sys.argv)
