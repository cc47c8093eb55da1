"""What the rules for failures named by the knowledge base share: a failed job whose exception
a known error puts in a category that has no failure rule of its own (a DataLoader worker's
death, a rendezvous timeout, a library mismatch...) is named by the rule of that category,
with what the error means and its fix. Each category's rule is a subclass in its family's
folder; its examples are the knowledge base's own real messages."""

from __future__ import annotations

from hangdoctor import __version__
from hangdoctor.evidence.model import Bundle, JobRecord
from hangdoctor.knowledge.errors import known_errors
from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.rules.examples import Example
from hangdoctor.taxonomy import Category

_USER_FRAME = ("/home/ml/train.py", 42, "<module>", "main()")


def failed_job(output: tuple[str, ...], exit_code: int = 1) -> Bundle:
    """A job that `run` saw end with `exit_code` after printing `output`."""
    record = JobRecord(
        command=("python", "train.py"),
        started_at=0.0,
        ended_at=60.0,
        exit_code=exit_code,
        output_tail=output,
    )
    return Bundle(tool_version=__version__, created_at=0.0, target_pid=1, job=record)


def failed_with(error: str, *frames: tuple[str, int, str, str]) -> Bundle:
    """A job that failed after printing this traceback (outermost frame first)."""
    lines = ["Traceback (most recent call last):"]
    for file, line, function, code in frames:
        lines += [f'  File "{file}", line {line}, in {function}', f"    {code}"]
    return failed_job((*lines, error))


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


class KnownErrorFailure(FailureRule):
    """The fallback rule of one category for failures the knowledge base files under it; it
    fires on the knowledge base's own messages of its category."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.fires_on = examples_of(cls.category)

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
