"""Printing a report on the terminal or as JSON: shared by dump and analyze."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console

from hangdoctor.errors import BadInputError
from hangdoctor.private_files import make_dir, write_text
from hangdoctor.report.model import Report
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_terminal import render_terminal


def show(report: Report, as_json: bool, report_dir: Path | None) -> None:
    """Print the JSON report on stdout, or the terminal summary."""
    if as_json:
        sys.stdout.write(render_json(report))
        return
    console = Console(highlight=False, soft_wrap=False)
    render_terminal(report, console, str(report_dir) if report_dir else None)


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
            f"cannot write the report to {directory}: {error.strerror or error}",
            help="choose another folder with --report-dir",
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
            f"{problem}, nor to a temporary folder ({error.strerror or error})",
            help="choose another folder with --report-dir",
        ) from error
    click.echo(f"hangdoctor: warning: {problem}; writing it to {fallback} instead", err=True)
    return fallback
