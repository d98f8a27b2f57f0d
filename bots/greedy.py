"""Greedy Kalah bot: takes the move that gains the most for its own store this turn. A template to copy.

Strategy: every legal pit is tried on a copy of the board with the rules written out below (sowing, extra
turn, capture, end of game), for Kalah and for Relay Kalah (`relay`: relay sowing, captures of 2 or 3 in
the opponent's row). A move is worth what it changes in (our store - their store). A move that earns an
extra turn is also worth the best move that follows it, so a chain of extra turns counts in full; that is
how the bot prefers extra turns. Ties go to the move with an extra turn, then to the lowest pit, so the bot
is deterministic and tournaments with it are repeatable.

Pie rule: when the rules allow SWAP (our first MOVE as north in a game with `pie`), the bot swaps if the first
player's store is ahead of ours.

It speaks protocol v1 (see protocol.md). Standard library only.
"""

import sys


class Rules:
    """The options of a rules spec such as 'kalah,pits=4,seeds=3,pie,empty-capture' that change our play."""

    def __init__(self, spec: str = "kalah") -> None:
        name, *options = spec.split(",")
        if name == "mankalah":  # a preset: Kalah(7,7) with the pie rule and no extra turn on the first move
            name, options = "kalah", ["pie", "no-first-extra"]
        self.relay = name == "relay"  # Relay Kalah: see sow_relay
        self.pie = "pie" in options
        self.empty_capture = "empty-capture" in options  # a last seed in an own empty pit is always banked
        self.mover_empty = "end=mover-empty" in options  # the game ends only when the player to move is empty
        self.no_first_extra = "no-first-extra" in options  # the game's first move never earns an extra turn
        self.chain = "chain" in options  # relay: captures go on back along their row while pits hold 2 or 3


def sow(board: list[int], pit: int, rules: Rules, first_move: bool = False) -> tuple[list[int], bool, bool]:
    """Play `pit` (1..n) for us on a copy of `board`; returns (new board, extra turn?, game over?).

    The board is the MOVE view: our pits 0..n-1, our store n, their pits n+1..2n, their store 2n+1.
    `first_move`: this is the game's very first move (it earns no extra turn under no-first-extra).
    """
    if rules.relay:
        return sow_relay(board, pit, rules)
    board = list(board)
    n = len(board) // 2 - 1
    our_store, their_store = n, 2 * n + 1
    i = pit - 1
    seeds, board[i] = board[i], 0
    while seeds:  # one seed into each following hole, round and round
        i = (i + 1) % len(board)
        if i != their_store:  # the opponent's store is skipped; our emptied pit is not
            board[i] += 1
            seeds -= 1
    extra_turn = i == our_store and not (rules.no_first_extra and first_move)
    if i < n and board[i] == 1:  # the last seed fell into a pit of ours that was empty
        opposite = 2 * n - i  # our pit i+1 faces their pit n-i
        if board[opposite] or rules.empty_capture:
            board[our_store] += board[opposite] + 1
            board[opposite] = board[i] = 0
    # End of game: by default when either row is empty; with end=mover-empty when the next mover's row is.
    ours_empty, theirs_empty = not any(board[:n]), not any(board[n + 1 : 2 * n + 1])
    if rules.mover_empty:
        over = ours_empty if extra_turn else theirs_empty
    else:
        over = ours_empty or theirs_empty
    if over:  # each side banks the seeds left in its own row
        board[our_store] += sum(board[:n])
        board[their_store] += sum(board[n + 1 : 2 * n + 1])
        board[:n] = board[n + 1 : 2 * n + 1] = [0] * n
    return board, extra_turn, over


def sow_relay(board: list[int], pit: int, rules: Rules) -> tuple[list[int], bool, bool]:
    """Relay Kalah (source 003), as `sow`. Sowing is the same, but when the last seed lands in a pit of ours
    that was not empty, and this sowing put seeds into their row, we lift that pit and sow on (a relay).
    Then a last seed that leaves 2 or 3 seeds in a pit of theirs captures them, and the pit sown just
    before it too if it holds 2 or 3 (with `chain`, on back along their row). No extra turns. The game ends
    when a store holds more than half the seeds, or when they, next to move, have no seeds left.
    """
    board = list(board)
    n = len(board) // 2 - 1
    our_store, their_store = n, 2 * n + 1
    i = pit - 1
    # A series of relays always ends: to reach their row, a sowing passes our store and leaves a seed there.
    while True:
        seeds, board[i] = board[i], 0
        reached_theirs = False
        while seeds:
            i = (i + 1) % len(board)
            if i != their_store:
                board[i] += 1
                seeds -= 1
                reached_theirs = reached_theirs or n < i < their_store
        if not (i < n and board[i] > 1 and reached_theirs):
            break  # no relay: the sowing is over
    if n < i < their_store and board[i] in (2, 3):  # capture, going back along their row
        j = i
        while True:
            board[our_store] += board[j]
            board[j] = 0
            j -= 1
            if j == n or board[j] not in (2, 3) or (j < i - 1 and not rules.chain):
                break
    if 2 * max(board[our_store], board[their_store]) > sum(board):
        return board, False, True  # more than half the seeds: won
    if not any(board[n + 1 : 2 * n + 1]):  # they cannot move: we bank the seeds left in our row
        board[our_store] += sum(board[:n])
        board[:n] = [0] * n
        return board, False, True
    return board, False, False


# Chains of extra turns branch, and a freak position on a big board has very many; this many tried moves per
# MOVE keeps the bot fast (beyond it, an extra turn counts only what its own move gains).
MAX_TRIES = 20_000
tries_left = MAX_TRIES


def best_move(board: list[int], rules: Rules, first_move: bool = False, chain: int = 0) -> tuple[int, int]:
    """(gain, pit) of the best move for us: gain is the change in our store minus theirs over this turn."""
    global tries_left
    n = len(board) // 2 - 1
    before = board[n] - board[2 * n + 1]
    best_key, best_pit = None, 0
    for pit in range(1, n + 1):
        if board[pit - 1] == 0:
            continue
        after, extra_turn, over = sow(board, pit, rules, first_move)
        tries_left -= 1
        gain = after[n] - after[2 * n + 1] - before
        if extra_turn and not over and tries_left > 0 and chain < 100:
            # we move again: this move is also worth the best move that follows it
            gain += best_move(after, rules, False, chain + 1)[0]
        key = (gain, extra_turn)  # more gain first, then an extra turn; equal keys keep the lowest pit
        if best_key is None or key > best_key:
            best_key, best_pit = key, pit
    return best_key[0], best_pit


def main() -> None:
    global tries_left
    rules, can_swap, first_move = Rules(), False, False
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "NEWGAME" and len(words) >= 5:  # NEWGAME <pits> <seeds> <south|north> <rules>
            rules = Rules(words[4])
            can_swap = rules.pie and words[3] == "north"  # only the second player's first MOVE may swap
            first_move = words[3] == "south"  # south makes the game's first move ...
        elif words[0] == "MOVE":  # MOVE <ms> <our pits> <our store> <their pits> <their store>
            board = [int(word) for word in words[2:]]
            n = len(board) // 2 - 1
            # ... unless the game began at an opening, a few plies in. The start is the one position with
            # empty stores and the same number of seeds in every pit.
            pits = board[:n] + board[n + 1 : 2 * n + 1]
            first_move = first_move and board[n] == board[2 * n + 1] == 0 and len(set(pits)) == 1
            if can_swap and board[2 * n + 1] > board[n]:  # the first player's store is ahead: take it
                reply = "SWAP"
            else:
                tries_left = MAX_TRIES
                reply = str(best_move(board, rules, first_move)[1])
            can_swap = first_move = False
            print(reply, flush=True)
        elif words[0] == "QUIT":
            break
        # END and unknown lines need nothing


if __name__ == "__main__":
    main()
