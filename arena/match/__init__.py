"""One match: a bot's process and its confinement, the wire protocols, finding bots, the referee and the
game record."""
