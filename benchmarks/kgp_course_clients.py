"""The course's own KGP clients on Arena (issue 39): KWARC kalah-game's Python library with its minmax example
and its Java library with its MinMaxAgent, unmodified but for host, port and token, play practice games on
the class server's KGP port over TCP and over a WebSocket, ranked games on the ladder, and `arena run` games
as `protocol = "kgp"` bots. Printed per setting: the games played to a normal end (no forfeit), and the
positions played by a random legal move (no move by `stop`) out of the agent's moves.

    .venv/bin/python benchmarks/kgp_course_clients.py --kalah-game PATH [--games 8] [--move-ms 1000]
        [--only practice,ranked,run] [--clients pykgp,jkgp] [--transports tcp,ws] [--python PY] [--logs DIR]

PATH is a copy of github.com/KWARC/kalah-game (its client/pykgp and client/jkgp; not part of arena, which has
no licence to ship them). The WebSocket half of the Python library needs the websocket-client package in
the interpreter --python names. For a before/after, run a copy of this script inside a `git archive` of the
older revision (it runs the arena of the tree it is in). A client that stops playing for STALL_S ends its
part. jkgp is built with javac, if there is one. Every connection is to
127.0.0.1; the server and clients it started are stopped at the end. With --logs, each client's stderr
(pykgp's minmax example prints every line it reads and sends there) is kept in DIR, a file a setting.
The clients' names are fixed, so a second ranked setting of a client on one server is the same version
reconnecting to a settled ladder (a round, then none): measure each ranked setting on a server of its own
(--transports ws).
"""

# ruff: noqa: B023, E731  (each lambda is used at once, inside the iteration that made it)
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _pykgp(kalah: Path, where: Path) -> Path:
    folder = where / "pykgp"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(kalah / "client/pykgp/kgp.py", folder / "kgp.py")
    shutil.copy(kalah / "client/pykgp/examples/minmax.py", folder / "minmax.py")
    return folder


def _jkgp(kalah: Path, where: Path, host: str, port: int | None, kind: str, token: str) -> Path | None:
    """jkgp built, with MinMaxAgent's host, port, connection and token set (its only edits)."""
    if not shutil.which("javac"):
        return None
    folder = where / f"jkgp-{kind}-{port}"
    shutil.copytree(kalah / "client/jkgp", folder, dirs_exist_ok=True)
    source = (folder / "MinMaxAgent.java").read_text()
    source = source.replace('"kalah.kwarc.info/socket"', json.dumps(host))
    source = source.replace(
        "                    null,\n                    ProtocolManager",
        f"                    {port or 'null'},\n                    ProtocolManager",
        1,
    )
    source = source.replace(
        "ProtocolManager.ConnectionType.WebSocketSecure", f"ProtocolManager.ConnectionType.{kind}"
    )
    source = source.replace("null, // token goes here", f"{json.dumps(token)}, // token goes here")
    (folder / "MinMaxAgent.java").write_text(source)
    javas = [str(p.relative_to(folder)) for p in (folder / "info").rglob("*.java")]
    subprocess.run(
        ["javac", "-cp", ".", *javas, "MinMaxAgent.java"], cwd=folder, check=True, capture_output=True
    )
    return folder


def _summary(games: list[dict[str, object]], agent: str) -> str:
    normal = sum(g["faulty"] is None for g in games)
    randoms = sum(int(dict(g.get("random_moves") or {}).get(agent, 0)) for g in games)  # type: ignore[call-overload]
    moves = sum(int(dict(g["moves_made"]).get(agent, 0)) for g in games)  # type: ignore[call-overload]
    faults = sorted({f"{g['reason']}: {str(g['detail'])[:90]}" for g in games if g["faulty"] == agent})
    line = f"{normal}/{len(games)} games to a normal end, random moves {randoms} of {moves}"
    return line + "".join(f"\n      {f}" for f in faults)


def _start_client(
    name: str, folder: Path, python: str, host: str, port: int, ws: bool, token: str, log: Path | None
) -> subprocess.Popen[bytes]:
    env, argv = dict(os.environ), ["java", "-cp", ".", "MinMaxAgent"]
    if name == "pykgp":
        env |= {
            "KGP_HOST": f"ws://{host}:{port}/socket" if ws else host,
            "KGP_PORT": str(port),
            "TOKEN": token,
        }
        argv = [python, "minmax.py"]
    with log.open("wb") if log else open(os.devnull, "wb") as err:  # the client keeps its own copy
        return subprocess.Popen(  # a session of its own: pykgp's search processes hold its socket too
            argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )


def _stop_client(client: subprocess.Popen[bytes], rows) -> None:  # type: ignore[no-untyped-def]
    """The client and its processes killed, and the game it cut short stored (not the next setting's)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    stored, still = rows(), time.monotonic()
    began = still
    while time.monotonic() - still < 3 and time.monotonic() - began < 30:
        time.sleep(0.5)
        if (now := rows()) != stored:
            stored, still = now, time.monotonic()


def _until(check, seconds: float, progress=lambda: 0) -> bool:  # type: ignore[no-untyped-def]
    """Wait for `check`, at most `seconds`, and STALL_S without `progress` moving (a client that hangs)."""
    deadline, last, moved = time.monotonic() + seconds, progress(), time.monotonic()
    while time.monotonic() < min(deadline, moved + STALL_S):
        if check():
            return True
        if (now := progress()) != last:
            last, moved = now, time.monotonic()
        time.sleep(1.0)
    return False


STALL_S = 150.0


def server_part(args: argparse.Namespace, work: Path) -> None:
    from tests.server_kit import Server, free_port
    from tests.test_server_e2e import make_class

    port, ws_port = free_port(), free_port()
    server = Server(
        work / "class",
        move_ms=args.move_ms,
        args=("--kgp-port", str(port), "--kgp-websocket-port", str(ws_port)),
    )
    try:
        people = make_class(server, server.start(), ["tom"])
        people["teach"].post("/teacher/references", {"greedy": "on"}, page="/teacher")
        _until(lambda: any((server.class_dir / "bots").iterdir()), 120)
        page = people["tom"].http.get(server.url + "/me", timeout=30).text
        token = re.search(r'id="token">([^<]+)<', page).group(1)  # type: ignore[union-attr]
        practice = server.class_dir / "practice" / "tom.jsonl"
        for name in args.clients:
            for ws in [kind == "ws" for kind in args.transports]:
                folder = _pykgp(args.kalah_game, work) if name == "pykgp" else _jkgp(
                    args.kalah_game, work, f"127.0.0.1:{ws_port}/socket" if ws else "127.0.0.1",
                    None if ws else port, "WebSocket" if ws else "TCP", token)  # fmt: skip
                if folder is None:
                    print(f"{name}: no javac here")
                    continue
                if "practice" in args.only:
                    before = len(practice.read_text().splitlines()) if practice.exists() else 0
                    client = _start_client(
                        name, folder, args.python, "127.0.0.1", ws_port if ws else port, ws, token,
                        _log(args, f"practice-{name}-{'ws' if ws else 'tcp'}"),
                    )  # fmt: skip
                    rows = lambda: (
                        [json.loads(x) for x in practice.read_text().splitlines()[before:]]
                        if practice.exists()
                        else []
                    )
                    _until(lambda: len(rows()) >= args.games or client.poll() is not None, args.games * 120,
                           lambda: len(rows()))  # fmt: skip
                    games = rows()  # not the game the kill below cuts short
                    _stop_client(client, lambda: len(rows()))
                    print(
                        f"practice {name} {'ws ' if ws else 'tcp'}: {_summary(games, 'tom (KGP)')}",
                        flush=True,
                    )
                if "ranked" in args.only:
                    people["teach"].post(
                        "/teacher/settings", {"kgp_options": "1", "kgp_ranked": "on"}, page="/teacher"
                    )
                    store = server.class_dir / "ladder" / "arena.sqlite"
                    seen = _ranked(store)
                    client = _start_client(
                        name, folder, args.python, "127.0.0.1", ws_port if ws else port, ws, token,
                        _log(args, f"ranked-{name}-{'ws' if ws else 'tcp'}"),
                    )  # fmt: skip
                    _until(lambda: len(_ranked(store)) - len(seen) >= args.games or client.poll() is not None,
                           args.games * 150, lambda: len(_ranked(store)))  # fmt: skip
                    games = [g for k, g in _ranked(store).items() if k not in seen]  # not the one cut short
                    _stop_client(client, lambda: len(_ranked(store)))
                    people["teach"].post("/teacher/settings", {"kgp_options": "1"}, page="/teacher")
                    print(
                        f"ranked   {name} {'ws ' if ws else 'tcp'}: {_summary(games, 'tom.kgp')}", flush=True
                    )
    finally:
        server.stop()


def _log(args: argparse.Namespace, setting: str) -> Path | None:
    if args.logs is None:
        return None
    args.logs.mkdir(parents=True, exist_ok=True)
    return args.logs / f"{setting}.log"


def _ranked(store: Path) -> dict[int, dict[str, object]]:
    """The ladder's games of tom's agent, by id."""
    if not store.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT * FROM games WHERE south = 'tom.kgp' OR north = 'tom.kgp'").fetchall()
    except sqlite3.Error:
        return {}
    out = {}
    for row in rows:
        game = dict(row)
        for key in ("moves_made", "random_moves"):
            game[key] = json.loads(game.get(key) or "{}")
        out[int(game["id"])] = game
    return out


def run_part(args: argparse.Namespace, work: Path) -> None:
    bots = work / "bots"
    bots.mkdir()
    for name in args.clients:
        if name == "pykgp":
            folder = _pykgp(args.kalah_game, bots)
            folder.rename(bots / "minmax")
            (bots / "minmax" / "bot.toml").write_text('command = "python3 minmax.py"\nprotocol = "kgp"\n')
        elif shutil.which("javac"):
            folder = _jkgp(args.kalah_game, work, "localhost", 2671, "TCP", "")
            assert folder is not None
            shutil.copytree(folder, bots / "mmagent")
            (bots / "mmagent" / "bot.toml").write_text(
                'command = "java -cp . MinMaxAgent"\nprotocol = "kgp"\n'
            )
    shutil.copy(ROOT / "bots" / "greedy.py", bots / "greedy.py")
    out = work / "run"
    argv = [
        sys.executable,
        "-m",
        "arena",
        "run",
        "--bots",
        str(bots),
        "--out",
        str(out),
        "--rounds",
        str(args.games // 2),
    ]
    argv += ["--move-time", str(args.move_ms), "--openings", "0", "--jobs", "1", "--quiet", "--seed", "7"]
    subprocess.run(argv, check=False, cwd=ROOT, env=os.environ, capture_output=True)
    export = subprocess.run(
        [sys.executable, "-m", "arena", "export", "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    games = [json.loads(line) for line in export.stdout.splitlines()]
    for agent in ("minmax", "mmagent"):
        mine = [g for g in games if agent in (g["south"], g["north"])]
        if mine:
            print(f"arena run {agent}: {_summary(mine, agent)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kalah-game", type=Path, required=True)
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--move-ms", type=int, default=1000)
    parser.add_argument("--only", default="practice,ranked,run")
    parser.add_argument("--clients", default="pykgp,jkgp")
    parser.add_argument("--transports", default="tcp,ws")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--logs", type=Path, default=None)
    args = parser.parse_args()
    args.only, args.clients = args.only.split(","), args.clients.split(",")
    args.transports = args.transports.split(",")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        if "practice" in args.only or "ranked" in args.only:
            server_part(args, Path(tmp))
        if "run" in args.only:
            run_part(args, Path(tmp))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
