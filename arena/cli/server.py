"""The class's server commands: `arena serve` (needs the extra, arena[server]) and `arena submit` (a
student's terminal; standard library only). Both import the server package inside the command, so that
`arena run` never loads Django."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from arena.cli.options import RULES, RULES_HELP, ClockAsked, echo, time_options
from arena.tournament.settings import Settings, resolve


def _asked(rules: Any, clock: ClockAsked) -> dict[str, Any]:
    """The rules and clock flags as resolve() takes them (None: not asked). The server asks no confinement
    flags."""
    return {"rules": rules.spec if rules is not None else None, **clock.changes()}


def _address(value: str) -> str:
    """An IP address as the connection shows it (REMOTE_ADDR), or BadParameter."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an IP address") from None


@click.command("serve")
@click.argument("class_dir", default="class", type=click.Path(file_okay=False, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--db",
    metavar="URL",
    help="A database URL without its password (postgresql://user@host/name; the password in ~/.pgpass, "
    "or the whole URL in CLASS_DIR/database_url) [default: SQLite in CLASS_DIR].",
)
@click.option(
    "--cluster",
    metavar="tls://HOST:8786",
    envvar="ARENA_CLUSTER",
    help="Play the games on this Dask cluster, as arena run does.",
)
@click.option(
    "--cluster-certs",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    envvar="ARENA_CLUSTER_CERTS",
    help="The class's certificates for the cluster's TLS.",
)
@click.option(
    "--rules",
    "rules",
    type=RULES,
    help=f"{RULES_HELP} [default: {Settings().rules}; fixed once the ladder starts].",
)
@time_options(tournament=False)
@click.option(
    "--trusted-proxy",
    "proxies",
    multiple=True,
    metavar="ADDR",
    callback=lambda _ctx, _param, value: tuple(_address(v) for v in value),
    help="The address of your HTTPS proxy: its X-Forwarded-For names the client the sign-in throttle "
    "counts (repeatable; no other's is believed).",
)
@click.option(
    "--kgp-port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Also listen here (on --host) for students' KGP agents, which play practice games against the "
    "ladder's bots with the student's token (KGP's own port is 2671) [default: off].",
)
@click.option(
    "--kgp-websocket-port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="And here for KGP over a WebSocket, at ws://HOST:PORT/socket (with --kgp-port) [default: off].",
)
def serve_cmd(  # type: ignore[no-untyped-def]
    class_dir, host, port, db, cluster, cluster_certs, rules, clock, proxies, kgp_port, kgp_websocket_port
):
    """Serve a class from CLASS_DIR (made if new): sign-in, uploads from a web page, every version
    checked in the sandbox, a ladder that plays all the time, a deadline and the final's gradebook.

    Prints the address and the teacher's first sign-in (a one-time link while the class has no
    teacher). Needs the server extra: pip install 'arena[server]'."""
    try:
        from arena.server.serve import Options, ServeError, serve
    except ImportError:
        raise click.ClickException(
            "arena serve needs the server extra: pip install 'arena[server]'"
        ) from None
    try:
        import django  # noqa: F401
        import gunicorn  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "arena serve needs the server extra: pip install 'arena[server]'"
        ) from None
    settings = resolve(None, _asked(rules, clock))  # the rules and clock as arena run resolves them
    opts = Options(
        class_dir,
        host,
        port,
        db,
        cluster,
        cluster_certs,
        settings=settings,
        trusted_proxies=proxies,
        kgp_port=kgp_port,
        kgp_websocket_port=kgp_websocket_port,
    )
    try:
        serve(opts, lambda line: echo(line))
    except ServeError as e:
        raise click.ClickException(str(e)) from None


@click.command("submit")
@click.argument("bot", required=False, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--server",
    envvar="ARENA_SERVER",
    help="The class's server, e.g. http://HOST:8000 [env: ARENA_SERVER; default: the one --login kept].",
)
@click.option(
    "--login",
    is_flag=True,
    help="Ask for your token (from your page on the server), check it, and keep it with the server in "
    "~/.config/arena/submit.json, readable by you alone, for every later arena submit.",
)
@click.option(
    "--token",
    metavar="TOKEN",
    help="Your token; every user of this machine sees it in ps: prefer --login, or ARENA_TOKEN.",
)
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for the check and print it.")
def submit_cmd(bot: Path | None, server: str | None, login: bool, token: str | None, wait: bool) -> None:
    """Send BOT (a source file, or a bot folder, zipped on the way) to the class's server as your next
    version; with --wait (the default) print its check. Exit status 1 if it failed its check.

    The token comes from ARENA_TOKEN, or from the file arena submit --login writes."""
    from arena.student import submit as client

    if token is not None:
        echo(
            "arena submit: --token is shown to every user of this machine (ps); use arena submit --login, "
            "or ARENA_TOKEN",
            err=True,
        )
    try:
        token = token or os.environ.get("ARENA_TOKEN")
        saved = client.saved_login() if not (server and token) else {}
        server = server or saved.get("server")
        if not server:
            raise client.SubmitError("no server: give --server http://HOST:8000 (or set ARENA_SERVER)")
        if login:
            token = token or click.prompt("your token (from your page on the server)", hide_input=True)
            client.check_token(server, token.strip())
            path = client.save_login(server, token.strip())
            echo(f"token kept in {path} (yours alone): arena submit BOT is enough from now on")
            if bot is None:
                return
        token = token or saved.get("token")
        if not token:
            raise client.SubmitError(
                "no token: run arena submit --login (it asks for the token on your page), or set ARENA_TOKEN"
            )
        if bot is None:
            raise click.UsageError("give the BOT to send (a source file or a bot folder)")
        _submit(client, server, token.strip(), bot, wait)
    except client.SubmitError as e:
        raise click.ClickException(str(e)) from None


def _submit(client: Any, server: str, token: str, bot: Path, wait: bool) -> None:
    answer = client.submit(server, token, bot)
    echo(
        f"version {answer['version']} stored; waiting for its check"
        if wait
        else f"version {answer['version']} stored"
    )
    if not wait:
        return
    status = client.wait(server, token, int(answer["id"]))
    for item in status.get("items", []):
        echo(f"  {item.get('status', ''):4} {item.get('name', '')}: {item.get('summary', '')}")
    echo(status.get("verdict") or f"version {status.get('version')}: {status.get('status')}")
    if status.get("status") != "passed":
        raise SystemExit(1)
