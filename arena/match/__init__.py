"""One match: a bot's process, the wire protocols, finding bots, the referee and the game record (the
sandbox that confines a bot is arena/sandbox)."""
