"""HD197 process.exception: the job failed of an exception its own code raised (a bug, a bad
record, a wrong argument to a library), named at its origin, through whatever re-raised it."""

from __future__ import annotations

from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.taxonomy import Category


class ExceptionFailure(FailureRule):
    """the job failed of an exception raised by its own code, named at its origin

    Fires when: the job failed (`run` saw it exit non-zero, or its log ends in a traceback nobody
    caught) of an exception that no more specific category explains: names the original exception
    (unwrapped from a DataLoader worker's `Original Traceback`, a Pool's or executor's remote
    traceback, mp.spawn, Ray, a chain), its line in your code, the library call made there, the
    process, thread and rank; what a known error means and its fix

    Why: A failed job's answer is in its output, but frameworks bury it: a DataLoader re-raises a
    worker's error in the main loop, a Pool or a Ray task re-raises it in the caller, a launcher
    adds its own summary, and each rank that lost its peer adds another traceback. The exception
    that started it, at the line of your code that raised it, is what to fix; the others are the
    path it took.

    Instead: Fix the line named with the input it had: reproduce it in one process (`num_workers=0`,
    one rank, no pool) with the same record or argument, then repair the data or the code.
    """

    id = "HD197"
    category = Category.PROCESS_EXCEPTION
    specificity = 10
