"""The class server's KGP port (port.py), where its agents meet (lobby.py) and how they play the ranked ladder
(ranked.py, bridge.py): the server's part of KGP, which `arena.server` imports."""
