"""HD203 data.pipeline_stall: Not a hang: the job spends most of its time waiting for data."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.taxonomy import Category

_INPUT_BOUND_SHARE = 0.5
_MIN_BATCHES = 20


class InputBound(Rule):
    """the job is input-bound

    Fires when: a healthy job that spends most of its time waiting for batches (input-bound)

    Why: A job that waits for the DataLoader more than it computes is not hung, but its GPUs sit
    idle for most of each step: the input pipeline, not the model, sets the speed of training, and a
    slow enough pipeline looks like a hang to a watchdog.

    Instead: Feed the model faster: more workers (`num_workers`), `pin_memory=True`,
    `persistent_workers=True`, a larger `prefetch_factor`; move expensive decoding or augmentation
    out of `__getitem__`, or cache its result.
    """

    id = "HD203"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    default_severity = Severity.WARNING
    specificity = 10
    names_culprit = True

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is None:
            return
        for status in record.progress:
            elapsed = status.updated_at - record.started_at
            if status.batches < _MIN_BATCHES or elapsed <= 0:
                continue
            share = status.data_wait_s / elapsed
            if share < _INPUT_BOUND_SHARE:
                continue
            who = f"rank {status.rank}" if status.rank is not None else f"pid {status.pid}"
            yield self.finding(
                confidence=Confidence.PROBABLE,
                title=_(
                    "Input-bound: {who} spent {share:.0%} of its time waiting for data",
                    who=who,
                    share=share,
                ),
                explanation=_("The model waits for the DataLoader more than it computes."),
                culprit=Culprit(pid=status.pid, rank=status.rank),
                evidence=(
                    _(
                        "{waited:.1f} s of {elapsed:.1f} s waiting in "
                        "DataLoader.__next__ over {batches} batches",
                        waited=status.data_wait_s,
                        elapsed=elapsed,
                        batches=status.batches,
                    ),
                ),
                fixes=(
                    _(
                        "More DataLoader workers (num_workers), pin_memory=True, "
                        "persistent_workers=True, a larger prefetch_factor."
                    ),
                    _("Move expensive decoding/augmentation out of __getitem__ or cache it."),
                ),
            )
