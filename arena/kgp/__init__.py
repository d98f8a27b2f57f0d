"""KWARC's Kalah Game Protocol in one place: the grammar, the wire (KGP agents as bots in the referee) and
the relay in an agent's sandbox; `arena.kgp.server` holds the class server's port, lobby, desk and bridge."""
