"""`arena serve` under a class's deadline rush: STUDENTS students sign in and upload a bot within SECONDS
seconds against the real server (gunicorn and its workers) on 127.0.0.1, while the ladder plays; then
every upload must be stored and checked. Printed: page latency (p50, p95, max) by kind of request, how long
the checks took to catch up, and the ladder's games per second against `arena run` on the same bots and
settings on this machine, measured in the same run, one after the other (the ratio is quoted from them).
The load averages at the start and the end are printed with the figures: the machine may be shared.

    .venv/bin/python benchmarks/server_load.py [--students 100] [--seconds 60] [--window 60] [--baseline REV]
                                               [--hog N]

--baseline REV first runs this benchmark on arena as it was at git revision REV (exported to a temporary
folder, with this script copied in), then on arena as it is here: a before/after of one invocation, the
same measuring code, minutes apart, so that both halves meet much the same load of the machine's others.
--hog N runs N processes spinning at nice 0 beside each half (and its arena run): a shared machine's other
users, made steady.

Needs the server extra and requests (pip install -e '.[test]'). Every request goes to 127.0.0.1 only; the
run is bounded (each wait has a deadline) and stops the server it started.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server_kit import Server, setup_django  # noqa: E402

PASSWORD = "deadline rush 2026"
BOTS = [(ROOT / "bots" / name).read_bytes() for name in ("greedy.py", "random.py")]
latencies: dict[str, list[float]] = defaultdict(list)
failures: list[str] = []
lock = threading.Lock()


def timed(kind: str, call, *args, **kw):  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    answer = call(*args, timeout=60, **kw)
    with lock:
        latencies[kind].append(time.perf_counter() - began)
    return answer


def session() -> requests.Session:
    """A browser's connection: a GET whose kept-alive connection the server closed just as it was reused
    (gunicorn closes idle ones after 2 s; the pages poll every 3) is sent again, as a browser does."""
    http = requests.Session()
    http.mount(
        "http://", HTTPAdapter(max_retries=Retry(total=2, allowed_methods=["GET"], status_forcelist=[]))
    )
    return http


def token_of(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]


def make_class(class_dir: Path, students: int) -> None:
    """Teacher, class and students made in the database directly (one password hash for all: signing up
    is not what is measured), before the server starts."""
    setup_django(class_dir)
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import User

    from arena.server.models import Classroom, Member, Role

    Classroom.objects.create(name="Rush", per_day=100, references=["greedy", "random"])
    hashed = make_password(PASSWORD)
    for k in range(students):
        user = User.objects.create(username=f"s{k:03d}", password=hashed)
        Member.objects.create(user=user, slug=f"s{k:03d}", role=Role.STUDENT)
    teacher = User.objects.create(username="teach", password=hashed, is_staff=True, is_superuser=True)
    Member.objects.create(user=teacher, slug="teach", role=Role.TEACHER)


def student(server: Server, k: int, start_at: float) -> None:
    """Sign in, open one's page, upload, look at the ladder: a student's minute."""
    time.sleep(max(0.0, start_at - time.monotonic()))
    http = session()
    try:
        page = timed("GET /signin", http.get, server.url + "/signin").text
        form = {"csrfmiddlewaretoken": token_of(page), "username": f"s{k:03d}", "password": PASSWORD}
        me = timed(
            "POST /signin (password hash)",
            http.post,
            server.url + "/signin",
            data=form,
            allow_redirects=False,
        )
        page = timed("GET /me", http.get, server.url + "/me").text
        if me.status_code != 302:
            raise RuntimeError(f"sign-in answered {me.status_code}")
        data = BOTS[k % 2] + f"\n# student {k}\n".encode()
        files = {"bot": (f"s{k:03d}.py", data)}
        form = {"csrfmiddlewaretoken": token_of(page)}
        url = server.url + "/me/upload"
        answer = timed("POST /me/upload", http.post, url, data=form, files=files, allow_redirects=False)
        if answer.status_code != 302:
            raise RuntimeError(f"upload answered {answer.status_code}")
        timed("GET /ladder", http.get, server.url + "/ladder")
        for _ in range(3):
            timed("GET /ladder.json", http.get, server.url + "/ladder.json")
            time.sleep(1)
    except Exception as e:  # noqa: BLE001 (counted and printed)
        with lock:
            failures.append(f"s{k:03d}: {e}")


def steady(server: Server, students: int, seconds: float) -> None:
    """After the rush, while the ladder plays: signed-in students keep their pages open (a poll of the
    ladder every 3 s each, their own page now and then), with no sign-in to hash."""
    sessions = []
    for k in range(min(students, 30)):
        http = session()
        page = http.get(server.url + "/signin", timeout=60).text
        form = {"csrfmiddlewaretoken": token_of(page), "username": f"s{k:03d}", "password": PASSWORD}
        http.post(server.url + "/signin", data=form, timeout=60)
        sessions.append(http)
    end = time.monotonic() + seconds

    def browse(http: requests.Session) -> None:
        while time.monotonic() < end:
            timed("steady GET /ladder.json", http.get, server.url + "/ladder.json")
            if random.random() < 0.2:
                timed("steady GET /me", http.get, server.url + "/me")
            time.sleep(3)

    with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        list(pool.map(browse, sessions))


def checked(class_dir: Path) -> tuple[int, int, int]:
    """Versions stored, checked, and failed (each upload is a working bot: a failure is the load's)."""
    with sqlite3.connect(class_dir / "server.sqlite3", timeout=30) as db:
        rows = dict(
            db.execute("SELECT status, count(*) FROM classroom_submission GROUP BY status").fetchall()
        )
    failed = rows.get("failed", 0)
    return sum(rows.values()), rows.get("passed", 0) + failed, failed


def games(store: Path, reason: str | None = None) -> int:
    with sqlite3.connect(store, timeout=30) as db:
        if reason:
            return int(db.execute("SELECT count(*) FROM games WHERE reason = ?", (reason,)).fetchone()[0])
        return int(db.execute("SELECT count(*) FROM games").fetchone()[0])


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def _row(values: list[float]) -> str:
    return f"{len(values):5} {pct(values, 0.5):6.0f} {pct(values, 0.95):6.0f} {max(values) * 1000:6.0f}"


def rate(measure, seconds: float) -> float:  # type: ignore[no-untyped-def]
    before, began = measure(), time.monotonic()
    time.sleep(seconds)
    return (measure() - before) / (time.monotonic() - began)


def arena_run_rate(bots: Path, out: Path, seconds: float, warmup: float) -> float:
    """Games per second of `arena run` (adaptive, as the ladder plays) on a copy of the ladder's bots."""
    args = [sys.executable, "-m", "arena", "run", "--bots", str(bots), "--out", str(out), "--name", "bench",
            "--move-time", "100", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = out / "bench" / "arena.sqlite"
    try:
        deadline = time.monotonic() + 120
        while not store.exists() or games(store) == 0:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("arena run played no game")
            time.sleep(0.5)
        time.sleep(warmup)
        return rate(lambda: games(store), seconds)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)  # its report of 100 bots, on a loaded machine
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def loads() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def export(rev: str, into: Path) -> Path:
    """arena, its bots, benchmarks and the tests' server kit as they were at git revision `rev`."""
    tree = into / f"baseline-{rev}"
    tree.mkdir(parents=True)
    paths = ["arena", "benchmarks", "bots", "tests/server_kit.py"]
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *paths], check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def baseline(rev: str, opts: argparse.Namespace) -> None:
    """This benchmark on arena at `rev` (this script in its export), printed as it goes."""
    with tempfile.TemporaryDirectory(prefix="arena-load-base-") as tmp:
        tree = export(rev, Path(tmp))
        script = tree / "benchmarks" / Path(__file__).name
        shutil.copy(__file__, script)
        args = [sys.executable, str(script), "--students", str(opts.students), "--seconds", str(opts.seconds),
                "--window", str(opts.window), "--hog", str(opts.hog)]  # fmt: skip
        print(f"before: arena at {rev} ({loads()})", flush=True)
        subprocess.run(args, cwd=tree, check=True)
    print(f"after: arena as it is here ({loads()})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--window", type=float, default=60.0, help="seconds over which games/s are counted")
    ap.add_argument("--baseline", metavar="REV", help="first run the benchmark of arena at git revision REV")
    ap.add_argument("--hog", type=int, default=0, help="processes spinning beside it: the machine's others")
    opts = ap.parse_args()
    if opts.baseline:
        baseline(opts.baseline, opts)
    with hogs(opts.hog):
        measure(opts)


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """`count` processes spinning at nice 0 for the whole run: the load of a shared machine's other users,
    made the same for a before and its after."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    if count:
        print(f"with {count} processes spinning beside it")
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def measure(opts: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="arena-load-"))
    class_dir = work / "class"
    make_class(class_dir, opts.students)
    server = Server(class_dir, move_ms=100)
    try:
        server.start()
        ladder = class_dir / "ladder" / "arena.sqlite"
        deadline = time.monotonic() + 120
        while not ladder.exists() or games(ladder) < 1:  # the references play while the class signs in
            if time.monotonic() > deadline:
                raise SystemExit("the ladder did not start")
            time.sleep(0.5)
        print(
            f"{opts.students} students sign in and upload within {opts.seconds:.0f} s; the ladder is playing "
            f"({loads()})"
        )
        began = time.monotonic()
        starts = sorted(began + random.uniform(0, opts.seconds) for _ in range(opts.students))
        with ThreadPoolExecutor(max_workers=32) as pool:
            for k, at in enumerate(starts):
                pool.submit(student, server, k, at)
        rush = time.monotonic() - began
        games_in_rush = games(ladder)
        while True:
            stored, done, failed = checked(class_dir)
            if done == stored == opts.students or time.monotonic() - began > 900:
                break
            time.sleep(1)
        caught_up = time.monotonic() - began
        print(f"  the rush took {rush:.1f} s; {len(failures)} students failed: {failures[:3]} ({loads()})")
        print(
            f"  uploads stored {stored} of {opts.students}; checked {done}, {failed} failed "
            f"({caught_up:.0f} s from the start)"
        )
        timeouts = games(ladder, "timeout")
        print(
            f"  ladder games stored by the end of the rush: {games_in_rush} ({timeouts} timeouts by the end)"
        )
        print("  latency (ms)             count    p50    p95    max")
        pages = []
        for kind, values in sorted(latencies.items()):
            if kind.startswith("steady"):
                continue
            if kind.startswith("GET"):
                pages += values
            print(f"  {kind:28} {_row(values)}")
        print(f"  {'every page (GET)':28} {_row(pages)}")
        steady(server, opts.students, 30.0)
        for kind in ("steady GET /ladder.json", "steady GET /me"):
            print(f"  {kind:28} {_row(latencies[kind])}")
        time.sleep(15)  # the last new versions joined: the ladder's field settles in
        ladder_rate = rate(lambda: games(ladder), opts.window)
        field = class_dir / "bots"
        bots = work / "bots"
        shutil.copytree(field, bots, symlinks=True)
    finally:
        server.stop()
    run_rate = arena_run_rate(bots, work / "reports", opts.window, warmup=5)
    entries = len([p for p in bots.iterdir() if not p.name.startswith(".")])
    print(f"games/s on {entries} bots (move time 100 ms, {os.cpu_count()} cores), one after the other:")
    print(f"  the ladder (arena serve, idle pages): {ladder_rate:.2f}")
    print(f"  arena run on the same bots:           {run_rate:.2f}")
    print(f"  ratio ladder / arena run:             {ladder_rate / run_rate:.2f}")
    print(f"  ({loads()})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
