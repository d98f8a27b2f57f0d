// {{NAME}}: a greedy Kalah bot, made by `arena new`. It is yours: change anything.
//
// How it plays: it tries each legal pit on a copy of the board (sow, the Kalah rules) and picks the move
// with the best score: our store minus theirs after the move, plus a bonus for an extra turn. Your own
// strategy goes into score() (what a board is worth to us) and choose() (which moves to try, how deep).
// It speaks protocol v1 (protocol.md): read main() for what each line of the referee means.
//
// Build: c++ -O2 -o bot bot.cpp (arena does it for you: the build line of bot.toml).
// Try it:  arena check {{NAME}}    arena play {{NAME}} random --show    arena play {{NAME}} human
// By hand: printf 'NEWGAME 3 2 south kalah,pits=3,seeds=2\nMOVE 1000 2 2 2 0 2 2 2 0\nQUIT\n' | ./bot
#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using Board = std::vector<long>;
using Clock = std::chrono::steady_clock;  // a clock that never jumps

const long EXTRA_TURN_BONUS = 2;    // what moving again is worth, in seeds: tune it
const double SHARE_OF_TIME = 0.25;  // think for at most this share of a move's time; the rest is a margin

// Play our pit (1..n) on board b in place; return true if we move again. The board is as MOVE shows it,
// from our side: our pits b[0..n-1], our store b[n], their pits b[n+1..2n] (numbered from their left),
// their store b[2n+1]. Standard Kalah rules; the NEWGAME spec may name other options (protocol.md, "The
// rules in brief"): a better bot would follow them.
bool sow(Board& b, int pit) {
    int n = b.size() / 2 - 1, i = pit - 1;
    long seeds = b[i], ours = 0, theirs = 0;
    b[i] = 0;             // lift all the seeds of our pit
    while (seeds > 0) {   // and drop them one by one, counter-clockwise
        i = (i + 1) % b.size();
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
long score(const Board& b, bool extra_turn) {
    int n = b.size() / 2 - 1;
    return b[n] - b[2 * n + 1] + (extra_turn ? EXTRA_TURN_BONUS : 0);
}

// The legal pit with the best score, looking one move ahead.
int choose(const Board& board, Clock::time_point deadline) {
    int n = board.size() / 2 - 1, best_pit = 0;
    long best_score = 0;
    for (int pit = 1; pit <= n; pit++) {
        if (board[pit - 1] == 0) continue;  // an empty pit is not a legal move
        if (best_pit && Clock::now() > deadline) {
            // Out of time: answer with the best move so far. A deeper search (minimax, alpha-beta) checks
            // the clock like this inside its loop, and answers with the best move of the last depth it
            // finished. This bot looks one move ahead only, so it never gets here in practice.
            break;
        }
        Board after = board;
        bool extra_turn = sow(after, pit);
        long s = score(after, extra_turn);
        if (!best_pit || s > best_score) {  // ties keep the lowest pit
            best_pit = pit;
            best_score = s;
        }
    }
    return best_pit;
}

int main() {
    std::string line;
    bool can_swap = false;
    while (std::getline(std::cin, line)) {  // the referee's lines, one at a time
        std::istringstream words(line);
        std::string command;
        words >> command;
        if (command == "NEWGAME") {
            // NEWGAME <pits> <seeds> <south|north> <rules spec>: a new game starts; forget the old one.
            std::string pits, seeds, side, spec;
            words >> pits >> seeds >> side >> spec;
            // The pie rule ("pie", or the "mankalah" preset): the second player (north) may answer the
            // first player's opening turn with SWAP, in its first MOVE of the game only.
            std::string options = "," + spec + ",";
            bool pie = options.find(",pie,") != options.npos || options.find(",mankalah,") != options.npos;
            can_swap = pie && side == "north";
            std::cerr << "{{NAME}}: new game as " << side << " under " << spec << std::endl;  // logs: stderr
        } else if (command == "MOVE") {
            // MOVE <ms> <our pits> <our store> <their pits> <their store>. The referee's clock started
            // when it sent this line: reading, thinking and writing all count.
            long ms = 0, value;
            words >> ms;
            auto deadline = Clock::now() + std::chrono::microseconds(long(ms * 1000 * SHARE_OF_TIME));
            Board board;
            while (words >> value) board.push_back(value);
            int n = board.size() / 2 - 1;
            if (can_swap && board[2 * n + 1] > board[n])  // the first player's store is ahead: take it
                std::cout << "SWAP" << std::endl;
            else
                std::cout << choose(board, deadline) << std::endl;  // endl ends the line and flushes
            can_swap = false;  // SWAP only ever in our first MOVE
        } else if (command == "END") {
            // END <win|loss|draw> <our store> <their store> <reason>: nothing to answer
            std::cerr << "{{NAME}}: game over:" << line.substr(3) << std::endl;
        } else if (command == "QUIT") {
            break;  // exit now
        }
        // any other line: ignored, as the protocol asks
    }
    return 0;
}
