// {{NAME}}: a greedy Kalah bot, made by `arena new`. It is yours: change anything.
//
// How it plays: it tries each legal pit on a copy of the board (sow, the Kalah rules) and picks the move
// with the best score: our store minus theirs after the move, plus a bonus for an extra turn. Your own
// strategy goes into score() (what a board is worth to us) and choose() (which moves to try, how deep).
// It speaks protocol v1 (protocol.md): read main() for what each line of the referee means.
//
// Build: javac -d out Bot.java (arena does it for you: the build line of bot.toml). Run: java -cp out Bot
// Try it:  arena check {{NAME}}    arena play {{NAME}} random --show    arena play {{NAME}} human
// By hand: printf 'NEWGAME 3 2 south kalah,pits=3,seeds=2\nMOVE 1000 2 2 2 0 2 2 2 0\nQUIT\n' |
//          java -cp out Bot
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Arrays;

public class Bot {
    static final long EXTRA_TURN_BONUS = 2;    // what moving again is worth, in seeds: tune it
    static final double SHARE_OF_TIME = 0.25;  // think for at most this share of a move's time

    // Play our pit (1..n) on board b in place; return true if we move again. The board is as MOVE shows
    // it, from our side: our pits b[0..n-1], our store b[n], their pits b[n+1..2n] (numbered from their
    // left), their store b[2n+1]. Standard Kalah rules; the NEWGAME spec may name other options
    // (protocol.md, "The rules in brief"): a better bot would follow them.
    static boolean sow(long[] b, int pit) {
        int n = b.length / 2 - 1, i = pit - 1;
        long seeds = b[i], ours = 0, theirs = 0;
        b[i] = 0;            // lift all the seeds of our pit
        while (seeds > 0) {  // and drop them one by one, counter-clockwise
            i = (i + 1) % b.length;
            if (i != 2 * n + 1) {  // skip the opponent's store (our emptied pit is not skipped)
                b[i]++;
                seeds--;
            }
        }
        if (i < n && b[i] == 1 && b[2 * n - i] > 0) {  // last seed in an empty pit of ours, facing seeds:
            b[n] += b[2 * n - i] + 1;                    // capture both (our pit b[i] faces b[2n-i])
            b[i] = b[2 * n - i] = 0;
        }
        for (int k = 0; k < n; k++) {
            ours += b[k];
            theirs += b[n + 1 + k];
        }
        if (ours == 0 || theirs == 0) {  // a row is empty: the game is over, and each side banks its row
            b[n] += ours;
            b[2 * n + 1] += theirs;
            for (int k = 0; k < n; k++) b[k] = b[n + 1 + k] = 0;
        }
        return i == n;  // the last seed in our store: we move again
    }

    // What a board after our move is worth to us. Put your own ideas here.
    static long score(long[] b, boolean extraTurn) {
        int n = b.length / 2 - 1;
        return b[n] - b[2 * n + 1] + (extraTurn ? EXTRA_TURN_BONUS : 0);
    }

    // The legal pit with the best score, looking one move ahead. `deadline` is on System.nanoTime().
    static int choose(long[] board, long deadline) {
        int n = board.length / 2 - 1, bestPit = 0;
        long bestScore = 0;
        for (int pit = 1; pit <= n; pit++) {
            if (board[pit - 1] == 0) continue;  // an empty pit is not a legal move
            if (bestPit > 0 && System.nanoTime() > deadline) {
                // Out of time: answer with the best move so far. A deeper search (minimax, alpha-beta)
                // checks the clock like this inside its loop, and answers with the best move of the last
                // depth it finished. This bot looks one move ahead only, so it never gets here in practice.
                break;
            }
            long[] after = Arrays.copyOf(board, board.length);
            boolean extraTurn = sow(after, pit);
            long s = score(after, extraTurn);
            if (bestPit == 0 || s > bestScore) {  // ties keep the lowest pit
                bestPit = pit;
                bestScore = s;
            }
        }
        return bestPit;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        boolean canSwap = false;
        String line;
        while ((line = in.readLine()) != null) {  // the referee's lines, one at a time
            String[] words = line.trim().split("\\s+");
            if (words[0].equals("NEWGAME") && words.length >= 5) {
                // NEWGAME <pits> <seeds> <south|north> <rules spec>: a new game starts; forget the old one.
                // The pie rule ("pie", or the "mankalah" preset): the second player (north) may answer the
                // first player's opening turn with SWAP, in its first MOVE of the game only.
                String options = "," + words[4] + ",";
                boolean pie = options.contains(",pie,") || options.contains(",mankalah,");
                canSwap = pie && words[3].equals("north");
                System.err.println("{{NAME}}: new game as " + words[3] + " under " + words[4]);  // logs
            } else if (words[0].equals("MOVE")) {
                // MOVE <ms> <our pits> <our store> <their pits> <their store>. The referee's clock started
                // when it sent this line: reading, thinking and writing all count.
                long ms = Long.parseLong(words[1]);
                long deadline = System.nanoTime() + (long) (ms * 1_000_000 * SHARE_OF_TIME);
                long[] board = new long[words.length - 2];
                for (int k = 0; k < board.length; k++) board[k] = Long.parseLong(words[k + 2]);
                int n = board.length / 2 - 1;
                if (canSwap && board[2 * n + 1] > board[n]) {  // the first player's store is ahead: take it
                    System.out.println("SWAP");
                } else {
                    System.out.println(choose(board, deadline));
                }
                canSwap = false;     // SWAP only ever in our first MOVE
                System.out.flush();  // exactly one line per MOVE, flushed at once
            } else if (words[0].equals("END")) {
                // END <win|loss|draw> <our store> <their store> <reason>: nothing to answer
                System.err.println("{{NAME}}: game over: " + line.trim().substring(3).trim());
            } else if (words[0].equals("QUIT")) {
                break;  // exit now
            }
            // any other line: ignored, as the protocol asks
        }
    }
}
