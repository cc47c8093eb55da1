"""HD404 gpu.device_fault: a CUDA kernel faulted (device-side assert, illegal memory access):
the application's fault, the GPU itself is healthy; names the line from the traceback."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.analysis.tracebacks import tracebacks
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import cite, output_lines, raised_words
from hangdoctor.taxonomy import Category


class CudaKernelError(LogKindsRule):
    """a CUDA kernel faulted (device-side assert, illegal memory access)

    Fires when: `CUDA error: device-side assert triggered`, `an illegal memory access was
    encountered`, `misaligned address`, `unspecified launch failure`; with the line the traceback
    names

    Why: A kernel that hits a device-side assert or touches memory it must not (usually an index out
    of range: a label >= the number of classes, an embedding index >= its size) puts the CUDA
    context in an error state: the process cannot use the GPU again and must restart. CUDA reports
    the error asynchronously, so the line named may be a later call than the culprit; the GPU itself
    is healthy.

    Instead: Rerun with `CUDA_LAUNCH_BLOCKING=1` so the error is raised at the kernel that failed,
    or run the step on the CPU for a clear `IndexError`; check value ranges going into losses and
    embeddings; run custom kernels under `compute-sanitizer --tool memcheck`.
    """

    id = "HD404"
    category = Category.GPU_DEVICE_FAULT
    specificity = 80
    kinds = (LogKind.CUDA_KERNEL_ERROR,)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        fields = found[0].fields
        what = fields["message"] if "message" in fields else _("a CUDA error")
        raised = next((r for r in tracebacks(output_lines(job)) if "CUDA error" in r.message), None)
        evidence = cite(found, limit=2)
        if raised is not None:
            evidence.insert(0, _("raised {raised}", raised=raised_words(raised)))
        yield self.finding(
            confidence=Confidence.STRONG,
            title=_("A CUDA kernel faulted: {what}", what=what),
            explanation=_(
                "A kernel hit an assert or touched memory it must not (an index out of "
                "range is the usual cause: a label >= the number of classes, an "
                "embedding index >= its size). The GPU itself is fine. CUDA reports the "
                "error asynchronously, so the line may be a later call than the "
                "culprit."
            ),
            culprit=Culprit(rank=raised.rank, location=Location.of(raised.location))
            if raised is not None
            else None,
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Rerun with CUDA_LAUNCH_BLOCKING=1 so the error is raised at the very "
                    "kernel that failed; or run the step on the CPU, where the same bug raises a "
                    "clear IndexError."
                ),
                _(
                    "Check value ranges going into losses and embeddings (labels in "
                    "[0, num_classes), indices below the table size)."
                ),
                _("For custom kernels: `compute-sanitizer --tool memcheck python train.py`."),
            ),
        )
