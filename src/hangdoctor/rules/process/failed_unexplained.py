"""HD198 process.unexplained: The job failed without a Python traceback: its exit status and
last lines of output. (A failure with a traceback is named at its origin by HD197 or the rule of
its exception's category; see rules/_failure.py.)"""

from __future__ import annotations

from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.taxonomy import Category


class FailedUnexplained(FailureRule):
    """the job failed without a traceback and no specific rule explains why

    Fires when: the job failed (`run` saw it exit non-zero) without printing a Python traceback and
    no other rule found an error: names its exit status and its last lines of output

    Why: When no rule recognises the mechanism of a failure, the job's first exception, the line of
    your code that raised it and the rank it happened on are still what its owner needs: the later
    errors of other ranks and the launcher's summary are consequences. A report that only says the
    job failed sends the owner reading logs by hand.

    Instead: Start from the exception named here: read its line in your code and the library call
    made there, reproduce it on one rank (or one process) with the same input, and fix it there; the
    other ranks' errors follow from it.
    """

    id = "HD198"
    category = Category.PROCESS_UNEXPLAINED
    specificity = 0
