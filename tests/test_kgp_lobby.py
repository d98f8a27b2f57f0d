"""The KGP port's lobby (arena/server/kgp_lobby.py) in one process: a waiting connection is taken by another
student's, never by its own student's nor when its agent has gone, and waits until its taker is done."""

from __future__ import annotations

import threading
import time

from arena.kgp.server.lobby import Lobby, Waiting


def waiting(slug: str, gone: bool = False) -> Waiting:
    return Waiting(slug, seat=object(), agent=slug, gone=lambda: gone)


def test_a_waiting_agent_is_taken_by_another_students_and_waits_for_the_taker_to_finish() -> None:
    lobby, ann = Lobby(), waiting("ann")
    met: list[bool] = []
    thread = threading.Thread(target=lambda: met.append(lobby.wait(ann, seconds=10)))
    thread.start()
    while lobby.take("zed") is None and not met:  # ann may not have come in yet
        time.sleep(0.01)
    assert ann.taken
    time.sleep(0.1)
    assert thread.is_alive(), "ann waits while the taker plays her games"
    ann.done.set()
    thread.join(5)
    assert met == [True]
    assert lobby.take("zed") is None, "a taken connection has left the lobby"


def test_nobody_takes_their_own_students_connection_nor_one_whose_agent_has_gone() -> None:
    lobby = Lobby()
    began = time.monotonic()
    assert lobby.wait(waiting("ann"), seconds=0.3) is False, "nobody came"
    assert 0.3 <= time.monotonic() - began < 2.0
    began = time.monotonic()
    assert lobby.wait(waiting("bob", gone=True), seconds=5) is False
    assert time.monotonic() - began < 1.0, "an agent that has gone leaves the lobby at once"
    gone, mine = waiting("cat", gone=True), waiting("ann")
    threads = [threading.Thread(target=lobby.wait, args=(w, 0.5)) for w in (gone, mine)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    assert lobby.take("ann") is None, "ann's own, and cat's agent has gone"
    for thread in threads:
        thread.join(5)
    assert not gone.taken and not mine.taken
    assert lobby.take("zed") is None, "both left when their time was up"
