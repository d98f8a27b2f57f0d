/* {{NAME}}: a greedy Kalah bot, made by `arena new`. It is yours: change anything.
 *
 * How it plays: it tries each legal pit on a copy of the board (sow, the Kalah rules) and picks the move
 * with the best score: our store minus theirs after the move, plus a bonus for an extra turn. Your own
 * strategy goes into score() (what a board is worth to us) and choose() (which moves to try, how deep).
 * It speaks protocol v1 (protocol.md): read main() for what each line of the referee means.
 *
 * Build: cc -O2 -o bot bot.c (arena does it for you: the build line of bot.toml).
 * Try it:  arena check {{NAME}}    arena play {{NAME}} random --show    arena play {{NAME}} human
 * By hand: printf 'NEWGAME 3 2 south kalah,pits=3,seeds=2\nMOVE 1000 2 2 2 0 2 2 2 0\nQUIT\n' | ./bot
 */
#define _POSIX_C_SOURCE 200809L /* for clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BOARD 4096        /* 2 * pits + 2 numbers: room for 2047 pits a side */
#define EXTRA_TURN_BONUS 2    /* what moving again is worth, in seeds: tune it */
#define SHARE_OF_TIME 0.25    /* think for at most this share of a move's time; the rest is a margin */

static double now(void) { /* seconds on a clock that never jumps */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Play our pit (1..n) on board b in place; return 1 if we move again. The board is as MOVE shows it, from
 * our side: our pits b[0..n-1], our store b[n], their pits b[n+1..2n] (numbered from their left), their
 * store b[2n+1]. Standard Kalah rules; the NEWGAME spec may name other options (protocol.md, "The rules in
 * brief"): a better bot would follow them. */
static int sow(long *b, int n, int pit) {
    int i = pit - 1, k;
    long seeds = b[i], ours = 0, theirs = 0;
    b[i] = 0;               /* lift all the seeds of our pit */
    while (seeds > 0) {     /* and drop them one by one, counter-clockwise */
        i = (i + 1) % (2 * n + 2);
        if (i != 2 * n + 1) { /* skip the opponent's store (our emptied pit is not skipped) */
            b[i]++;
            seeds--;
        }
    }
    if (i < n && b[i] == 1 && b[2 * n - i] > 0) { /* last seed in an empty pit of ours, facing seeds: */
        b[n] += b[2 * n - i] + 1;                   /* capture both (our pit b[i] faces b[2n-i]) */
        b[i] = b[2 * n - i] = 0;
    }
    for (k = 0; k < n; k++) {
        ours += b[k];
        theirs += b[n + 1 + k];
    }
    if (ours == 0 || theirs == 0) { /* a row is empty: the game is over, and each side banks its row */
        b[n] += ours;
        b[2 * n + 1] += theirs;
        for (k = 0; k < n; k++) b[k] = b[n + 1 + k] = 0;
    }
    return i == n; /* the last seed in our store: we move again */
}

/* What a board after our move is worth to us. Put your own ideas here. */
static long score(const long *b, int n, int extra_turn) {
    return b[n] - b[2 * n + 1] + (extra_turn ? EXTRA_TURN_BONUS : 0);
}

/* The legal pit with the best score, looking one move ahead. */
static int choose(const long *board, int n, double deadline) {
    static long after[MAX_BOARD];
    int best_pit = 0;
    long best_score = 0;
    for (int pit = 1; pit <= n; pit++) {
        if (board[pit - 1] == 0) continue; /* an empty pit is not a legal move */
        if (best_pit && now() > deadline) {
            /* Out of time: answer with the best move so far. A deeper search (minimax, alpha-beta) checks
             * the clock like this inside its loop, and answers with the best move of the last depth it
             * finished. This bot looks one move ahead only, so it never gets here in practice. */
            break;
        }
        memcpy(after, board, sizeof(long) * (2 * n + 2));
        int extra_turn = sow(after, n, pit);
        long s = score(after, n, extra_turn);
        if (!best_pit || s > best_score) { /* ties keep the lowest pit */
            best_pit = pit;
            best_score = s;
        }
    }
    return best_pit;
}

/* Whether a rules spec such as "kalah,pits=4,pie" names an option. */
static int has_option(const char *spec, const char *option) {
    size_t len = strlen(option);
    for (const char *p = strstr(spec, option); p; p = strstr(p + 1, option))
        if ((p == spec || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return 1;
    return 0;
}

int main(void) {
    static char line[1 << 16]; /* the referee's lines: a MOVE on a big board takes a few kilobytes */
    static long board[MAX_BOARD];
    char side[16], spec[1024];
    int can_swap = 0;
    while (fgets(line, sizeof line, stdin)) { /* the referee's lines, one at a time */
        if (sscanf(line, "NEWGAME %*d %*d %15s %1023s", side, spec) == 2) {
            /* NEWGAME <pits> <seeds> <south|north> <rules spec>: a new game starts; forget the old one.
             * The pie rule ("pie", or the "mankalah" preset): the second player (north) may answer the
             * first player's opening turn with SWAP, in its first MOVE of the game only. */
            int pie = has_option(spec, "pie") || has_option(spec, "mankalah");
            can_swap = pie && strcmp(side, "north") == 0;
            fprintf(stderr, "{{NAME}}: new game as %s under %s\n", side, spec); /* logs: stderr only */
        } else if (strncmp(line, "MOVE ", 5) == 0) {
            /* MOVE <ms> <our pits> <our store> <their pits> <their store>. The referee's clock started
             * when it sent this line: reading, thinking and writing all count. */
            char *p = line + 5, *end;
            double deadline = now() + strtol(p, &end, 10) / 1000.0 * SHARE_OF_TIME;
            int k = 0;
            for (p = end; k < MAX_BOARD; p = end) {
                long value = strtol(p, &end, 10);
                if (end == p) break;
                board[k++] = value;
            }
            int n = k / 2 - 1;
            if (can_swap && board[2 * n + 1] > board[n]) /* the first player's store is ahead: take it */
                printf("SWAP\n");
            else
                printf("%d\n", choose(board, n, deadline));
            can_swap = 0;   /* SWAP only ever in our first MOVE */
            fflush(stdout); /* exactly one line per MOVE, flushed at once, or it waits in a buffer */
        } else if (strncmp(line, "END ", 4) == 0) {
            /* END <win|loss|draw> <our store> <their store> <reason>: nothing to answer */
            fprintf(stderr, "{{NAME}}: game over: %s", line + 4);
        } else if (strncmp(line, "QUIT", 4) == 0) {
            break; /* exit now */
        }
        /* any other line: ignored, as the protocol asks */
    }
    return 0;
}
