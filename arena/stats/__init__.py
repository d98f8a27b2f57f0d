"""The statistics of a ranking: the posterior (each bot's Elo with its interval), TrueSkill ratings from the
store, when a ranking is settled, and the SPRT of a new version against the old."""
