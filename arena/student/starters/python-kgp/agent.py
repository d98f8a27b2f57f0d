"""{{NAME}}: a greedy Kalah agent speaking the Kalah Game Protocol (KGP), made by `arena new`. It is yours.

It connects to a KGP server (arena's relay in a tournament, or a course server: python3 agent.py HOST PORT,
with the token from your page on the server in the environment, ARENA_TOKEN, as `arena submit` takes it),
asks for freeplay, and answers every `state` with moves, each better than the last: its first legal pit at
once, then the pit with the best `score` one move ahead, then `yield` (done). The server plays the last legal
move it received before it says `stop`. A deeper search sends a `move` after each depth it finishes and
stops when `stop` comes. Standard library only, so every line of the protocol is here to read.

Try it:  arena check {{NAME}}    arena play {{NAME}} random --show
"""

import os
import re
import socket
import sys

EXTRA_TURN_BONUS = 2  # what moving again is worth, in seeds: tune it

# A KGP line: [id][@ref] name args... (spec: "Formal Structure")
COMMAND = re.compile(r"\s*(?:(\d*)(?:@(\d+))?\s+)?([A-Za-z0-9]+)(?:\s+(.*?))?\s*")


def log(*words: object) -> None:
    """Logs go to stderr; the tournament page shows its last lines."""
    print("{{NAME}}:", *words, file=sys.stderr, flush=True)


def sow(board: list[int], pit: int) -> tuple[list[int], bool]:
    """Play our `pit` (1..n) on a copy of `board`: our pits, our store, their pits, their store (each row
    from its owner's left). Return the new board and whether we move again. Standard Kalah."""
    board = list(board)
    n = len(board) // 2 - 1
    i = pit - 1
    seeds, board[i] = board[i], 0
    while seeds:
        i = (i + 1) % len(board)
        if i != 2 * n + 1:  # skip the opponent's store
            board[i] += 1
            seeds -= 1
    opposite = 2 * n - i
    if i < n and board[i] == 1 and board[opposite]:  # capture
        board[n] += board[opposite] + 1
        board[i] = board[opposite] = 0
    return board, i == n


def score(board: list[int], extra_turn: bool) -> int:
    """What a board after our move is worth to us. Put your own ideas here."""
    n = len(board) // 2 - 1
    return board[n] - board[2 * n + 1] + (EXTRA_TURN_BONUS if extra_turn else 0)


def parse_board(literal: str) -> list[int]:
    """<n,south store,north store,south pits...,north pits...> to our board. We are always South."""
    numbers = [int(x) for x in literal.strip("<>").split(",")]
    n, south_store, north_store = numbers[0], numbers[1], numbers[2]
    return numbers[3 : 3 + n] + [south_store] + numbers[3 + n : 3 + 2 * n] + [north_store]


def main(host: str, port: int) -> None:
    conn = socket.create_connection((host, port))
    stream = conn.makefile("rw", encoding="utf-8", newline="")
    next_id = 1  # our command ids: odd, the server's are even

    def send(text: str, ref: str | None = None) -> None:
        nonlocal next_id
        stream.write(f"{next_id}{'@' + ref if ref else ''} {text}\r\n")
        stream.flush()
        next_id += 2

    for line in stream:
        match = COMMAND.fullmatch(line.rstrip("\r\n"))
        if not match:
            continue
        ident, _ref, name, args = match.groups()
        if name == "kgp":  # the greeting: kgp <major> <minor> <patch>
            if not (args or "").startswith("1"):
                break
            send('set info:name "{{NAME}}"')
            token = os.environ.get("ARENA_TOKEN")  # a password: never in the command line, which ps shows
            if token:
                quoted = token.replace("\\", "\\\\").replace('"', '\\"')
                send(f'set auth:token "{quoted}"')
            send("mode freeplay")
        elif name == "state":  # state <board>: our turn; answer with moves, then yield
            board = parse_board((args or "").split()[0])
            n = len(board) // 2 - 1
            legal = [pit for pit in range(1, n + 1) if board[pit - 1]]
            if not legal:
                continue
            send(f"move {legal[0]}", ident)  # a legal move at once: never lose on time
            best = max(legal, key=lambda pit: score(*sow(board, pit)))  # ties keep the lowest pit
            send(f"move {best}", ident)  # a better one replaces it
            send("yield", ident)
        elif name == "ping":
            send("pong", ident)
        elif name == "goodbye":
            break
        # stop, ok, error, set and anything else: nothing to do here
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "localhost", int(sys.argv[2]) if len(sys.argv) > 2 else 2671)
