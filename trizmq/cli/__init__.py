"""The ``trizmq`` command line: ``send``, ``recv``, ``proxy``, ``monitor``, ``top``, ``keygen``,
``bench``.

:func:`main` is the console script. It runs click without its standalone mode so
that every error, a usage mistake included, is ONE line on stderr
(``trizmq send: error: ...``) with a non-zero exit status: 2 for a usage mistake,
1 for anything else that went wrong, 128 + N after signal N (130 for Ctrl-C).
See docs/cli.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

import trizmq

from ._common import CliError
from .bench import bench
from .keygen import keygen
from .messages import recv, send
from .monitor import monitor
from .proxy import proxy
from .top import top

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(trizmq.__version__, prog_name="trizmq")
def cli() -> None:
    """ZeroMQ from the shell, in pure Python (trizmq).

    \b
    Examples:
      trizmq recv -t pull -b tcp://*:5557
      echo hello | trizmq send -t push -c tcp://127.0.0.1:5557
      trizmq proxy -m streamer tcp://*:5557 tcp://*:5558
    """


for _command in (send, recv, proxy, monitor, top, keygen, bench):
    cli.add_command(_command)


def _fail(prefix: str, message: str, code: int) -> None:
    click.echo(f"{prefix}: error: {message}", err=True)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and exit."""
    prefix = "trizmq"
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        # the help, as help (not folded into one error line), and a usage status
        with click.Context(cli, info_name="trizmq") as ctx:
            click.echo(cli.get_help(ctx))
        sys.exit(2)
    if args[0] in cli.commands:
        prefix = f"trizmq {args[0]}"
    try:
        code = cli.main(args=args, prog_name="trizmq", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        # Ctrl-C anywhere (start-up, bench) ends the command quietly: 128 + SIGINT
        click.echo("", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        message = " ".join(exc.format_message().split())
        if isinstance(exc, click.UsageError):
            message += f" (see `{prefix} --help`)"
        _fail(prefix, message, exc.exit_code)
    except CliError as exc:
        _fail(prefix, " ".join(str(exc).split()), exc.code)
    sys.exit(code if isinstance(code, int) else 0)
