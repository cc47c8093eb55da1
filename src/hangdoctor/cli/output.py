"""Printing a report on the terminal or as JSON, and the folder it is written to: shared by
dump and analyze (and the folder's option by run)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from hangdoctor.errors import BadInputError
from hangdoctor.i18n import _
from hangdoctor.private_files import make_dir, write_text
from hangdoctor.report.model import Report
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_terminal import render_terminal, summary_console

F = TypeVar("F", bound=Callable[..., object])

#: `--json` of the commands that print a report (dump, analyze).
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the JSON report instead of the summary."
)


def report_dir_option(help: str) -> Callable[[F], F]:
    """`--report-dir`, the folder a command writes its report to (made if missing, checked
    before any work by `prepare_report_dir`); `help` says what goes there, and where by
    default."""
    return click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), help=help)


def show(report: Report, as_json: bool, report_dir: Path | None) -> None:
    """Print the JSON report on stdout, or the terminal summary."""
    if as_json:
        sys.stdout.write(render_json(report))
        return
    render_terminal(report, summary_console(), str(report_dir) if report_dir else None)


def prepare_report_dir(directory: Path) -> None:
    """Make the report directory before any work is done, so that an unusable one is a
    one-line error at once rather than a lost capture at the end."""
    try:
        make_dir(directory)
        probe = directory / ".hangdoctor-write-test"
        write_text(probe, "")
        probe.unlink()
    except OSError as error:
        raise BadInputError(
            _(
                "cannot write the report to {path}: {error}",
                path=directory,
                error=error.strerror or error,
            ),
            help=_("choose another folder with --report-dir"),
        ) from error


def default_report_dir(directory: Path) -> Path:
    """`directory` made ready, or, where it cannot be written (a read-only working
    directory), a private temporary folder, said on stderr as `run` does: the user did not
    choose the default folder, and a capture must not be lost to it."""
    try:
        prepare_report_dir(directory)
        return directory
    except BadInputError as error:
        problem = error.message
    try:
        fallback = Path(tempfile.mkdtemp(prefix="hangdoctor-"))
    except OSError as error:
        raise BadInputError(
            _(
                "{problem}, nor to a temporary folder ({error})",
                problem=problem,
                error=error.strerror or error,
            ),
            help=_("choose another folder with --report-dir"),
        ) from error
    click.echo(
        _(
            "hangdoctor: warning: {problem}; writing it to {path} instead",
            problem=problem,
            path=fallback,
        ),
        err=True,
    )
    return fallback
