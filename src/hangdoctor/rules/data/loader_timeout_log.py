"""HD251 data.pipeline_stall: DataLoader(timeout=N) expired: no batch arrived for N seconds, so a
worker is stuck or too slow."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.rules.log_helpers import cite
from hangdoctor.taxonomy import Category


class DataLoaderTimeout(LogKindsRule):
    """the DataLoader timed out waiting for a batch

    Fires when: `DataLoader timed out after N seconds`

    Why: `DataLoader(timeout=N)` raises when no batch arrives for N seconds: a worker is blocked in
    the dataset (a read without a timeout, a lock copied into it by fork, a deadlocked library) or
    is far slower than the training step. The timeout turned a hang into an error, but the cause is
    still in the worker.

    Instead: See where the workers wait (`hangdoctor run -- python train.py`, or `hangdoctor dump
    PID` while they hang), reproduce with `num_workers=0` for a plain traceback, and give network
    and storage reads in `__getitem__` a timeout and a retry; raise the DataLoader's timeout only if
    batches are legitimately that slow.
    """

    id = "HD251"
    category = Category.DATA_PIPELINE_STALL
    specificity = 75
    kinds = (LogKind.DATALOADER_TIMEOUT,)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        seconds = found[0].fields["seconds"]
        yield self.finding(
            confidence=Confidence.STRONG,
            title=_("The DataLoader waited {seconds} s for a batch and gave up", seconds=seconds),
            explanation=_(
                "No DataLoader worker delivered a batch within the timeout: a worker "
                "is blocked in the dataset (a network or storage read without a "
                "timeout, a lock copied into it by fork, a deadlocked library) or is "
                "far slower than the training step."
            ),
            culprit=Culprit(rank=found[0].number("rank"), role="rank")
            if found[0].number("rank") is not None
            else None,
            evidence=tuple(cite(found)),
            fixes=(
                _(
                    "Capture the workers while they wait: `hangdoctor run -- python train.py` (or "
                    "`hangdoctor dump PID`) shows the line each worker is blocked on."
                ),
                _(
                    "Reproduce in one process with num_workers=0 to see the blocking call in a "
                    "plain traceback."
                ),
                _(
                    "Give network and storage reads in __getitem__ a timeout and a retry; raise "
                    "DataLoader(timeout=...) only if batches are legitimately that slow."
                ),
            ),
        )
