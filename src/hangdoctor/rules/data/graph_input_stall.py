"""HD208 data.pipeline_stall: a TensorFlow step that takes its batch from a tf.data iterator
inside its graph (Keras's fit, evaluate and predict; a custom `step(iterator)`) waits in
TensorFlow's runtime with no step done: the pipeline gives no next element."""

from __future__ import annotations

import json
from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.roles import world_size_of
from hangdoctor.analysis.tf_steps import GraphInput, graph_input, runs_pipeline_python
from hangdoctor.evidence.model import ProcessEvidence, ProgressStatus, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of
from hangdoctor.taxonomy import Category

#: A process that used this share of a CPU over the capture runs its pipeline (a pipeline that
#: drops every element); below it, the pipeline's source waits.
_BUSY_SHARE = 0.5


def _alone(job: JobView, process: ProcessEvidence, status: ProgressStatus | None) -> bool:
    """Whether the step has no peer process to wait for: in a multi-worker job an idle step
    also waits in its collectives (the distributed rules compare the workers)."""
    if status is not None and (status.world_size or 1) > 1:
        return False
    if (world_size_of(process) or 1) > 1 or _tf_config_tasks(process.environ.get("TF_CONFIG")) > 1:
        return False
    ranks = {job.rank(p.pid) for p in job.processes} - {None}
    return len(ranks) <= 1


def _tf_config_tasks(text: str | None) -> int:
    """How many tasks a TensorFlow cluster (TF_CONFIG) has: a worker of one with more waits in
    its step's collectives too (0 when there is none or it cannot be read)."""
    try:
        cluster = json.loads(text).get("cluster") or {} if text else {}
        return sum(len(tasks) for tasks in cluster.values() if isinstance(tasks, list))
    except (ValueError, AttributeError):
        return 0


def _pipeline_python_seen(process: ProcessEvidence) -> bool:
    """Whether a thread of the process runs the pipeline's Python (a generator, a
    `py_function`): the pipeline's wait is then on that thread's stack, not hidden in the
    runtime, and the waits it is in say what the step waits for."""
    return any(runs_pipeline_python(frames_of(t)) for t in process.threads)


class GraphInputStall(Rule):
    """a TensorFlow step waits inside its graph for a tf.data element that never comes

    Fires when: a thread waits in TensorFlow's runtime running a step that was handed a tf.data
    iterator (Keras's `fit`, `evaluate`, `predict`, or a custom `step(iterator)`), the process
    has no peer whose collectives it could wait for (no other rank, no TF_CONFIG cluster), is
    not compiling, and no thread of it runs the pipeline's Python (a generator or `py_function`,
    whose own wait would show)

    Why: Keras and custom distributed loops call `next()` on the dataset's iterator inside the
    step's graph, so Python shows only the step's call while TensorFlow's runtime waits for the
    pipeline. A pipeline that never yields (a `filter` or `ignore_errors()` that drops every
    element after a `repeat()`, a source file or socket that does not answer, an empty shard
    repeated for ever) stops the job without an error; the CPU stays busy when the pipeline
    keeps reading and dropping.

    Instead: Take one element of the dataset eagerly with a timeout before `fit`
    (`next(iter(dataset.take(1)))`) and look at what drops elements: `filter`, `ignore_errors()`
    and `repeat()` together, parse functions that fail on every record, sources that block.
    """

    id = "HD208"
    category = Category.DATA_PIPELINE_STALL
    reads = "capture"
    specificity = 60

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            status = job.progress_of(process.pid)
            if status is not None and status.compiling:
                continue  # compiling (XLA's first call): the runtime is busy with that
            if not _alone(job, process, status) or _pipeline_python_seen(process):
                continue
            for thread in process.threads:
                found = graph_input(frames_of(thread))
                if found is not None and not (thread.kernel and thread.kernel.state == "R"):
                    yield self._finding(job, process, thread, found, status)

    def _finding(
        self,
        job: JobView,
        process: ProcessEvidence,
        thread: ThreadEvidence,
        found: GraphInput,
        status: ProgressStatus | None,
    ) -> Finding:
        where = blame_frame(frames_of(thread))
        data = _which_data(found)
        share = job.process_cpu_share(process.pid)
        busy = share is not None and share >= _BUSY_SHARE
        evidence = [
            _(
                "{thread} waits in TensorFlow's runtime (quick_execute) for a step called with a "
                "tf.data {iterator}",
                thread=thread_label(thread),
                iterator=found.iterator,
            )
        ]
        if share is not None:
            evidence.append(
                _("the process used {share:.0%} of a CPU during the capture", share=share)
            )
        if status is not None and status.steps:
            evidence.append(_("{steps} steps were counted before this one", steps=status.steps))
        how = (
            _(
                "The process keeps a CPU busy with no step done: either the pipeline runs but "
                "yields nothing (a filter or ignore_errors() that drops every element, a repeat() "
                "of elements that are all dropped), or the step itself computes for this long."
            )
            if busy
            else _(
                "The process is idle: the pipeline's source waits (a file, socket or generator "
                "that does not answer)."
            )
        )
        return self.finding(
            confidence=Confidence.FAIR,
            title=_(
                "The step at {where} waits inside its graph for the next element of {data}",
                where=at(where),
                data=data,
            ),
            explanation=_(
                "The step's graph takes its batch from the tf.data iterator itself, so Python "
                "shows only the step's call while TensorFlow's runtime waits for the pipeline. "
                "{how}",
                how=how,
            ),
            culprit=culprit(job, process, thread, where),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Take one element of {data} eagerly before fit, with a timeout: "
                    "`next(iter(dataset.take(1)))`; if it never comes, the pipeline is the culprit.",
                    data=data,
                ),
                _(
                    "Look at what drops or waits in that pipeline: `filter`, `ignore_errors()` "
                    "after `repeat()` (an epoch of bad records never ends), a parse function "
                    "that fails on every record, a source that blocks."
                ),
                _("`hangdoctor dump PID --native` shows where TensorFlow's runtime waits."),
            ),
        )


def _which_data(found: GraphInput) -> str:
    if found.keras_loop == "evaluate" and found.in_fit:
        return _("the validation data")
    if found.keras_loop == "evaluate":
        return _("the evaluation data")
    if found.keras_loop == "predict":
        return _("the prediction data")
    if found.keras_loop == "fit":
        return _("the training data")
    return _("its tf.data pipeline")
