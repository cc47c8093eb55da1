"""The rule of one failure category: a fallback whose check names the job's failure when its
exception falls in that category (rules/_failure.py). Each category's rule is a subclass in its
family's folder, which says only what it names and why."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules._failure import check_failure
from hangdoctor.rules.base import Rule
from hangdoctor.rules.finding import Finding

#: The failure rules that name a job's exception at its origin, in the exception's category:
#: every fallback over a failed job but HD198, which names a failure without a traceback.
EXCEPTION_FAILURE_RULES = frozenset(
    {
        "HD197",
        "HD297",
        "HD298",
        "HD394",
        "HD395",
        "HD396",
        "HD397",
        "HD497",
        "HD498",
        "HD596",
        "HD597",
        "HD598",
        "HD651",
        "HD698",
    }
)


class FailureRule(Rule):
    """The fallback rule of one category for failed jobs whose exception it names."""

    reads = "logs"
    fallback = True
    specificity = 5
    names_culprit = False

    def check(self, job: JobView) -> Iterable[Finding]:
        return check_failure(job, self.id, self.category)
