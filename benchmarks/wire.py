"""What reading a lab peer's message as plain data first costs (arena/lab/wire.py), against Dask's own
decoding of the same message, in one run on this machine.

    python benchmarks/wire.py [--n 20000] [--repeats 5]

Messages a guarded scheduler, worker or coordinator reads from a peer it does not trust with pickles, as
Dask writes them: a worker's batched stream of task-finished reports, its heartbeat, a task's result and
a bot's shipment (get_data, Dask's msgpack serializer). For each, the microseconds a message of
`wire.check` and of `distributed.protocol.loads` (which every message pays anyway), and their ratio:
the medians of `--repeats` rounds, each timing `--n` messages of each kind in turn.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from distributed.protocol import dumps, loads, to_serialize

from arena.lab import wire


def messages() -> dict[str, list[bytes]]:
    finished = [
        {"op": "task-finished", "key": f"arena-games-t-{n}-r1-a-b-x4", "nbytes": 2048, "type": "str",
         "typename": "str", "metadata": {}, "thread": 140000000 + n, "startstops": (
             {"action": "compute", "start": 1.0 + n, "stop": 2.0 + n},), "stimulus_id": f"s-{n}"}
        for n in range(8)
    ]  # fmt: skip
    heartbeat = {"op": "heartbeat_worker", "address": "tls://10.0.0.5:40001", "now": 1.0,
                 "metrics": {"cpu": 12.5, "memory": 123456789, "time": 1.0, "task_counts": {"memory": 3},
                             "bandwidth": {"total": 1e8, "workers": {}, "types": {}}},
                 "executing": {}, "extensions": {}}  # fmt: skip
    record = {"rules": "kalah(6,6)", "south": "greedy", "north": "first", "moves": list(range(1, 7)) * 8,
              "move_ms": [1.5] * 48, "reason": "normal", "detail": "", "said": ""}  # fmt: skip
    result = json.dumps({"played": [[k, record] for k in range(4)], "seconds": 1.0})
    ship = ("greedy", "ab" * 16, "greedy.py", (("greedy.py", 0o644, b"x" * 4000),))
    plain = ["msgpack"]
    frames = {
        "task-finished batch": dumps(finished),
        "heartbeat": dumps(heartbeat),
        "result (get_data)": dumps({"status": "OK", "data": {"k": to_serialize(result)}}, serializers=plain),
        "shipment (get_data)": dumps({"status": "OK", "data": {"k": to_serialize(ship)}}, serializers=plain),
    }
    return {name: [bytes(f) for f in fs] for name, fs in frames.items()}


def per_message(call: Callable[[list[bytes]], object], frames: list[bytes], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call(frames)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'message':22} {'check µs':>9} {'loads µs':>9} {'check/loads':>12}")
    for name, frames in messages().items():
        wire.check(frames)  # plain, as an honest peer's are
        checks, decodes = [], []
        for _ in range(args.repeats):
            checks.append(per_message(wire.check, frames, args.n))
            decodes.append(per_message(loads, frames, args.n))
        c, d = statistics.median(checks), statistics.median(decodes)
        print(f"{name:22} {c:9.2f} {d:9.2f} {c / d:12.2f}")


if __name__ == "__main__":
    main()
