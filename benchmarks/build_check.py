"""What a compiled bot's build costs a run: the build itself, and the check that finds it built already.

Run from the project root: ``python3 benchmarks/build_check.py`` (a few seconds; needs cc).

Every `arena play`, `arena run` and `arena check` asks `ensure_built` of each bot with a `build` in its
bot.toml; when nothing changed it only reads the stamp and hashes the folder. That check is quoted against
`load_bot` of the same folder, measured in the same run, which every run pays for every bot anyway (it
hashes the folder for the bot's version): "check 1.3 x load" reads: finding the bot built costs 1.3 loads.
The first build (the C starter of `arena new`, confined as `arena run` confines it) is quoted in seconds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.match.bots import load_bot  # noqa: E402
from arena.match.build import ensure_built  # noqa: E402
from arena.sandbox import Confinement, capabilities  # noqa: E402
from arena.student.new import new_bot  # noqa: E402


def per_call(fn: Callable[[], object], calls: int, repeats: int = 5) -> float:
    """Median over `repeats` batches of the seconds one call takes."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - started) / calls)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per timed batch")
    args = parser.parse_args()
    if shutil.which("cc") is None:
        sys.exit("needs a C compiler (cc)")
    conf, caps = capabilities(Confinement(), want_sandbox=True)
    on = {True: "on", False: "off"}
    print(f"confinement: sandbox {on[caps.sandbox]}, cgroups {on[caps.cgroups]}")
    with tempfile.TemporaryDirectory() as tmp:
        for lang in ("c", "java") if shutil.which("javac") else ("c",):
            folder = new_bot(f"bench{lang}", lang, Path(tmp))
            started = time.perf_counter()
            bot = ensure_built(load_bot(folder), conf)
            first = time.perf_counter() - started
            load = per_call(lambda folder=folder: load_bot(folder), args.calls)
            check = per_call(lambda bot=bot: ensure_built(bot, conf), args.calls)
            files = sum(1 for f in folder.rglob("*") if f.is_file())
            print(
                f"{lang:5} ({files} files): first build {first:.2f} s; nothing to build: check "
                f"{check * 1e3:.3f} ms, load_bot {load * 1e3:.3f} ms: check {check / load:.1f} x load"
            )


if __name__ == "__main__":
    main()
