"""HD598 env.os_limits: The job failed of an operating-system limit (file size, open files,
processes). The fallback for a failed job whose exception names that mechanism (see
rules/_failure.py)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules._failure import check_failure, failed_with
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category

SITE = "/usr/lib/python3.11/site-packages"


class OsLimitFailure(Rule):
    """The job failed of an operating-system limit (file size, open files, processes): every failed
    report names the failure."""

    id = "HD598"
    category = Category.ENV_OS_LIMITS
    summary = "the job failed of an operating-system limit (file size, open files, processes)"
    fires_when = (
        "the job failed of an exception an OS limit raises (`[Errno 27] File too large` at "
        "`ulimit -f`, `Too many open files`, `can't start new thread`) and no other rule found an "
        "error: names it and its line in your code"
    )
    reads = "logs"
    fallback = True
    specificity = 5
    names_culprit = False
    fires_on = (
        Example("a checkpoint larger than ulimit -f", lambda: failed_with(
            "OSError: [Errno 27] File too large",
            ("/home/ml/train.py", 50, "<module>", "save(model)"),
            ("/home/ml/train.py", 20, "save", "torch.save(model.state_dict(), path)"),
            (f"{SITE}/torch/serialization.py", 652, "save", "_save(obj, f)"))),
    )
    quiet_on = (
        Example("another failure", lambda: failed_with(
            "KeyError: 'lr'", ("/home/ml/train.py", 5, "<module>", "cfg['lr']"))),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        return check_failure(job, self.id, self.category)
