"""HD120 process.busy_loop: the job runs a loop of its framework that cannot end by itself, and
its steps are all the job does: Keras evaluating a dataset that repeats for ever with no number
of steps (`validation_steps=None`, or 0, which Keras reads as None). The instrumentation sees
the loop start (`ProgressStatus.endless_loop`) and does not count its batches as progress, so
the job is declared hung once nothing else moves."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, main_thread
from hangdoctor.taxonomy import Category


def _inside_evaluate(thread: ThreadEvidence) -> bool:
    """Whether the thread's stack is in Keras's `evaluate`."""
    return any(
        f.function.split(".")[-1] == "evaluate" and "/keras/" in f.file.replace("\\", "/")
        for f in frames_of(thread)
    )


class EndlessLoop(Rule):
    """the framework runs a loop that has no end: Keras evaluates a dataset that repeats for ever

    Fires when: the job hung while an instrumented process ran a loop of its framework that
    cannot end by itself (Keras's `evaluate`, or `fit`'s validation, over a tf.data dataset of
    infinite cardinality with `steps`/`validation_steps` None or 0)

    Why: Keras runs `evaluate` until its dataset ends unless told how many steps to take. A
    dataset with `.repeat()` never ends, and `validation_steps=0` (what `len(val) // batch_size`
    gives for a small validation set) means "no limit" to Keras, so the validation after the
    first epoch runs for ever: one core busy, batches computed, nothing printed, training never
    resumed.

    Instead: Give the evaluation a number of steps (`validation_steps=max(1, n_val //
    batch_size)`, `evaluate(..., steps=N)`), or do not `.repeat()` the validation dataset
    (Keras then stops at its end).
    """

    id = "HD120"
    category = Category.PROCESS_BUSY_LOOP
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is None or record.hang_declared_s is None:
            return
        for status in record.progress:
            loop = status.endless_loop
            process = job.process(status.pid)
            if loop is None or process is None:
                continue
            thread = main_thread(process)
            where = short_location(loop.site) if loop.site else _("the call that started it")
            yield self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "{what} never ends: {why} (started at {where})",
                    what=loop.what,
                    why=loop.why,
                    where=where,
                ),
                explanation=_(
                    "{process} runs {what}, which can end only when its dataset does, and the "
                    "dataset repeats for ever ({why}). It has run {batches} batches since it "
                    "started; they are not progress, and the training it was called from never "
                    "resumes.",
                    process=job.describe_process(process.pid),
                    what=loop.what,
                    why=loop.why,
                    batches=loop.batches,
                ),
                culprit=culprit(job, process, thread, loop.site),
                evidence=(
                    _(
                        "{process} started {what} at {place}; {batches} batches since, none "
                        "counted as progress",
                        process=job.describe_process(process.pid),
                        what=loop.what,
                        place=at(loop.site),
                        batches=loop.batches,
                    ),
                    *(
                        (_("its {thread} is inside it now", thread=thread_label(thread)),)
                        if thread is not None and _inside_evaluate(thread)
                        else ()
                    ),
                ),
                fixes=(
                    _(
                        "Give the evaluation a number of steps: `validation_steps=max(1, "
                        "n_val // batch_size)` in `fit`, `steps=N` in `evaluate` (0 means no "
                        "limit to Keras)."
                    ),
                    _(
                        "Or do not `.repeat()` the validation dataset: Keras stops at its end "
                        "and starts it again at the next validation."
                    ),
                ),
            )
