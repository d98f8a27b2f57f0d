"""The `arena` command: flags to library calls, nothing more. Every error a user can cause is one line.

The commands live by what they are for (arena/cli/student.py, arena/cli/tournament.py) and the flags they
share in arena/cli/options.py; this module is the group that holds them and the one way arena stops: a
signal or an error, each a line on stderr and an exit status.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

import click

from arena.cli import server, student, tournament
from arena.cli.analyse import analyse_cmd
from arena.cli.options import Printable, echo
from arena.game.openings import BookError
from arena.game.rules import RulesError
from arena.lab import ClusterError
from arena.match.bots import BotError, BuildError
from arena.match.printable import printable
from arena.sandbox import GrantError
from arena.stops import Stop
from arena.store.writer import StoreError

# The heavy parts (the scheduler's multiprocess, pandas and the ratings, jinja2 and the report, the solver)
# are imported inside the commands that use them: `arena --help` and `arena play` start in a blink.


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(package_name="arena")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Arena: Kalah bot tournaments. Bots are programs speaking protocol v1 or the Manchester agents'
    protocol (see protocol.md).

    \b
    Start here:
      arena new mybot            a starter bot to improve, in bots/mybot/
      arena check mybot          does it follow the protocol?
      arena play mybot human     play against it yourself
      arena run --rounds 2       every bot in bots/ against every other;
                                 then open reports/default/index.html
      arena analyse 12           where game 12 was lost, every move marked
    """
    if ctx.invoked_subcommand is None:  # bare `arena`: the help, which is no error
        click.echo(ctx.get_help())


for command in (
    student.new_cmd,
    student.check_cmd,
    student.play,
    tournament.run,
    tournament.sprt_cmd,
    tournament.report_cmd,
    tournament.replay_cmd,
    tournament.export,
    student.solve_cmd,
    analyse_cmd,
    tournament.cluster_certs_cmd,
    server.serve_cmd,
    server.submit_cmd,
):
    cli.add_command(command)


_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _quiet_terminal(signum: int) -> None:
    """The terminal is gone (SIGHUP): what is still printed must not fail the clean-up."""
    if signum == signal.SIGHUP:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            if os.isatty(fd):
                os.dup2(null, fd)
        os.close(null)


def _stop_on_signals() -> Stop:
    """Ctrl-C, `kill PID` and a closed terminal all stop arena as Ctrl-C does: a KeyboardInterrupt that
    unwinds through every clean-up, which ends the bots (one left frozen would stay frozen for good). A
    signal arena was started ignoring is left so (`nohup arena run` goes on)."""
    return Stop(_STOPS, lambda _: KeyboardInterrupt(), repeat=True, on_signal=_quiet_terminal)


# The ratings' small matrices gain nothing from BLAS threads, which fight the games' workers over the cores:
# an adaptive run's decision took ten times longer with them on a loaded machine. Read once, when numpy loads.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main() -> None:
    """Entry point: click errors and our own become one line on stderr and exit status 2."""
    for var in BLAS_THREADS:
        os.environ.setdefault(var, "1")  # before any command imports numpy (bots get their own environment)
    _stop_on_signals()
    warnings = logging.StreamHandler(sys.stderr)
    warnings.setFormatter(Printable("arena: %(levelname)s: %(message)s"))
    log = logging.getLogger("arena")
    log.addHandler(warnings)
    log.propagate = False
    logging.addLevelName(logging.WARNING, "warning")
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        echo("arena: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        hint = ""
        if isinstance(e, click.UsageError) and e.ctx is not None:
            hint = f" (see '{e.ctx.command_path} --help')"
        echo(f"arena: error: {printable(e.format_message())}{hint}", err=True)
        sys.exit(e.exit_code)
    except BuildError as e:  # the bot's fault, not a usage error: the line, then what the compiler said
        echo(f"arena: error: {printable(str(e))}", err=True)
        for line in e.output.splitlines():
            echo(f"    {line}", err=True)
        sys.exit(1)
    except (BotError, BookError, ClusterError, GrantError, RulesError, StoreError) as e:
        echo(f"arena: error: {printable(str(e))}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        echo("arena: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
