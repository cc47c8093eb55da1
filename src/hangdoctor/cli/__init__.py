"""The `hangdoctor` command. `main` is the one place that turns errors into messages and exit
codes: a user never sees a traceback unless HANGDOCTOR_DEBUG=1 asks for one."""

from __future__ import annotations

import importlib
import os
import sys
import traceback

import click

from hangdoctor import __version__
from hangdoctor.errors import ExitCode, HangdoctorError
from hangdoctor.i18n import _

#: Each subcommand lives in its own module, imported only when used: `run` must start the
#: job without first paying for the capture, rules and report machinery.
COMMANDS = {
    "run": "hangdoctor.cli.run:run_command",
    "dump": "hangdoctor.cli.dump:dump_command",
    "analyze": "hangdoctor.cli.analyze:analyze_command",
    "report": "hangdoctor.cli.report:report_command",
    "doctor": "hangdoctor.cli.doctor:doctor_command",
    "lint": "hangdoctor.cli.lint:lint_command",
    "explain": "hangdoctor.cli.explain:explain_command",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, _colon, attribute = COMMANDS[name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{COMMANDS[name]} is not a click command")
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="hangdoctor")
def cli() -> None:
    """Find out why a deep-learning training job is stuck, and what to do about it."""


def _error(message: str, help: str | None = None) -> None:
    click.echo(_("hangdoctor: error: {message}", message=message), err=True)
    if help:
        click.echo(_("hangdoctor: hint: {help}", help=help), err=True)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        result = cli.main(args=argv, prog_name="hangdoctor", standalone_mode=False)
    except HangdoctorError as error:
        _error(error.message, error.help)
        return int(error.exit_code)
    except click.exceptions.Abort:
        _error(_("interrupted"))
        return int(ExitCode.INTERRUPTED)
    except click.ClickException as error:
        if isinstance(error, click.UsageError) and error.ctx is not None:
            click.echo(error.ctx.get_usage(), err=True)
        _error(error.format_message())
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        _error(_("interrupted"))
        return int(ExitCode.INTERRUPTED)
    except Exception as error:
        if os.environ.get("HANGDOCTOR_DEBUG"):
            traceback.print_exc()
        _error(
            _(
                "internal error: {error_type}: {error} (set HANGDOCTOR_DEBUG=1 for the "
                "traceback, and please report it)",
                error_type=type(error).__name__,
                error=error,
            )
        )
        return int(ExitCode.INTERNAL)
    if isinstance(result, int):
        return result
    return 0


if __name__ == "__main__":
    sys.exit(main())
