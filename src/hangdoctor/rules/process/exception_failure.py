"""HD197 process.exception: the job failed of an exception its own code raised (a bug, a bad
record, a wrong argument to a library), named at its origin, through whatever re-raised it."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules._failure import check_failure, failed_with, logged_failure, traceback_lines
from hangdoctor.rules._job_examples import failed_job
from hangdoctor.rules._log_examples import logs_bundle
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category

_SITE = "/usr/lib/python3/site-packages"
_WORKER = (
    "KeyError: Caught KeyError in DataLoader worker process 1.",
    "Original Traceback (most recent call last):",
    f'  File "{_SITE}/torch/utils/data/_utils/worker.py", line 349, in _worker_loop',
    "    data = fetcher.fetch(index)",
    '  File "/home/ml/train.py", line 14, in __getitem__',
    '    return self.rows[index]["label"]',
    "KeyError: 'label'",
)


class ExceptionFailure(Rule):
    id = "HD197"
    category = Category.PROCESS_EXCEPTION
    summary = "the job failed of an exception raised by its own code, named at its origin"
    fires_when = (
        "the job failed (`run` saw it exit non-zero, or its log ends in a traceback nobody "
        "caught) of an exception that no more specific category explains: names the original "
        "exception (unwrapped from a DataLoader worker's `Original Traceback`, a Pool's or "
        "executor's remote traceback, mp.spawn, Ray, a chain), its line in your code, the "
        "library call made there, the process, thread and rank; what a known error means and "
        "its fix"
    )
    why = (
        "A failed job's answer is in its output, but frameworks bury it: a DataLoader re-raises a "
        "worker's error in the main loop, a Pool or a Ray task re-raises it in the caller, a "
        "launcher adds its own summary, and each rank that lost its peer adds another traceback. "
        "The exception that started it, at the line of your code that raised it, is what to fix; "
        "the others are the path it took."
    )
    instead = (
        "Fix the line named with the input it had: reproduce it in one process (`num_workers=0`, "
        "one rank, no pool) with the same record or argument, then repair the data or the code."
    )
    reads = "logs"
    fallback = True
    specificity = 10
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
            "the log of a job that died of a ValueError",
            lambda: logged_failure(
                "ValueError: labels must be in [0, 10)",
                ("/home/ml/train.py", 40, "<module>", "main()"),
                ("/home/ml/train.py", 31, "main", "check(labels)"),
            ),
        ),
        Example(
            "a DataLoader worker's KeyError, re-raised in the main loop",
            lambda: failed_job(
                (
                    *traceback_lines(
                        _WORKER[0],
                        ("/home/ml/train.py", 30, "<module>", "for batch in loader:"),
                    ),
                    *_WORKER[1:],
                ),
                exit_code=1,
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
