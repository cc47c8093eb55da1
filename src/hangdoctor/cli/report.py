"""`hangdoctor report DIR [--html]`: show a saved report again, or write its report.html (and
report.md) anew, e.g. for a report directory written before report.html existed.

The sentences of a report are in the language it was written in; asked for another one, the
evidence beside it is diagnosed again so that they come in that language. Without the evidence
the saved sentences are all there is."""

from __future__ import annotations

from pathlib import Path

import click

from hangdoctor.cli.language import language_option
from hangdoctor.cli.output import show
from hangdoctor.cli.saved_report import REPORT_FILE, SavedReport, read_saved_report, rediagnose
from hangdoctor.errors import BadInputError, ExitCode, HangdoctorError
from hangdoctor.evidence.model import Bundle
from hangdoctor.evidence.store import load_bundle
from hangdoctor.i18n import _, active_language
from hangdoctor.report.directory import write_readable
from hangdoctor.report.model import Report


class PageNotWritten(HangdoctorError):
    """report.html could not be made (a bug: the warning before says what went wrong)."""

    exit_code = ExitCode.INTERNAL


def _saved(directory: Path) -> SavedReport:
    """The report saved in `directory` (or the report.json given itself)."""
    if not directory.exists():
        raise BadInputError(_("{path} does not exist", path=str(directory)))
    if directory.is_file() and directory.name == REPORT_FILE:
        directory = directory.parent
    if not directory.is_dir():
        raise BadInputError(
            _("{path} is not a report directory", path=str(directory)),
            help=_("give a directory written by `hangdoctor run`, `dump` or `analyze`"),
        )
    if not (directory / REPORT_FILE).is_file():
        raise BadInputError(
            _("{path} holds no report.json", path=str(directory)),
            help=_("give a directory written by `hangdoctor run`, `dump` or `analyze`"),
        )
    return read_saved_report(directory / REPORT_FILE)


def _evidence(saved: SavedReport) -> Bundle | None:
    """The evidence beside the report; an unreadable one is said, and left out."""
    if saved.evidence is None:
        return None
    try:
        return load_bundle(saved.evidence)
    except BadInputError as error:
        click.echo(
            _(
                "hangdoctor: warning: {problem}; the report is shown without it",
                problem=error.message,
            ),
            err=True,
        )
        return None


def _in_language(saved: SavedReport, bundle: Bundle | None) -> Report:
    """The saved report, its sentences in the language in force where the evidence allows."""
    report = saved.report
    language = active_language()
    if report.language == language:
        return report
    if bundle is None:
        click.echo(
            _(
                "hangdoctor: warning: the report's sentences stay in {saved}: without its "
                "evidence.json they cannot be given in {wanted}",
                saved=report.language,
                wanted=language,
            ),
            err=True,
        )
        return report
    again = rediagnose(saved, None, bundle)
    # Only the sentences are new: how the job ended is what the saved report says.
    kept = ("verdict", "exit_code", "hang", "capture", "artifacts", "command")
    return again.model_copy(update={name: getattr(report, name) for name in kept})


@click.command("report")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--html",
    "write_html",
    is_flag=True,
    help="Write report.html (and report.md) in DIR anew and print report.html's path.",
)
@language_option
def report_command(directory: Path, write_html: bool) -> int:
    """Show the report saved in DIR, or write its report.html anew.

    DIR is a report directory written by `run`, `dump` or `analyze`. Without --html the
    terminal summary is printed. With --lang other than the report's own language, the
    evidence in DIR is diagnosed again so that the report comes in that language.

    \b
    Exit codes:
      0  shown, or written
      2  DIR is missing, or holds no report hangdoctor can read
    """
    saved = _saved(directory)
    folder = saved.path.parent
    bundle = _evidence(saved)
    report = _in_language(saved, bundle)
    if not write_html:
        show(report, as_json=False, report_dir=None)
        return int(ExitCode.OK)
    try:
        page = write_readable(folder, report, bundle)
    except OSError as error:
        raise BadInputError(
            _(
                "cannot write to {path}: {problem}",
                path=str(folder),
                problem=error.strerror or error,
            )
        ) from error
    if page is None:
        raise PageNotWritten(_("report.html could not be written"))
    click.echo(str(page))
    return int(ExitCode.OK)
