"""A semester of `arena serve` on 127.0.0.1: STUDENTS students each upload VERSIONS versions over the run
(some broken, some hostile), fast bots play the ladder without pause, and signed-in students load their
pages throughout (their own page, the ladder, a game), while the ladder's store holds GAMES games.

A semester's games take months to play; this machine plays a few a second. So the ladder's store is filled
with SYNTHETIC games before each half: random legal games of the rules engine (tests/classroom.py), between
retired versions of the students' bots, stored through the store's own API (`Store.add_game`) while the
server is stopped (the store has one writer). They are valid games, replayed by the game page like any
other, but no bot played them: the output says how many of each kind there are. Everything else is real:
the server, its gunicorn and workers, the uploads, checks, the ladder's games, the pages.

The run, in two halves of MINUTES/2 each:
  start: the store filled to half of GAMES; the server started; students upload and browse; at a random
         moment the server is killed (kill -9 of arena serve), started again, and every game and version
         stored before the kill is looked for;
  end:   the server stopped, the store filled up to GAMES, the server started again; the same load.
Printed: page p95 by page at the start and at the end (target under 300 ms), each long-lived process's
memory after warm-up and at the end of the half (target: growth under 20%), the class folder's growth per
100,000 games (target under 200 MB), the oldest queued check seen (target under a minute outside a rush),
and what the kill lost (target: nothing).

    .venv/bin/python benchmarks/semester.py [--students 100] [--versions 20] [--games 200000]
                                            [--minutes 20] [--browsers 20] [--baseline REV]

--baseline REV first runs this benchmark on arena as it was at git revision REV (benchmarks/server_load.py's
export), then on arena as it is here: a before/after from one invocation. The issue's scale (100 students,
20 versions, 200,000 games) takes hours of checks on two cores; give smaller numbers for a quick run.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks.server_load import PASSWORD, export, loads, make_class, session, token_of  # noqa: E402
from tests.server_kit import Server  # noqa: E402

TARGET_MS = 300.0
WARMUP_S = 60.0  # memory is compared from this far into a server's life
SAMPLE_S = 5.0
GOOD = [(ROOT / "bots" / name).read_text() for name in ("greedy.py", "random.py")]
# What students upload that fails its check: broken (a syntax error, a crash, a wrong answer) and hostile
# (never answers, floods stderr, eats memory). Their checks take their clocks' time; none reach the ladder.
BAD = [
    "def main(:\n",
    "import sys\nsys.stdin.readline()\nraise SystemExit(3)\n",
    "import sys\nfor line in sys.stdin:\n    print('banana', flush=True)\n",
    "import time\nwhile True:\n    time.sleep(1)\n",
    "import sys\nwhile True:\n    sys.stderr.write('x' * 65536)\n",
    "hog = []\nwhile True:\n    hog.append(bytearray(1 << 24))\n",
]
BROKEN_SHARE = 0.25


@dataclasses.dataclass
class Figures:
    """What one half measured."""

    pages: dict[str, list[float]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    failures: list[str] = dataclasses.field(default_factory=list)
    rss: dict[int, list[tuple[float, int, str]]] = dataclasses.field(
        default_factory=lambda: defaultdict(list)
    )
    queue_age: float = 0.0
    uploads: int = 0


# --- the synthetic history --------------------------------------------------------------------------


def fill(store_path: Path, upto: int, students: int, seed: int) -> int:
    """Add random legal games between retired versions to the store until it holds `upto`; how many were
    added. A pool of distinct games is played once and renamed for each pairing: the store's cost per game,
    not the rules engine's, is what a semester's history adds."""
    from classroom import _game

    from arena.game.rules import parse_rules
    from arena.match.bots import Bot
    from arena.store.writer import Store
    from arena.tournament.schedule import Slot

    rng = random.Random(seed)
    rules = parse_rules("kalah")
    a = Bot("a", ("true",), store_path.parent, store_path.parent / "a.py", "0" * 16)
    b = Bot("b", ("true",), store_path.parent, store_path.parent / "b.py", "1" * 16)
    pool = [_game(rules, a, b, {"a": 20, "b": 20}, rng) for _ in range(400)]
    retired = [
        Bot(f"s{k:03d}", ("true",), store_path.parent, store_path.parent / f"s{k:03d}",
            hashlib.blake2b(f"retired {k} {v} {seed}".encode(), digest_size=8).hexdigest())
        for k in range(students) for v in range(3)
    ]  # fmt: skip
    added = 0
    with Store(store_path) as store:
        have = store.count_games()
        base = int(store.db.execute("SELECT coalesce(max(round), 0) FROM games").fetchone()[0]) + 1_000_000
        while have + added < upto:
            with store.together():
                for _ in range(min(5000, upto - have - added)):
                    south, north = rng.sample(retired, 2)
                    played = rng.choice(pool)
                    names = {"a": south.name, "b": north.name}
                    record = dataclasses.replace(
                        played,
                        south=south.name,
                        north=north.name,
                        winner=names.get(played.winner or "", None),
                        faulty=names.get(played.faulty or "", None),
                        think_ms={names[k]: v for k, v in played.think_ms.items()},
                        moves_made={names[k]: v for k, v in played.moves_made.items()},
                        stderr={names[k]: v for k, v in played.stderr.items()},
                    )
                    added += 1
                    store.add_game(Slot(base + added, f"{added:016x}", south, north), record)
    return added


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def stored_games(store: Path) -> int:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30) as db:
        return int(db.execute("SELECT count(*) FROM games").fetchone()[0])


def live_games(store: Path) -> int:
    """Games the ladder played (not the synthetic ones, whose rounds start at a million)."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30) as db:
        return int(db.execute("SELECT count(*) FROM games WHERE round < 1000000").fetchone()[0])


# --- the load --------------------------------------------------------------------------------------


def up(server: Server, timeout: float = 120) -> None:
    """Wait until the started server answers its pages (its gunicorn binds after it prints the sign-in)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            requests.get(server.url + "/signin", timeout=10)
            return
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def timed(figures: Figures, kind: str, call: Callable[..., requests.Response], *args: object) -> str:
    began = time.perf_counter()
    answer = call(*args, timeout=60)
    spent = time.perf_counter() - began
    if answer.status_code != 200:
        raise RuntimeError(f"{kind} answered {answer.status_code}")
    figures.pages[kind].append(spent)
    return answer.text


def sign_in(url: str, k: int) -> requests.Session:
    http = session()
    page = http.get(url + "/signin", timeout=60).text
    form = {"csrfmiddlewaretoken": token_of(page), "username": f"s{k:03d}", "password": PASSWORD}
    if http.post(url + "/signin", data=form, timeout=60, allow_redirects=False).status_code != 302:
        raise RuntimeError(f"s{k:03d} could not sign in")
    return http


def browser(server: Server, k: int, end: float, figures: Figures, stop: threading.Event) -> None:
    """A student with the pages open: their own page, the ladder, one of the latest games, a poll of the
    ladder's JSON, every few seconds until `end`."""
    rng = random.Random(k)
    try:
        http = sign_in(server.url, k)
        while time.monotonic() < end and not stop.is_set():
            timed(figures, "student page", http.get, server.url + "/me")
            timed(figures, "ladder", http.get, server.url + "/ladder")
            recent = http.get(server.url + "/ladder.json", timeout=60).json().get("recent", [])
            if recent:
                timed(figures, "a game", http.get, f"{server.url}/games/{rng.choice(recent)['id']}")
            stop.wait(rng.uniform(2.0, 4.0))
    except Exception as e:  # noqa: BLE001 (counted and printed; a killed server ends its browsers)
        if not stop.is_set():
            figures.failures.append(f"s{k:03d}: {e}")


def uploader(server: Server, k: int, times: list[float], figures: Figures, stop: threading.Event) -> None:
    """Student k uploads a version at each of `times` (monotonic): mostly a working bot, some broken or
    hostile."""
    rng = random.Random(1000 + k)
    try:
        http = sign_in(server.url, k)
        for at in times:
            if stop.wait(max(0.0, at - time.monotonic())):
                return
            page = http.get(server.url + "/me", timeout=60).text
            source = rng.choice(BAD) if rng.random() < BROKEN_SHARE else rng.choice(GOOD)
            data = (source + f"\n# s{k:03d} at {at:.3f}\n").encode()
            files = {"bot": (f"s{k:03d}.py", data)}
            answer = http.post(server.url + "/me/upload", data={"csrfmiddlewaretoken": token_of(page)},
                               files=files, timeout=60, allow_redirects=False)  # fmt: skip
            if answer.status_code != 302:
                raise RuntimeError(f"upload answered {answer.status_code}")
            figures.uploads += 1
    except Exception as e:  # noqa: BLE001
        if not stop.is_set():
            figures.failures.append(f"upload s{k:03d}: {e}")


def oldest_queued(class_dir: Path) -> float:
    """Seconds the oldest version waiting for its check has waited (0: none waits)."""
    with sqlite3.connect(f"file:{class_dir / 'server.sqlite3'}?mode=ro", uri=True, timeout=30) as db:
        row = db.execute(
            "SELECT (julianday('now') - julianday(min(created))) * 86400 FROM classroom_submission "
            "WHERE status = 'queued'"
        ).fetchone()
    return float(row[0] or 0.0)


def processes(pgid: int) -> dict[int, tuple[int, str]]:
    """pid -> (RSS in KiB, what it is) of every process in the server's group, bots' and checks' left out
    (they come and go with each game)."""
    found: dict[int, tuple[int, str]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            words = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            rss = next(int(x.split()[1]) for x in (proc / "status").read_text().splitlines()
                       if x.startswith("VmRSS:"))  # fmt: skip
        except (OSError, StopIteration, ProcessLookupError):
            continue
        line = " ".join(words)
        if "arena.server.worker" in line:
            what = f"worker {words[words.index('arena.server.worker') + 1]}"
        elif "gunicorn" in line or "arena serve" in line or " serve " in line:
            what = "gunicorn/serve"
        elif "multiprocessing" in line or "forkserver" in line:
            what = "ladder's game worker"
        else:
            continue
        found[int(proc.name)] = (rss, what)
    return found


def watch(server: Server, class_dir: Path, figures: Figures, stop: threading.Event, began: float) -> None:
    """Every few seconds: the processes' memory and the checks' queue."""
    while not stop.wait(SAMPLE_S):
        assert server.proc is not None
        for pid, (rss, what) in processes(server.proc.pid).items():
            figures.rss[pid].append((time.monotonic() - began, rss, what))
        try:
            figures.queue_age = max(figures.queue_age, oldest_queued(class_dir))
        except sqlite3.Error:
            pass


def half(server: Server, class_dir: Path, opts: argparse.Namespace, seconds: float, figures: Figures,
         kill_at: float | None = None, versions: float | None = None) -> str:  # fmt: skip
    """Run the load for `seconds` against `server` (started), each student uploading `versions` (default:
    half of theirs); with `kill_at`, kill -9 it that many seconds in, start it again, look for what was
    stored before, and go on to the end. What the kill lost, in words."""
    began = time.monotonic()
    end = began + seconds
    stop = threading.Event()
    share = opts.versions / 2 if versions is None else versions
    cut = share * (kill_at / seconds) if kill_at is not None else share
    per = int(cut) + (random.random() < cut - int(cut))
    threads = [threading.Thread(target=watch, args=(server, class_dir, figures, stop, began), daemon=True)]
    for k in range(opts.students):
        times = sorted(began + random.uniform(5, (kill_at or seconds) - 10) for _ in range(per))
        threads.append(threading.Thread(target=uploader, args=(server, k, times, figures, stop), daemon=True))
    for k in range(min(opts.browsers, opts.students)):
        threads.append(threading.Thread(target=browser, args=(server, k, end, figures, stop), daemon=True))
    for t in threads:
        t.start()
    lost = "not killed"
    if kill_at is not None:
        time.sleep(max(0.0, began + kill_at - time.monotonic()))
        ladder = class_dir / "ladder" / "arena.sqlite"
        games, versions = seen(ladder, class_dir)
        stop.set()  # the browsers and uploaders end as the server does; a refused connection is expected
        server.kill9()
        for t in threads:
            t.join(timeout=70)
        restarted = time.monotonic()
        server.start(timeout=180)
        up(server)
        after_games, after_versions = seen(ladder, class_dir)
        missing = set(games) - set(after_games)
        changed = [g for g in set(games) & set(after_games) if games[g] != after_games[g]]
        gone = set(versions) - set(after_versions)
        lost = (
            f"kill -9 {kill_at:.0f} s in: {len(games)} games and {len(versions)} versions stored before it; "
            f"after a restart ({time.monotonic() - restarted:.0f} s) {len(missing)} games missing, "
            f"{len(changed)} changed, {len(gone)} versions missing"
        )
        # the rest of the half, on the restarted server
        rest = end - time.monotonic()
        if rest > 20:
            half(server, class_dir, opts, rest, figures, versions=share - cut)
        return lost
    time.sleep(max(0.0, end - time.monotonic()))
    stop.set()
    for t in threads:
        t.join(timeout=70)
    return lost


def seen(ladder: Path, class_dir: Path) -> tuple[dict[int, str], dict[int, str]]:
    """The live games (id -> a digest of its record) and the versions (id -> digest) stored now."""
    with sqlite3.connect(f"file:{ladder}?mode=ro", uri=True, timeout=30) as db:
        games = {
            int(i): hashlib.blake2b(f"{m}|{w}|{r}".encode(), digest_size=8).hexdigest()
            for i, m, w, r in db.execute("SELECT id, moves, winner, reason FROM games WHERE round < 1000000")
        }
    with sqlite3.connect(f"file:{class_dir / 'server.sqlite3'}?mode=ro", uri=True, timeout=30) as db:
        versions = {int(i): str(d) for i, d in db.execute("SELECT id, digest FROM classroom_submission")}
    return games, versions


# --- the report -----------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(0.95 * len(values)))] * 1000 if values else float("nan")


def memory(figures: Figures) -> list[str]:
    """Each long-lived process's RSS after warm-up and at its last sample, and the growth."""
    lines = []
    for pid, samples in sorted(figures.rss.items()):
        warm = [s for s in samples if s[0] >= WARMUP_S]
        if len(warm) < 3 or warm[-1][0] - warm[0][0] < 60:
            continue  # a game worker or bot's life, or too short to say
        first, last = warm[0][1], warm[-1][1]
        growth = 100.0 * (last - first) / first
        mark = "ok" if growth < 20 else "OVER"
        lines.append(f"    {warm[0][2]:24} pid {pid:7}  {first / 1024:6.1f} MiB at {warm[0][0]:4.0f} s -> "
                     f"{last / 1024:6.1f} MiB at {warm[-1][0]:4.0f} s  {growth:+5.1f}% {mark}")  # fmt: skip
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--versions", type=int, default=20, help="versions each student uploads over the run")
    ap.add_argument("--games", type=int, default=200_000, help="games in the ladder's store by the end")
    ap.add_argument("--minutes", type=float, default=20.0, help="minutes of load, in two halves")
    ap.add_argument("--browsers", type=int, default=20, help="students with their pages open")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--baseline", metavar="REV", help="first run the benchmark of arena at git revision REV")
    opts = ap.parse_args()
    if opts.baseline:
        with tempfile.TemporaryDirectory(prefix="arena-semester-base-") as tmp:
            tree = export(opts.baseline, Path(tmp))
            for name in ("semester.py", "server_load.py"):
                shutil.copy(ROOT / "benchmarks" / name, tree / "benchmarks" / name)
            shutil.copy(ROOT / "tests" / "classroom.py", tree / "tests" / "classroom.py")
            args = [sys.executable, str(tree / "benchmarks" / "semester.py"), *sys.argv[1:]]
            at = args.index("--baseline")
            del args[at : at + 2]
            print(f"before: arena at {opts.baseline} ({loads()})", flush=True)
            subprocess.run(args, cwd=tree, check=True)
        print(f"after: arena as it is here ({loads()})", flush=True)
    measure(opts)


def measure(opts: argparse.Namespace) -> None:
    random.seed(opts.seed)
    work = Path(tempfile.mkdtemp(prefix="arena-semester-"))
    class_dir = work / "class"
    make_class(class_dir, opts.students)
    from arena.server.models import Classroom

    Classroom.objects.update(per_day=10 * opts.versions + 10, kept_versions=opts.versions + 1)
    store = class_dir / "ladder" / "arena.sqlite"
    seconds = 30 * opts.minutes
    print(
        f"{opts.students} students x {opts.versions} versions ({100 * BROKEN_SHARE:.0f}% broken or "
        f"hostile), {opts.browsers} with their pages open, {opts.games} games by the end; "
        f"{opts.minutes:g} minutes of load in two halves ({os.cpu_count()} cores, {loads()})"
    )
    # the class folder, the ladder's store and its games: after each fill, after each half
    sizes: list[int] = []
    stores: list[int] = []
    counts: list[int] = []

    def mark() -> None:
        """Measured with the server stopped and the store's write-ahead log folded in."""
        with sqlite3.connect(store) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes.append(folder_bytes(class_dir))
        stores.append(store.stat().st_size)
        counts.append(stored_games(store))

    began = time.monotonic()
    synthetic = fill(store, opts.games // 2, opts.students, opts.seed)
    print(f"  synthetic history: {synthetic} games stored in {time.monotonic() - began:.0f} s", flush=True)
    server = Server(class_dir, move_ms=100)
    start, end = Figures(), Figures()
    try:
        mark()
        server.start(timeout=180)
        up(server)
        live = live_games(store)
        lost = half(server, class_dir, opts, seconds, start, kill_at=random.uniform(0.5, 0.8) * seconds)
        start.played, start.seconds = live_games(store) - live, seconds
        print(f"  start: {stored_games(store)} games ({live_games(store)} played live); {lost}", flush=True)
        server.stop()
        mark()
        began = time.monotonic()
        more = fill(store, opts.games, opts.students, opts.seed + 1)
        synthetic += more
        print(f"  synthetic history: {more} more stored in {time.monotonic() - began:.0f} s", flush=True)
        mark()
        server.start(timeout=300)
        up(server)
        live = live_games(store)
        half(server, class_dir, opts, seconds, end)
        end.played, end.seconds = live_games(store) - live, seconds
    finally:
        server.stop()
    mark()
    report(opts, start, end, (sizes, stores, counts), synthetic, live_games(store))
    shutil.rmtree(work, ignore_errors=True)


def report(opts: argparse.Namespace, start: Figures, end: Figures,
           marks: tuple[list[int], list[int], list[int]], synthetic: int, live: int) -> None:  # fmt: skip
    mib = 2**20
    sizes, stores, counts = marks
    print(f"  end: {counts[-1]} games: {live} played live by the ladder, {synthetic} synthetic ({loads()})")
    print(f"page p95 (ms), target under {TARGET_MS:.0f}: start ({counts[0]} games), end ({counts[2]} games)")
    for kind in ("student page", "ladder", "a game"):
        a, b = p95(start.pages[kind]), p95(end.pages[kind])
        verdict = "ok" if max(a, b) < TARGET_MS else "OVER"
        print(f"  {kind:14} {a:6.0f} ({len(start.pages[kind]):4} loads) {b:6.0f} "
              f"({len(end.pages[kind]):4} loads)  {verdict}")  # fmt: skip
    print(
        f"the ladder's live games a minute: start {60 * start.played / start.seconds:.0f}, "
        f"end {60 * end.played / end.seconds:.0f} (end / start {end.played / max(1, start.played):.2f})"
    )
    print("memory (RSS) of each long-lived process after warm-up and at the end, target growth under 20%:")
    print("  start (the server before the kill, then after its restart):")
    print("\n".join(memory(start)) or "    (too short to say)")
    print("  end:")
    print("\n".join(memory(end)) or "    (too short to say)")

    def per_100k(a: int, b: int, of: list[int]) -> float:
        return (of[b] - of[a]) / max(1, counts[b] - counts[a]) * 100_000 / mib

    live_games_ = (counts[1] - counts[0]) + (counts[3] - counts[2])
    live_store = ((stores[1] - stores[0]) + (stores[3] - stores[2])) / max(1, live_games_) * 100_000 / mib
    rest = (sizes[1] - sizes[0]) + (sizes[3] - sizes[2]) - (stores[1] - stores[0]) - (stores[3] - stores[2])
    whole = per_100k(0, 3, sizes)
    print(f"class folder (the server stopped, the store's log folded in): {sizes[0] / mib:.1f} MiB at "
          f"{counts[0]} games, {sizes[-1] / mib:.1f} MiB at {counts[-1]}: {whole:.0f} MiB per 100,000 games "
          f"(target under 200) {'ok' if whole < 200 else 'OVER'}")  # fmt: skip
    print(f"  the ladder's store per 100,000 games: {per_100k(1, 2, stores):.0f} MiB as the synthetic games "
          f"grew it, {live_store:.0f} MiB as the {live_games_} live games did; the rest of the folder "
          f"(uploads, checks, the database) grew {rest / mib:.1f} MiB over {start.uploads + end.uploads} "
          f"uploads")  # fmt: skip
    queue = max(start.queue_age, end.queue_age)
    print(f"checks: {start.uploads + end.uploads} uploads; the oldest queued check waited {queue:.0f} s "
          f"(target under 60 outside a rush)")  # fmt: skip
    failures = start.failures + end.failures
    print(f"failed page loads or uploads: {len(failures)} {failures[:3]}")


if __name__ == "__main__":
    main()
