"""{{NAME}}: a greedy Kalah bot, made by `arena new`. It is yours: change anything.

How it plays: it tries each legal pit on a copy of the board (`sow`, the Kalah rules) and picks the move
with the best `score`: our store minus theirs after the move, plus a bonus for an extra turn. Your own
strategy goes into `score` (what a board is worth to us) and `choose` (which moves to try, how deep).

It speaks protocol v1 (protocol.md) by itself, with the standard library only, so every line is here to
read. (A Python bot may instead leave the protocol to arena.botkit and search with arena's own rules
engine: protocol.md, "A Python bot on arena's rules engine".)

Try it:  arena check {{NAME}}    arena play {{NAME}} random --show    arena play {{NAME}} human
By hand: printf 'NEWGAME 3 2 south kalah,pits=3,seeds=2\nMOVE 1000 2 2 2 0 2 2 2 0\nQUIT\n' | python3 bot.py
"""

import sys
import time

EXTRA_TURN_BONUS = 2  # what moving again is worth, in seeds: tune it
SHARE_OF_TIME = 0.25  # think for at most this share of a move's time; the rest is a safety margin


def log(*words: object) -> None:
    """Logs go to stderr, never stdout (stdout is for answers); the tournament page shows its last lines."""
    print("{{NAME}}:", *words, file=sys.stderr, flush=True)


def sow(board: list[int], pit: int) -> tuple[list[int], bool]:
    """Play our `pit` (1..n) on a copy of `board`; return the new board and whether we move again.

    The board is as MOVE shows it, from our side: our pits board[0..n-1], our store board[n], their pits
    board[n+1..2n] (numbered from their left), their store board[2n+1]. Standard Kalah rules; the NEWGAME
    spec may name other options (protocol.md, "The rules in brief"): a better bot would follow them.
    """
    board = list(board)
    n = len(board) // 2 - 1
    i = pit - 1
    seeds, board[i] = board[i], 0  # lift all the seeds of our pit
    while seeds:  # and drop them one by one, counter-clockwise
        i = (i + 1) % len(board)
        if i != 2 * n + 1:  # skip the opponent's store (our emptied pit is not skipped)
            board[i] += 1
            seeds -= 1
    opposite = 2 * n - i  # our pit board[i] faces their pit board[2n-i]
    if i < n and board[i] == 1 and board[opposite]:  # last seed in an empty pit of ours, facing seeds:
        board[n] += board[opposite] + 1  # capture both
        board[i] = board[opposite] = 0
    if not any(board[:n]) or not any(board[n + 1 : 2 * n + 1]):  # a row is empty: the game is over,
        board[n] += sum(board[:n])  # and each side banks the seeds left in its own row
        board[2 * n + 1] += sum(board[n + 1 : 2 * n + 1])
        board[:n] = board[n + 1 : 2 * n + 1] = [0] * n
    return board, i == n  # the last seed in our store: we move again


def score(board: list[int], extra_turn: bool) -> int:
    """What a board after our move is worth to us. Put your own ideas here."""
    n = len(board) // 2 - 1
    return board[n] - board[2 * n + 1] + (EXTRA_TURN_BONUS if extra_turn else 0)


def choose(board: list[int], deadline: float) -> int:
    """The legal pit with the best score, looking one move ahead."""
    n = len(board) // 2 - 1
    best_pit, best_score = 0, 0
    for pit in range(1, n + 1):
        if board[pit - 1] == 0:
            continue  # an empty pit is not a legal move
        if best_pit and time.monotonic() > deadline:
            # Out of time: answer with the best move so far. A deeper search (minimax, alpha-beta) checks
            # the clock like this inside its loop, and answers with the best move of the last depth it
            # finished. This bot looks one move ahead only, so it never gets here in practice.
            break
        after, extra_turn = sow(board, pit)
        if not best_pit or score(after, extra_turn) > best_score:  # ties keep the lowest pit
            best_pit, best_score = pit, score(after, extra_turn)
            # With `anytime = true` in bot.toml, the referee plays the last legal answer written within
            # the MOVE's time, so a deepening search may print each depth's best as it finds it:
            # print(best_pit, flush=True)   (main prints the last once more: one more answer, no harm)
    return best_pit


def main() -> None:
    can_swap = False
    for line in sys.stdin:  # the referee's lines, one at a time
        words = line.split()  # also drops the line end, \n or \r\n
        if not words:
            continue
        if words[0] == "NEWGAME":  # NEWGAME <pits> <seeds> <south|north> <rules spec>: forget the old game
            side, options = words[3], words[4].split(",")
            # The pie rule ("pie", or the "mankalah" preset): the second player (north) may answer the
            # first player's opening turn with SWAP, in its first MOVE of the game only.
            can_swap = side == "north" and ("pie" in options or "mankalah" in options)
            log("new game as", side, "under", words[4])
        elif words[0] == "MOVE":  # MOVE <ms> <our pits> <our store> <their pits> <their store>
            # The referee's clock started when it sent this line: reading, thinking and writing all count.
            deadline = time.monotonic() + int(words[1]) / 1000 * SHARE_OF_TIME
            board = [int(word) for word in words[2:]]
            n = len(board) // 2 - 1
            if can_swap and board[2 * n + 1] > board[n]:  # the first player's store is ahead: take its side
                answer = "SWAP"
            else:
                answer = str(choose(board, deadline))
            can_swap = False  # SWAP only ever in our first MOVE
            print(answer, flush=True)  # exactly one line per MOVE, flushed at once
        elif words[0] == "END":  # END <win|loss|draw> <our store> <their store> <reason>: nothing to answer
            log("game over:", " ".join(words[1:]))
        elif words[0] == "QUIT":  # exit now
            break
        # any other line: ignored, as the protocol asks


if __name__ == "__main__":
    main()
