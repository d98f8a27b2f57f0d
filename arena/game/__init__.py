"""The game: the rules engine, the exact solver and opening books. Knows nothing of processes."""
