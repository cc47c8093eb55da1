"""HD198 process.unexplained: The job failed without a Python traceback: its exit status and
last lines of output. (A failure with a traceback is named at its origin by HD197 or the rule of
its exception's category; see rules/_failure.py.)"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules._failure import check_failure, failed_with
from hangdoctor.rules._job_examples import failed_job
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category


class FailedUnexplained(Rule):
    id = "HD198"
    category = Category.PROCESS_UNEXPLAINED
    summary = "the job failed without a traceback and no specific rule explains why"
    fires_when = (
        "the job failed (`run` saw it exit non-zero) without printing a Python traceback and no "
        "other rule found an error: names its exit status and its last lines of output"
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
            "a job that failed without a traceback",
            lambda: failed_job(("step 10", "step 11"), exit_code=3),
        ),
    )
    quiet_on = (
        Example("a job that completed", lambda: failed_job(("done",), exit_code=0)),
        Example(
            "a job that died of an exception (HD197 names it)",
            lambda: failed_with(
                "ValueError: labels must be in [0, 10)",
                ("/home/ml/train.py", 31, "<module>", "check(labels)"),
            ),
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        return check_failure(job, self.id, self.category)
