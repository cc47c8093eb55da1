"""What the rules for failures named by the knowledge base share: a failed job whose exception
a known error puts in a category that has no failure rule of its own (a DataLoader worker's
death, a rendezvous timeout, a library mismatch...) is named by the rule of that category,
with what the error means and its fix. Each category's rule is a subclass in its family's
folder; its examples are the knowledge base's own real messages."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.knowledge.errors import known_errors
from hangdoctor.rules._failure import check_failure, failed_with
from hangdoctor.rules._job_examples import failed_job
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category

_USER_FRAME = ("/home/ml/train.py", 42, "<module>", "main()")


def examples_of(category: Category, count: int = 2) -> tuple[Example, ...]:
    """Jobs that failed of the first real messages the knowledge base files under
    `category`."""
    messages = [
        (error.id, example)
        for error in known_errors()
        if error.category is category
        for example in error.examples[:1]
    ][:count]
    return tuple(
        Example(
            f"a job that failed of {error_id}",
            lambda message=message: failed_with(message, _USER_FRAME),  # type: ignore[misc]
        )
        for error_id, message in messages
    )


class KnownErrorFailure(Rule):
    """The fallback rule of one category for failures the knowledge base files under it."""

    reads = "logs"
    fallback = True
    specificity = 5
    names_culprit = False
    instead = (
        "Follow the fix given with the error, at the line of your code named: each known "
        "error's entry says what it means and what to change, with a public report or "
        "document that explains it."
    )
    quiet_on = (
        Example("a job that completed", lambda: failed_job(("done",), exit_code=0)),
        Example(
            "a job that failed of an exception of its own code",
            lambda: failed_with("ValueError: labels must be in [0, 10)", _USER_FRAME),
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        return check_failure(job, self.id, self.category)
