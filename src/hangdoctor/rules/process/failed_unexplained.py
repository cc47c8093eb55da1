"""HD198 process.unexplained: The job failed and no specific rule explains why; the exception it
failed of. The fallback for a failed job whose exception names that mechanism (see
rules/_failure.py)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules._failure import check_failure, failed_with, logged_failure, traceback_lines
from hangdoctor.rules._job_examples import failed_job
from hangdoctor.rules._log_examples import logs_bundle
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category


class FailedUnexplained(Rule):
    id = "HD198"
    category = Category.PROCESS_UNEXPLAINED
    summary = "the job failed and no specific rule explains why; the exception it failed of"
    fires_when = (
        "the job failed (`run` saw it exit non-zero, or its log ends in a traceback nobody "
        "caught) and no other rule found an error: names the first exception of its own, its line "
        "in your code, the library call made there and the rank; without a traceback, the exit "
        "status and the last lines of output"
    )
    why = (
        "When no rule recognises the mechanism of a failure, the job's first exception, the line "
        "of your code that raised it and the rank it happened on are still what its owner needs: "
        "the later errors of other ranks and the launcher's summary are consequences. A report "
        "that only says the job failed sends the owner reading logs by hand."
    )
    instead = (
        "Start from the exception named here: read its line in your code and the library call made "
        "there, reproduce it on one rank (or one process) with the same input, and fix it there; "
        "the other ranks' errors follow from it."
    )
    reads = "logs"
    fallback = True
    specificity = 0
    names_culprit = False
    fires_on = (
        Example(
            "a script dies of FileNotFoundError",
            lambda: failed_with(
                "FileNotFoundError: [Errno 2] No such file or directory: '/data/train.csv'",
                ("/home/ml/train.py", 12, "<module>", "rows = open('/data/train.csv').read()"),
            ),
        ),
        Example(
            "a job that failed without a traceback",
            lambda: failed_job(("step 10", "step 11"), exit_code=3),
        ),
        Example(
            "the log of a job that died of a ValueError",
            lambda: logged_failure(
                "ValueError: labels must be in [0, 10)",
                ("/home/ml/train.py", 40, "<module>", "main()"),
                ("/home/ml/train.py", 31, "main", "check(labels)"),
            ),
        ),
    )
    quiet_on = (
        Example("a job that completed", lambda: failed_job(("done",), exit_code=0)),
        Example(
            "a log with a traceback that was caught and logged",
            lambda: logs_bundle(
                traceback_lines(
                    "ValueError: bad row", ("/home/ml/train.py", 31, "load", "parse(row)")
                )
            ),
        ),
        Example(
            "a failure of a known mechanism (another rule names it)",
            lambda: failed_with(
                "OSError: [Errno 27] File too large",
                ("/home/ml/train.py", 50, "<module>", "f.write(blob)"),
            ),
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        return check_failure(job, self.id, self.category)
