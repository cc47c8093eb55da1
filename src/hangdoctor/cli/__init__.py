"""The `hangdoctor` command. `main` is the one place that turns errors into messages and exit
codes: a user never sees a traceback unless HANGDOCTOR_DEBUG=1 asks for one."""

from __future__ import annotations

import os
import sys
import traceback

import click

from hangdoctor import __version__
from hangdoctor.cli.analyze import analyze_command
from hangdoctor.cli.dump import dump_command
from hangdoctor.cli.run import run_command
from hangdoctor.errors import ExitCode, HangdoctorError

COMMANDS = (run_command, dump_command, analyze_command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="hangdoctor")
def cli() -> None:
    """Find out why a deep-learning training job is stuck, and what to do about it."""


for _command in COMMANDS:
    cli.add_command(_command)


def _error(message: str, help: str | None = None) -> None:
    click.echo(f"hangdoctor: error: {message}", err=True)
    if help:
        click.echo(f"hangdoctor: hint: {help}", err=True)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        result = cli.main(args=argv, prog_name="hangdoctor", standalone_mode=False)
    except HangdoctorError as error:
        _error(error.message, error.help)
        return int(error.exit_code)
    except click.exceptions.Abort:
        _error("interrupted")
        return 130
    except click.ClickException as error:
        if error.ctx is not None and isinstance(error, click.UsageError):
            click.echo(error.ctx.get_usage(), err=True)
        _error(error.format_message())
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as error:
        if os.environ.get("HANGDOCTOR_DEBUG"):
            traceback.print_exc()
        _error(f"internal error: {type(error).__name__}: {error} (set HANGDOCTOR_DEBUG=1 for "
               "the traceback, and please report it)")
        return int(ExitCode.INTERNAL)
    if isinstance(result, int):
        return result
    return 0


if __name__ == "__main__":
    sys.exit(main())
