// {{NAME}}: a greedy Kalah bot, made by `arena new`. It is yours: change anything.
//
// How it plays: it tries each legal pit on a copy of the board (sow, the Kalah rules) and picks the move
// with the best score: our store minus theirs after the move, plus a bonus for an extra turn. Your own
// strategy goes into score() (what a board is worth to us) and choose() (which moves to try, how deep).
// It speaks protocol v1 (protocol.md): read the end of this file for what each line of the referee means.
//
// Try it:  arena check {{NAME}}    arena play {{NAME}} random --show    arena play {{NAME}} human
// By hand: printf 'NEWGAME 3 2 south kalah,pits=3,seeds=2\nMOVE 1000 2 2 2 0 2 2 2 0\nQUIT\n' | node bot.js
"use strict";
const readline = require("readline");

const EXTRA_TURN_BONUS = 2; // what moving again is worth, in seeds: tune it
const SHARE_OF_TIME = 0.25; // think for at most this share of a move's time; the rest is a margin

// Play our pit (1..n) on a copy of board; return [the new board, whether we move again]. The board is as
// MOVE shows it, from our side: our pits b[0..n-1], our store b[n], their pits b[n+1..2n] (numbered from
// their left), their store b[2n+1]. Standard Kalah rules; the NEWGAME spec may name other options
// (protocol.md, "The rules in brief"): a better bot would follow them.
function sow(board, pit) {
  const b = board.slice();
  const n = b.length / 2 - 1;
  let i = pit - 1;
  let seeds = b[i];
  b[i] = 0; // lift all the seeds of our pit
  while (seeds > 0) { // and drop them one by one, counter-clockwise
    i = (i + 1) % b.length;
    if (i !== 2 * n + 1) { // skip the opponent's store (our emptied pit is not skipped)
      b[i]++;
      seeds--;
    }
  }
  if (i < n && b[i] === 1 && b[2 * n - i] > 0) { // last seed in an empty pit of ours, facing seeds:
    b[n] += b[2 * n - i] + 1; // capture both (our pit b[i] faces b[2n-i])
    b[i] = b[2 * n - i] = 0;
  }
  const sum = (row) => row.reduce((a, x) => a + x, 0);
  const ours = sum(b.slice(0, n)), theirs = sum(b.slice(n + 1, 2 * n + 1));
  if (ours === 0 || theirs === 0) { // a row is empty: the game is over, and each side banks its row
    b[n] += ours;
    b[2 * n + 1] += theirs;
    for (let k = 0; k < n; k++) b[k] = b[n + 1 + k] = 0;
  }
  return [b, i === n]; // the last seed in our store: we move again
}

// What a board after our move is worth to us. Put your own ideas here.
function score(b, extraTurn) {
  const n = b.length / 2 - 1;
  return b[n] - b[2 * n + 1] + (extraTurn ? EXTRA_TURN_BONUS : 0);
}

// The legal pit with the best score, looking one move ahead. `deadline` is on performance.now().
function choose(board, deadline) {
  const n = board.length / 2 - 1;
  let bestPit = 0, bestScore = 0;
  for (let pit = 1; pit <= n; pit++) {
    if (board[pit - 1] === 0) continue; // an empty pit is not a legal move
    if (bestPit && performance.now() > deadline) {
      // Out of time: answer with the best move so far. A deeper search (minimax, alpha-beta) checks the
      // clock like this inside its loop, and answers with the best move of the last depth it finished.
      // This bot looks one move ahead only, so it never gets here in practice.
      break;
    }
    const [after, extraTurn] = sow(board, pit);
    const s = score(after, extraTurn);
    if (!bestPit || s > bestScore) { // ties keep the lowest pit
      bestPit = pit;
      bestScore = s;
    }
  }
  return bestPit;
}

let canSwap = false;
readline.createInterface({ input: process.stdin }).on("line", (line) => { // the referee's lines, one by one
  const words = line.trim().split(/\s+/);
  if (words[0] === "NEWGAME" && words.length >= 5) {
    // NEWGAME <pits> <seeds> <south|north> <rules spec>: a new game starts; forget the old one.
    // The pie rule ("pie", or the "mankalah" preset): the second player (north) may answer the first
    // player's opening turn with SWAP, in its first MOVE of the game only.
    const options = words[4].split(",");
    canSwap = words[3] === "north" && (options.includes("pie") || options.includes("mankalah"));
    console.error(`{{NAME}}: new game as ${words[3]} under ${words[4]}`); // logs go to stderr only
  } else if (words[0] === "MOVE") {
    // MOVE <ms> <our pits> <our store> <their pits> <their store>. The referee's clock started when it
    // sent this line: reading, thinking and writing all count.
    const deadline = performance.now() + Number(words[1]) * SHARE_OF_TIME;
    const board = words.slice(2).map(Number);
    const n = board.length / 2 - 1;
    const swap = canSwap && board[2 * n + 1] > board[n]; // the first player's store is ahead: take it
    canSwap = false; // SWAP only ever in our first MOVE
    // Exactly one line per MOVE. On a pipe node writes it at once (on Linux), so there is no flush to do.
    process.stdout.write((swap ? "SWAP" : String(choose(board, deadline))) + "\n");
  } else if (words[0] === "END") {
    // END <win|loss|draw> <our store> <their store> <reason>: nothing to answer
    console.error(`{{NAME}}: game over: ${words.slice(1).join(" ")}`);
  } else if (words[0] === "QUIT") {
    process.exit(0); // exit now
  }
  // any other line: ignored, as the protocol asks
});
